"""Getting entries to the agents: their hook settings, generated files and the context blocks."""


class NotInstalled(str):
    """A line of what setting up an agent did that says its hooks are not installed (its settings
    file was left alone): `gitmem init` exits non-zero when it returns one."""

"""One error root: the CLI maps every GitmemError to a message and exit code 1."""

from __future__ import annotations


class GitmemError(Exception):
    """Base class for every error gitmem reports to a person."""


class NotARepository(GitmemError):
    pass


class DetectorError(GitmemError):
    """The trust gate's learned detector cannot run: its head is missing or was trained for another
    encoder, or its dependencies (the `writer` extra: numpy, llama-cpp-python) are not installed."""


def escaped(text: str) -> str:
    """`text` for a terminal: line breaks, control and invisible characters shown escaped, never raw."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


class EntryError(GitmemError):
    """A stored entry is unreadable or violates the schema; names file and field."""

    def __init__(self, path: str, field: str | None, message: str) -> None:
        self.path = path
        self.field = field
        self.message = message
        shown = escaped(path)  # a file name can hold line breaks and control characters
        where = f"{shown}: {field}" if field else shown
        super().__init__(f"{where}: {message}")


class AnchorError(GitmemError):
    """An anchor does not resolve to a declaration."""


class UnknownEntry(GitmemError):
    pass

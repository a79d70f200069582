"""The store's stat signature: what the compiled index and the compiled delivery rules are keyed on.

One directory scan and a few stats: name, mtime and size of every entry file, then the config,
then name and size of every pending change (gitmem.store.pending) when the worktree's state
folder is given. Equal signatures mean equal inputs, so a compiled file whose signature matches
is current. Standard library only (os): the delivery hook and the commit hooks compute it.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # no typing import on the hook path
if TYPE_CHECKING:
    from typing import TypeAlias

    # [name, mtime_ns, size] rows. Lists, not tuples: compared with copies loaded from JSON.
    Signature: TypeAlias = list[list[str | int]]

ENTRIES_DIR = os.path.join(".gitmem", "entries")
CONFIG_FILE = os.path.join(".gitmem", "config.yaml")
CONFIG_ROW = "<config>"
PENDING_PREFIX = "<pending>"  # + the pending record's name; its mtime is not kept (0)
# In the worktree's git dir's gitmem/ (machine-local; a linked worktree has its own): the entries
# the gate's learned detector judged and those it objected to, as `gitmem check` or the store's
# gate job last found them (gitmem.judge.safety writes it). The delivery hook loads no model, so
# its compiled rules are keyed on this file and withhold those entries.
VERDICTS_FILE = "gate-verdicts.json"
# Beside it: held while the store is being judged (the gate's job, `gitmem check`). Delivery
# withholds what is not judged yet for those seconds; the kernel drops it when its holder dies.
GATE_LOCK = "gate.lock"


def main_checkout_state(git_dir: str, common_dir: str) -> str | None:
    """The main checkout's state folder (`<common dir>/gitmem`) as a linked worktree sees it;
    None in the main checkout, whose own state folder it is."""
    if os.path.normpath(git_dir) == os.path.normpath(common_dir):
        return None
    return os.path.join(common_dir, "gitmem")


def linked_store(worktree: str) -> str | None:
    """`.gitmem` or `.gitmem/entries` when it is a symbolic link (git checks links out): entries
    are read from the repository's own folder only, never from where a link leads."""
    for folder in (os.path.dirname(ENTRIES_DIR), ENTRIES_DIR):
        if os.path.islink(os.path.join(worktree, folder)):
            return folder.replace(os.sep, "/")
    return None


def store_signature(worktree: str, local_state: str | None = None) -> Signature:
    """Entry files sorted by name (none through a linked folder), the config, then (with
    `local_state`, the worktree's `<git dir>/gitmem`) the pending records in their order."""
    sig: Signature = []
    try:
        if linked_store(worktree):
            raise NotADirectoryError
        with os.scandir(os.path.join(worktree, ENTRIES_DIR)) as it:
            for item in it:
                if item.name.endswith(".yaml") and not item.name.startswith("."):
                    try:  # the link itself: a dangling one is listed (and refused as an entry)
                        st = item.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    sig.append([item.name, st.st_mtime_ns, st.st_size])
    except OSError:
        pass
    sig.sort()
    try:
        st = os.stat(os.path.join(worktree, CONFIG_FILE))
        sig.append([CONFIG_ROW, st.st_mtime_ns, st.st_size])
    except OSError:
        pass
    if local_state:
        folder = os.path.join(local_state, "pending")  # gitmem.store.pending.PENDING_DIR
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".json") and not n.startswith("."))
        except OSError:
            names = []
        for name in names:
            try:
                sig.append([PENDING_PREFIX + name, 0, os.stat(os.path.join(folder, name)).st_size])
            except OSError:
                continue
    return sig


def committed_part(sig: Signature) -> Signature:
    """The rows of the committed store (entry files and config), without pending changes."""
    return [row for row in sig if not str(row[0]).startswith(PENDING_PREFIX)]

"""Where the machine's writer keeps its state, and whether a writer runs there.

Standard library only: the capture hook and the store gate's job ask this without loading the
writer (gitmem.writer.daemon), which imports much more.
"""

from __future__ import annotations

import os

from gitmem.base import fastjson, files

TYPE_CHECKING = False  # no typing import on the hook path
if TYPE_CHECKING:
    from typing import Any

LOCK_FILE = "daemon.lock"  # held by the running writer for its whole life
STATUS_FILE = "daemon.json"  # what the writer last said about itself (and, in each repository, about it)


def machine_dir() -> str:
    """The machine's writer state: `$XDG_STATE_HOME/gitmem/writer` (default ~/.local/state/...)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "gitmem", "writer")


def path(name: str) -> str:
    return os.path.join(machine_dir(), name)


def is_running() -> bool:
    """True while some process holds the writer's lock (a dead writer holds nothing)."""
    return files.is_locked(path(LOCK_FILE))


def read(file: str) -> dict[str, Any]:
    """A JSON object file; {} when missing or not an object."""
    data = fastjson.read_file(file)
    return data if isinstance(data, dict) else {}


def writer_status() -> dict[str, Any]:
    return read(path(STATUS_FILE))

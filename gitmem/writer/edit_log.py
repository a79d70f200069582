"""The edit-event log: which files each session's agent modified, and when.

Written by the capture hook on PostToolUse (`.git/gitmem/events/<session>.jsonl`), read by the
writer, so the files a turn modified come from gitmem's own log, not the agent's account.
Standard library only: it runs on the hook path.
"""

from __future__ import annotations

import os
import time

from gitmem.base import fastjson, files
from gitmem.writer import queue

TYPE_CHECKING = False  # no typing import on the hook path
if TYPE_CHECKING:
    from typing import Any

EVENTS_DIR = "events"


def append(repo: Any, session: str, tool: str, rel: str) -> None:
    """Log one edit of `rel` (repository-relative) by `tool` in `session`."""
    record = {"session": session, "tool": tool, "path": rel, "time": time.time()}
    files.append_line(events_path(repo, session), fastjson.dumps_utf8(record))


def events_path(repo: Any, session: str) -> str:
    return os.path.join(os.fspath(repo.state), EVENTS_DIR, f"{queue.session_key(session)}.jsonl")


def files_modified(repo: Any, session: str, start: float | None, end: float | None) -> tuple[str, ...]:
    """Paths the session edited with `start <= time < end` (None = open), first edit first."""
    seen: dict[str, None] = {}
    for record in fastjson.read_rows(events_path(repo, session)):
        if record.get("session") != session:
            continue
        at = record.get("time")
        rel = record.get("path")
        if not isinstance(at, (int, float)) or not isinstance(rel, str):
            continue
        if (start is None or at >= start) and (end is None or at < end):
            seen.setdefault(rel, None)
    return tuple(seen)

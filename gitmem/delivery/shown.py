"""What each Claude Code session already has in context, under .git/gitmem/sessions/.

One small JSON file per session id: the entries delivered as active facts and the entries
announced as withdrawn since the context was last emptied. Within one session nothing is
delivered twice; SessionStart with source startup, clear or compact empties the record
(the context no longer holds what was delivered), resume keeps it (the resumed transcript
still does). Claude Code may run hooks for parallel tool calls at the same time, so a record
is read, decided on and written under an exclusive lock.

Stdlib only: imported by the hook on every call.
"""

from __future__ import annotations

import os
import sys
import time

from gitmem.base import fastjson, files

TYPE_CHECKING = False  # no typing import on the hook path
if TYPE_CHECKING:
    from typing import NotRequired, TypedDict, TypeGuard

    class SessionRecord(TypedDict):
        delivered: dict[str, str]  # entry id -> the event it was delivered on
        retracted: dict[str, str]  # entry id -> the event its withdrawal was announced on
        resets: NotRequired[int]  # times the context was emptied
        known: NotRequired[list[str]]  # every entry for session start offered to it, shown or not
        owed: NotRequired[list[str]]  # session-start entries the message's size cut: the next moment brings them
        owed_retractions: NotRequired[list[str]]  # and the withdrawals it cut: the next moments announce them
        versions: NotRequired[dict[str, str]]  # entry id -> its version when delivered (delivery.rules.version)
        # Gemini CLI: what GEMINI.md gave the session as it started (known, delivered, versions); it
        # stays in its context through compression, as the entries delivered since do not
        gemini_md: NotRequired[dict[str, object]]
        # the session-start block the session began with (kept through compaction; its subagents get it too)
        block: NotRequired[list[str]]

SESSIONS_DIR = "sessions"
MAX_AGE_DAYS = 30
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def record_path(state_dir: str, session_id: object) -> str:
    name = "".join(c if c in _SAFE else "_" for c in str(session_id or "unknown")[:120]).lstrip(".") or "unknown"
    return os.path.join(state_dir, SESSIONS_DIR, name + ".json")


def empty() -> SessionRecord:
    return {"delivered": {}, "retracted": {}, "resets": 0}


class Locked:
    """`with Locked(state, sid) as record:` read the record under a lock; `save()` writes it back."""

    __slots__ = ("fd", "path", "record")

    def __init__(self, state_dir: str, session_id: object) -> None:
        self.path = record_path(state_dir, session_id)
        self.fd = -1
        self.record = empty()

    def __enter__(self) -> Locked:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        files.lock(self.fd)
        raw = b""
        while chunk := os.read(self.fd, 65536):
            raw += chunk
        try:
            data = fastjson.loads(raw) if raw else None
        except ValueError:
            data = None  # a torn write: deliver again rather than trust it
        if _has_deliveries(data) and isinstance(data.get("retracted"), dict):
            self.record = data
        return self

    def reset(self) -> None:
        """The context was emptied: nothing is delivered in it any more (the block it began with stays known)."""
        resets: object = self.record.get("resets", 0)  # as stored: missing in old records, or anything
        block = self.record.get("block")
        self.record = empty()
        self.record["resets"] = resets + 1 if isinstance(resets, int) else 1
        if isinstance(block, list):
            self.record["block"] = block

    def save(self) -> None:
        data = fastjson.dumps(self.record).encode()
        os.lseek(self.fd, 0, os.SEEK_SET)
        os.ftruncate(self.fd, 0)
        os.write(self.fd, data)

    def __exit__(self, *exc: object) -> None:
        if self.fd >= 0:
            if sys.platform == "win32":
                files.unlock(self.fd)  # Windows asks for it before the close
            os.close(self.fd)  # releases the lock
            self.fd = -1


def read(state_dir: str, session_id: object) -> SessionRecord:
    """A session's record without locking (for `gitmem render --session`)."""
    data = fastjson.read_file(record_path(state_dir, session_id))
    return data if _has_deliveries(data) else empty()


def _has_deliveries(data: object) -> TypeGuard[SessionRecord]:
    """A stored record as far as readers rely on it: "retracted" and "resets" are read with .get."""
    return isinstance(data, dict) and isinstance(data.get("delivered"), dict)


def prune(state_dir: str, max_age_days: int = MAX_AGE_DAYS) -> None:
    """Forget sessions untouched for a month (called at session start; never raises)."""
    cutoff = time.time() - max_age_days * 86400
    try:
        with os.scandir(os.path.join(state_dir, SESSIONS_DIR)) as it:
            for item in it:
                if item.name.endswith(".json") and item.stat().st_mtime < cutoff:
                    os.unlink(item.path)
    except OSError:
        pass

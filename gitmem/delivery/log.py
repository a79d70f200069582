"""Every delivery, recorded under .git/gitmem/: for `gitmem stats` and the session-start budget.

deliveries.jsonl: one line per delivery (time, session, event, path, entry ids delivered and
retracted), appended with a single write. relevance.json: for each entry, when it last fired
on a cue (anything but session start); the session-start budget keeps the most recently
relevant entries. Both are machine-local and never committed.

Writing is stdlib only (the hook appends here); reading the whole log is for commands.
"""

from __future__ import annotations

import os

from gitmem.base import fastjson, files

TYPE_CHECKING = False  # no typing import on the hook path
if TYPE_CHECKING:
    from typing import Any, NotRequired, TypedDict

    class LogLine(TypedDict):
        at: str
        session: str
        event: str
        path: str | None
        delivered: list[str]
        retracted: list[str]
        source: NotRequired[str]  # SessionStart's source

    class _Tally(TypedDict):
        id: str
        delivered: int
        retracted: int
        sessions: set[object]
        last: str | None
        events: dict[str, int]  # event -> deliveries on it

    class EntryStats(TypedDict):
        id: str
        delivered: int
        retracted: int
        sessions: int
        last: str | None
        events: dict[str, int]

LOG_FILE = "deliveries.jsonl"
LEFT_OUT_FILE = "left-out.json"
FIRST = "~"  # after every ISO time in the ranking
RELEVANCE_FILE = "relevance.json"
MAX_LOG_BYTES = 5_000_000


def now_iso(seconds: float | None = None) -> str:
    return files.utc_stamp(seconds)


def append(state_dir: str, *, session: object, event: str, delivered: list[str], retracted: list[str],
           path: str | None = None, source: str | None = None, at: float | None = None) -> None:
    stamp = now_iso(at)
    line: LogLine = {"at": stamp, "session": str(session or ""), "event": event, "path": path,
                     "delivered": delivered, "retracted": retracted}
    if source:
        line["source"] = source
    log = os.path.join(state_dir, LOG_FILE)
    files.rotate(log, MAX_LOG_BYTES)
    files.append_line(log, fastjson.dumps_utf8(line))
    if event != "session-start" and delivered:
        _touch_relevance(state_dir, delivered, stamp)


def _touch_relevance(state_dir: str, ids: list[str], stamp: str) -> None:
    """When each entry last fired, read and written under a lock: hooks of several sessions run
    at once, and a read-modify-write between two of them would lose the other's stamps."""
    with files.FileLock(os.path.join(state_dir, RELEVANCE_FILE + ".lock")):
        seen = read_relevance(state_dir)
        for entry_id in ids:
            seen[entry_id] = stamp
        fastjson.write_file(os.path.join(state_dir, RELEVANCE_FILE), seen)


def left_out(state_dir: str, ids: list[str], at: float) -> None:
    """The entries the budget left out of the latest new session's start, each with when it was
    first left out in a row (an entry shown since starts again): the next one opens with them,
    the longest waiting first (budget_ranking), so none is left out for good."""
    path = os.path.join(state_dir, LEFT_OUT_FILE)
    with files.FileLock(path + ".lock"):
        waiting = _waiting(state_dir)
        fastjson.write_file(path, {i: waiting.get(i, int(at * 1000)) for i in ids})  # milliseconds


def _waiting(state_dir: str) -> dict[str, int]:
    data = fastjson.read_file(os.path.join(state_dir, LEFT_OUT_FILE))
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)}


def budget_ranking(state_dir: str, *, new_session: bool = False, block: list[str] | None = None) -> dict[str, str]:
    """What the session-start budget ranks by (gitmem.delivery.rules._within_budget, the latest
    first): when each entry last fired on a cue (read_relevance). A new session's start ranks the
    entries the latest one left out before any, the longest waiting first (FIRST and the wait
    sort after every time); a compaction's or a subagent's start ranks its session's own `block`
    (what that session started with) first, so its agents keep to the same rules."""
    seen = read_relevance(state_dir)
    if block is not None:
        for entry_id in block:
            seen[entry_id] = FIRST
    elif new_session:
        for entry_id, since in _waiting(state_dir).items():
            seen[entry_id] = f"{FIRST}{10**15 - since:016d}"
    return seen


def read_relevance(state_dir: str) -> dict[str, str]:
    """{entry id: when it was last relevant}; what is not an id and a time is dropped (a file
    damaged or edited by hand never stops delivery)."""
    data = fastjson.read_file(os.path.join(state_dir, RELEVANCE_FILE))
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def read_log(state_dir: str) -> list[dict[str, Any]]:
    """All recorded deliveries, oldest first (the rotated file included); bad lines are skipped.

    Rows as stored (any JSON object), not checked against LogLine: readers use .get.
    """
    rows: list[dict[str, Any]] = []
    log = os.path.join(state_dir, LOG_FILE)
    for path in (log + ".1", log):
        try:
            rows += fastjson.read_rows(path)
        except OSError:
            continue
    return rows


def stats(state_dir: str, active_ids: list[str]) -> list[EntryStats]:
    """Per entry: deliveries, retractions, sessions, last delivery, events; active entries never delivered included."""
    table: dict[str, _Tally] = {}

    def row(entry_id: str) -> _Tally:
        return table.setdefault(entry_id, {"id": entry_id, "delivered": 0, "retracted": 0,
                                           "sessions": set(), "last": None, "events": {}})

    for line in read_log(state_dir):
        for key in ("delivered", "retracted"):
            for entry_id in line.get(key) or []:
                r = row(str(entry_id))
                r[key] += 1
                r["sessions"].add(line.get("session"))
                r["last"] = max(r["last"] or "", str(line.get("at") or "")) or None
                if key == "delivered":
                    event = str(line.get("event"))
                    r["events"][event] = r["events"].get(event, 0) + 1
    for entry_id in active_ids:
        row(entry_id)
    result: list[EntryStats] = [{**r, "sessions": len(r["sessions"])} for r in table.values()]
    return sorted(result, key=lambda r: (-r["delivered"], r["id"]))

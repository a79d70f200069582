"""The capture side of the Claude Code hooks: note what happened, enqueue, return.

Called by the hook dispatcher (gitmem.claude_hook) for UserPromptSubmit, PostToolUse,
Stop and SessionEnd. Standard library only; it never reads the transcript, never loads
a model and never waits: it writes one small file and, when the writer daemon is not
running, starts it detached. Every failure is swallowed into .git/gitmem/errors.log;
it prints nothing.

* UserPromptSubmit: the previous turn(s) of the session are complete, the one now
  starting is not (the prompt's first characters let the planner tell them apart).
* Stop / SessionEnd: every turn so far is complete (the final turn included).
* PostToolUse of Edit, Write, MultiEdit or NotebookEdit: append (session, tool,
  repository-relative path, time) to `.git/gitmem/events/<session>.jsonl`, so the files a
  turn modified come from gitmem's own log, not from the agent's account of its work.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
TYPE_CHECKING = False  # no typing import on the hook path
if TYPE_CHECKING:
    from typing import Any

from gitmem import queue
from gitmem.paths import RepoPaths

EDIT_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
EVENTS_DIR = "events"


def handle(repo: RepoPaths, payload: dict[str, Any]) -> None:
    """Never raises, never prints."""
    try:
        _handle(repo, payload)
    except Exception:
        from gitmem import faillog

        faillog.record(getattr(repo, "state", None), "capture hook")


def _handle(repo: RepoPaths, payload: dict[str, Any]) -> None:
    if not isinstance(payload, dict):
        return
    event = payload.get("hook_event_name")
    session = payload.get("session_id")
    if not isinstance(session, str) or not session:
        return
    if event == "PostToolUse":
        _log_edit(repo, session, payload)
        return
    if event not in queue.TRIGGER_EVENTS:
        return
    transcript = payload.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        return
    prompt = payload.get("prompt") if event == "UserPromptSubmit" else None
    queue.signal(repo, session, event, transcript, prompt if isinstance(prompt, str) else None)
    from gitmem import daemon

    daemon.ensure_running(repo)


# -- the event log -------------------------------------------------------------------------------

def _edited_path(tool_input: Any) -> str | None:
    if not isinstance(tool_input, dict):
        return None
    for key in ("file_path", "notebook_path", "path"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _log_edit(repo: RepoPaths, session: str, payload: dict[str, Any]) -> None:
    tool = payload.get("tool_name")
    if tool not in EDIT_TOOLS:
        return
    raw = _edited_path(payload.get("tool_input"))
    if raw is None:
        return
    if not os.path.isabs(raw):
        cwd = payload.get("cwd")
        raw = os.path.join(cwd if isinstance(cwd, str) and cwd else str(repo.worktree), raw)
    rel = repo.relative(raw)
    if not rel or rel == "." or rel.startswith("../") or rel == ".git" or rel.startswith(".git/"):
        return
    record = {"session": session, "tool": tool, "path": rel, "time": time.time()}
    folder = repo.state / EVENTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    # One write() on an O_APPEND descriptor: concurrent hooks never interleave a line.
    fd = os.open(folder / f"{queue.session_key(session)}.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def files_modified(repo: RepoPaths, session: str, start: float | None, end: float | None) -> tuple[str, ...]:
    """Paths the session edited with `start <= time < end` (None = open), first edit first."""
    path = repo.state / EVENTS_DIR / f"{queue.session_key(session)}.jsonl"
    try:
        handle = open(path, encoding="utf-8")
    except FileNotFoundError:
        return ()
    seen: dict[str, None] = {}
    with handle:
        for line in handle:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict) or record.get("session") != session:
                continue
            at = record.get("time")
            rel = record.get("path")
            if not isinstance(at, (int, float)) or not isinstance(rel, str):
                continue
            if (start is None or at >= start) and (end is None or at < end):
                seen.setdefault(rel, None)
    return tuple(seen)


def events_path(repo: RepoPaths, session: str) -> Path:
    return repo.state / EVENTS_DIR / f"{queue.session_key(session)}.jsonl"

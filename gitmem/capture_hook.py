"""The capture side of the Claude Code hooks: note what happened, enqueue, return.

Called by the hook dispatcher (gitmem.claude_hook) for UserPromptSubmit, PostToolUse,
Stop and SessionEnd. Standard library only — not even pathlib or gitmem.paths (together
≈25 ms of imports): it never reads the transcript, never loads a model and never waits.
It writes one small file and, when the writer daemon is not running, starts it detached.
Every failure is swallowed into .git/gitmem/errors.log; it prints nothing.

* UserPromptSubmit: the previous turn(s) of the session are complete, the one now
  starting is not (the prompt's first characters let the planner tell them apart).
* Stop / SessionEnd: every turn so far is complete (the final turn included).
* PostToolUse of Edit, Write, MultiEdit or NotebookEdit: append (session, tool,
  repository-relative path, time) to `.git/gitmem/events/<session>.jsonl`, so the files a
  turn modified come from gitmem's own log, not from the agent's account of its work.
"""

from __future__ import annotations

import os
import time

from gitmem import fastjson, queue

TYPE_CHECKING = False  # no typing import on the hook path
if TYPE_CHECKING:
    from typing import Any

EDIT_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
EVENTS_DIR = "events"


class HookRepo:
    """The three folders of a repository as strings: what the hook path needs of RepoPaths."""

    __slots__ = ("worktree", "git_dir", "common_dir")

    def __init__(self, worktree: str, git_dir: str, common_dir: str) -> None:
        self.worktree = os.fspath(worktree)
        self.git_dir = os.fspath(git_dir)
        self.common_dir = os.fspath(common_dir)

    @property
    def state(self) -> str:
        return os.path.join(self.common_dir, "gitmem")


def handle(repo: Any, payload: dict[str, Any]) -> None:
    """Never raises, never prints. `repo`: a RepoPaths or a HookRepo."""
    try:
        _handle(repo, payload)
    except Exception:
        from pathlib import Path

        from gitmem import faillog

        state = getattr(repo, "state", None)
        faillog.record(Path(state) if state is not None else None, "capture hook")


def handle_at(worktree: str, git_dir: str, common_dir: str, payload: dict[str, Any]) -> None:
    """`handle` for callers that located the repository themselves (no gitmem.paths import)."""
    handle(HookRepo(worktree, git_dir, common_dir), payload)


def _handle(repo: Any, payload: dict[str, Any]) -> None:
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
    reply = payload.get("last_assistant_message") if event == "Stop" else None
    queue.signal(repo, session, event, transcript, prompt if isinstance(prompt, str) else None,
                 reply if isinstance(reply, str) else None)
    from gitmem import daemon

    daemon.ensure_running(repo)


# -- the event log -------------------------------------------------------------------------------

def _edited_path(tool_input: Any) -> str | None:
    if not isinstance(tool_input, dict):
        return None
    for key in ("file_path", "notebook_path"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def relative(worktree: str, path: str, cwd: str | None = None) -> str | None:
    """Repository-relative POSIX path of `path`, or None outside the work tree (or in .git)."""
    if not os.path.isabs(path):
        path = os.path.join(cwd or worktree, path)
    path = os.path.normpath(path)
    rel = None
    for tree, candidate in ((worktree, path), (os.path.realpath(worktree), os.path.realpath(path))):
        prefix = tree.rstrip("/") + "/"
        if candidate.startswith(prefix):
            rel = candidate[len(prefix):]
            break
    if not rel or rel == ".git" or rel.startswith(".git/"):
        return None
    return rel


def _log_edit(repo: Any, session: str, payload: dict[str, Any]) -> None:
    tool = payload.get("tool_name")
    if tool not in EDIT_TOOLS:
        return
    raw = _edited_path(payload.get("tool_input"))
    if raw is None:
        return
    cwd = payload.get("cwd")
    rel = relative(os.fspath(repo.worktree), raw, cwd if isinstance(cwd, str) and cwd else None)
    if rel is None:
        return
    record = {"session": session, "tool": tool, "path": rel, "time": time.time()}
    folder = os.path.join(os.fspath(repo.state), EVENTS_DIR)
    os.makedirs(folder, exist_ok=True)
    line = (fastjson.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    # One write() on an O_APPEND descriptor: concurrent hooks never interleave a line.
    fd = os.open(events_path(repo, session), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


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

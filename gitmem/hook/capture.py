"""The capture side of the Claude Code hooks: note what happened, enqueue, return.

Called by the hook dispatcher (gitmem.hook.claude) for UserPromptSubmit, PostToolUse,
Stop and SessionEnd (Gemini CLI: BeforeAgent, AfterTool, AfterAgent and SessionEnd, read as
those). Standard library only — not even pathlib or gitmem.base.paths (together
≈25 ms of imports): it never reads the transcript, never loads a model and never waits.
It writes one small file and, when the writer daemon is not running, starts it detached.
Every failure is swallowed into .git/gitmem/errors.log; it prints nothing.

* UserPromptSubmit: the previous turn(s) of the session are complete, the one now
  starting is not (the prompt's first characters let the planner tell them apart).
* Stop / SessionEnd: every turn so far is complete (the final turn included).
* PostToolUse of Edit, Write, MultiEdit or NotebookEdit (Codex: apply_patch, also through its shell
  tool, each file): append (session, tool, repository-relative path, time) to
  `.git/gitmem/events/<session>.jsonl`, so the files a turn modified come from gitmem's own log,
  not from the agent's account of its work.
"""

from __future__ import annotations

import os

from gitmem.base.locate import relative
from gitmem.writer import edit_log, queue

TYPE_CHECKING = False  # no typing import on the hook path
if TYPE_CHECKING:
    from collections.abc import Mapping

    from gitmem.base.paths import RepoPaths

EDIT_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
# Gemini CLI's events and edit tools, as the Claude Code ones they are.
GEMINI_EVENTS = {"BeforeAgent": "UserPromptSubmit", "AfterTool": "PostToolUse", "AfterAgent": "Stop"}
GEMINI_EDIT_TOOLS = {"write_file": "Write", "replace": "Edit"}


class HookRepo:
    """The three folders of a repository as strings: what the hook path needs of RepoPaths."""

    __slots__ = ("common_dir", "git_dir", "worktree")

    def __init__(self, worktree: str, git_dir: str, common_dir: str) -> None:
        self.worktree = os.fspath(worktree)
        self.git_dir = os.fspath(git_dir)
        self.common_dir = os.fspath(common_dir)

    @property
    def state(self) -> str:
        return os.path.join(self.common_dir, "gitmem")


def handle(repo: RepoPaths | HookRepo, payload: Mapping[str, object]) -> None:
    """Never raises, never prints. `repo`: a RepoPaths or a HookRepo."""
    try:
        _handle(repo, payload)
    except Exception:
        from pathlib import Path

        from gitmem.base import faillog

        state = getattr(repo, "state", None)
        faillog.record(Path(state) if state is not None else None, "capture hook")


def handle_at(worktree: str, git_dir: str, common_dir: str, payload: Mapping[str, object]) -> None:
    """`handle` for callers that located the repository themselves (no gitmem.base.paths import)."""
    handle(HookRepo(worktree, git_dir, common_dir), payload)


def _handle(repo: RepoPaths | HookRepo, payload: object) -> None:
    if not isinstance(payload, dict):  # handle() never raises, whatever it is given
        return
    gemini = payload.get("hook_event_name")
    event = GEMINI_EVENTS.get(gemini, gemini) if isinstance(gemini, str) else None
    session = payload.get("session_id")
    if not isinstance(session, str) or not session:
        return
    if event == "PostToolUse":
        tool = payload.get("tool_name")
        if event != gemini and isinstance(tool, str):
            payload = {**payload, "tool_name": GEMINI_EDIT_TOOLS.get(tool, tool)}
        _log_edit(repo, session, payload)
        return
    if event not in queue.TRIGGER_EVENTS:
        return
    if payload.get("agent_id"):
        # A subagent's turn (Codex runs UserPromptSubmit in its threads, under the parent's session
        # id and the subagent's own rollout): its prompt is what the parent model wrote, never the
        # developer's words, and planning it would move the session onto that rollout.
        return
    transcript = payload.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        return
    prompt = payload.get("prompt") if event == "UserPromptSubmit" else None
    reply = payload.get("prompt_response" if gemini == "AfterAgent" else "last_assistant_message") \
        if event == "Stop" else None
    # queue.py and daemon.py annotate RepoPaths but read only .state and .worktree, which HookRepo has.
    queue.signal(repo, session, event, transcript,  # type: ignore[arg-type]
                 prompt if isinstance(prompt, str) else None, reply if isinstance(reply, str) else None)
    from gitmem.writer import daemon

    daemon.ensure_running(repo)  # type: ignore[arg-type]


# -- the event log -------------------------------------------------------------------------------

def _edited_path(tool_input: object) -> str | None:
    if not isinstance(tool_input, dict):
        return None
    for key in ("file_path", "notebook_path"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _log_edit(repo: RepoPaths | HookRepo, session: str, payload: Mapping[str, object]) -> None:
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if tool in ("apply_patch", "Bash") and isinstance(command, str):  # Codex: every file the patch names
        from gitmem.hook import patch

        # Bash: `apply_patch <<'EOF'` through Codex's shell tool, which applies it itself
        applied = command if tool == "apply_patch" else patch.in_shell_command(command)
        raws = patch.paths(applied) if applied is not None else []
        folder = patch.shell_folder(command) if tool == "Bash" else ""  # `cd src && apply_patch`
    elif tool in EDIT_TOOLS:
        raw = _edited_path(tool_input)
        raws, folder = ([raw] if raw is not None else []), ""
    else:
        return
    cwd = payload.get("cwd")
    base = cwd if isinstance(cwd, str) and cwd else None
    if folder:
        base = os.path.join(base or os.fspath(repo.worktree), os.path.expanduser(folder))
    for raw in raws:
        rel = relative(os.fspath(repo.worktree), raw, base)
        if rel is not None:
            edit_log.append(repo, session, str(tool), rel)

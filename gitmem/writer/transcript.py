"""Read a Claude Code session transcript (JSONL) into user/assistant turns.

Standard library only, and nothing from the rest of gitmem: this runs inside
latency-critical hooks.  The record format is undocumented; the rules below
follow ``shared/transcripts/FORMAT.md`` (sections 4.2 and 4.3).

A *turn* is one real, typed user prompt plus the visible text the assistant
wrote in reply.  Everything else in the file is harness bookkeeping.

What becomes a turn
-------------------
* A main-chain ``user`` record whose text, after cleaning, is not empty and
  does not start with a harness prefix (command wrappers, command output,
  caveats, ``!`` bash mode, task notifications, system reminders, interrupt
  markers, hook-block notices, compaction summaries).
* A prompt typed while the agent was busy that exists only as a
  ``queue-operation`` ``enqueue`` followed by ``remove`` (it was fed into the
  running turn and is written nowhere else).  The turn starts where the
  ``remove`` is, because that is when the model saw it; its timestamp is the
  ``enqueue`` time (when the user typed it) and ``user_uuid`` is ``None``.
  ``enqueue`` + ``dequeue`` is dropped: the prompt reappears later as a normal
  ``user`` record and is counted there, once.  ``popAll`` (the developer
  pressed Up and pulled every queued prompt back into the input box) drops
  all the pending prompts too: whatever is re-sent comes as a normal record.
  An ``enqueue`` still pending at the end of the file is not a turn yet: it
  becomes one when the file grows, so turn indices never shift as the file is
  appended.
* What the developer typed when rejecting a tool call ("No, and tell Claude
  what to do differently"): the text after Claude Code's fixed prefix in the
  ``tool_result`` (``is_error``) of that call, in a record Claude Code marks
  ``toolDenialKind: user-rejected`` (1.0.x marks none, and records a failing
  command's output in the same shape: its feedback is not read).  It is a turn of its own, with
  the reply that follows it: appending it to the open turn would change a
  turn that may already have been judged.

What is dropped
---------------
* Records of any type other than ``user``/``assistant`` (``system``,
  ``progress`` -- ``data.message`` is never read --, ``summary``,
  ``file-history-snapshot``, ``attachment`` incl. hook results, ``pr-link``,
  unknown types), except the queue rule above.
* Sidechains: ``isSidechain: true`` records, and every record of a file
  inside a ``subagents/`` folder or named ``agent-*.jsonl``.
* ``isMeta`` rows (caveats, slash-command and skill expansions, hook output
  reminders), ``isCompactSummary`` rows, tool results (but for a rejection's
  feedback, above), ``thinking`` and
  ``tool_use`` blocks, image blocks, whitespace-only text blocks, assistant
  records written by the harness (``model == "<synthetic>"``,
  ``isApiErrorMessage``).
* Injected blocks anywhere inside user or assistant text:
  ``<gitmem-context>…</gitmem-context>`` (gitmem's own hook context),
  ``<system-reminder>…</system-reminder>``,
  ``<user-prompt-submit-hook>…</user-prompt-submit-hook>`` and the IDE's
  ``<ide_opened_file>`` / ``<ide_selection>`` notes.
* Lines that are blank or fail to parse (never fatal); a missing or
  unreadable file reads as no turns.
* A prompt re-sent unchanged after a UserPromptSubmit hook stopped it (an
  ``Operation stopped by hook`` record straight after the prompt, before any
  assistant record): it joins the stopped prompt's turn, which keeps its index
  and gets the reply.  The stopped prompt stays a turn: Claude Code keeps it
  in the conversation, and the developer may type something else instead.

Policies
--------
* **Slash commands are dropped**, with their arguments: ``/compact keep
  going`` is an instruction to the harness, not a statement to judge.  The
  wrapper, its isMeta expansion, caveat and stdout all go.  Queued slash
  commands (``enqueue "/mcp"``) are dropped too.
* **Plan hand-offs are dropped** (a ``user`` record with ``planContent``,
  "Implement the following plan: …"): the user approved it, but did not type
  the text.
* **Harness-initiated exchanges end the current turn.**  A slash-command
  wrapper, a plan hand-off and a ``<task-notification>`` record start an
  exchange the user did not type; the assistant text that answers them is
  *not* added to the previous turn, it is discarded until the next typed
  prompt.  Compaction summaries, interrupt markers, caveats, command output
  and hook notices do not end a turn: after an auto-compaction the model keeps
  answering the pre-compaction prompt, and that text stays with it.
* **Assistant text** is every non-empty, trimmed ``text`` block of the
  main-chain replies up to the next turn boundary, joined by blank lines
  (the running narration as well as the final answer).
* **Bounds.**  User text longer than 6000 characters keeps its first 4000 and
  last 1500 characters joined by ``"\\n[…]\\n"``.  Assistant text longer than
  6000 characters keeps its first 2500 and last 3000 (the same budget, weighted
  towards the end, where the final answer is).  ``truncated`` is set when
  either was cut.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

__all__ = ["Turn", "last_turn_index", "read_turns"]

MAX_CHARS = 6000
USER_HEAD = 4000
USER_TAIL = 1500
ASSISTANT_HEAD = 2500
ASSISTANT_TAIL = 3000
ELISION = "\n[…]\n"


@dataclass(frozen=True, slots=True)
class Turn:
    """One typed user prompt and the assistant's visible reply to it."""

    index: int  # 0-based position of the typed prompt among typed prompts in the file
    user: str
    assistant: str
    user_uuid: str | None
    timestamp: str | None
    truncated: bool
    cwd: str | None = None  # the session's folder when it was typed, where the transcript says


# A user text block starting with one of these (after lstrip) is written by
# the harness.  The first group starts an exchange the user did not type and
# therefore also ends the current turn's reply (see the module docstring).
_BOUNDARY_PREFIXES: tuple[str, ...] = (
    "<command-name>",
    "<command-message>",
    "<task-notification>",
    "<agent-notification>",
    "<ci-monitor-event>",
)
# Keys of the JSON object a background task's notification carries (2.1.x writes it as queued
# "content", as if typed while the agent was busy).
_TASK_NOTICE_KEYS = ("task_id", "tool_use_id", "task_type")
# A UserPromptSubmit hook answered `continue: false`: Claude Code writes this user record right
# after the prompt and does not query the model.
_HOOK_STOP = "Operation stopped by hook"
_HARNESS_PREFIXES: tuple[str, ...] = (
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "Caveat: The messages below were generated by the user while running local commands",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<system-reminder>",
    "<user-prompt-submit-hook>",
    "<gitmem-context",
    "[Request interrupted by user",
    _HOOK_STOP,  # with ": <reason>", or bare when the hook gave none
    "This session is being continued from a previous conversation",
)

_INJECTED_TAGS: tuple[str, ...] = (
    "gitmem-context",
    "system-reminder",
    "user-prompt-submit-hook",
    "ide_opened_file",
    "ide_selection",
)
_INJECTED_RE = re.compile(
    r"<(" + "|".join(_INJECTED_TAGS) + r")(?:\s[^>]*)?>.*?</\1\s*>",
    re.DOTALL,
)
# "/mcp", "/compact keep going", "/plugin:cmd args" -- but not "/usr/bin is gone".
_SLASH_COMMAND_RE = re.compile(r"/[A-Za-z][\w:.-]*(?:\s|$)")

# Claude Code's REJECT_MESSAGE_WITH_FEEDBACK_PREFIX: what follows it in the tool_result is what the
# developer typed when rejecting the call ("No, and tell Claude what to do differently").
_REJECT_FEEDBACK_PREFIX = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a "
    "file edit, the new_string was NOT written to the file). To tell you how to proceed, the user said:\n"
)
_REJECT_FEEDBACK_MARK = b"To tell you how to proceed, the user said:"
# Harness text after the prefix: the note newer versions append to the feedback, and what
# AskUserQuestion's "Chat about this" sends in place of typed feedback.
_REJECT_FEEDBACK_NOTE = "\n\nNote: The user's next message may contain a correction or preference."
_CLARIFY_FEEDBACK = "The user wants to clarify these questions."

_SIDECHAIN_MARK = b'"isSidechain":true'
_TOOL_RESULT_MARK = b'"toolUseResult"'
_PROGRESS_MARK = b'"type":"progress","data":'
_ASSISTANT_MARK = b'"role":"assistant"'
_TEXT_MARKS: tuple[bytes, ...] = (b'"type":"text"', b'"type": "text"')
_KEEP_LEADING_TYPES: tuple[bytes, ...] = (
    b'{"type":"user"',
    b'{"type":"assistant"',
    b'{"type":"queue-operation"',
)

# Sentinel returned by _user_text for records that end the current turn.
_BOUNDARY = object()


def _strip_injected(text: str) -> str:
    if "<" in text and _INJECTED_RE.search(text) is not None:
        return _INJECTED_RE.sub("", text)
    return text


def _is_task_notice(text: str) -> bool:
    """`{"task_id": …, "task_type": "local_bash", …}`: the harness's, never typed."""
    if not text.startswith("{") or '"task_id"' not in text:
        return False
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # nested deeper than the parser goes
        return False
    return isinstance(data, dict) and "task_id" in data and any(k in data for k in _TASK_NOTICE_KEYS[1:])


def _clean_piece(text: str) -> str | object | None:
    """Classify one user text piece: cleaned text, _BOUNDARY, or None (drop)."""
    stripped = text.lstrip()
    if stripped.startswith(_BOUNDARY_PREFIXES):
        return _BOUNDARY
    if _is_task_notice(stripped.rstrip()):
        return _BOUNDARY
    cleaned = _strip_injected(text).strip()
    if not cleaned or cleaned.startswith(_HARNESS_PREFIXES):
        return None
    if cleaned.startswith(_BOUNDARY_PREFIXES):
        return _BOUNDARY
    return cleaned


def _user_text(content: object) -> str | object | None:
    """Typed text of a user message content, _BOUNDARY, or None."""
    if isinstance(content, str):
        return _clean_piece(content)
    if not isinstance(content, list):
        return None
    pieces: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "tool_result":
            return None
        if kind != "text":
            continue
        text = block.get("text")
        if not isinstance(text, str):
            continue
        piece = _clean_piece(text)
        if piece is _BOUNDARY:
            return _BOUNDARY
        if isinstance(piece, str):
            pieces.append(piece)
    return "\n\n".join(pieces) if pieces else None


def _block_text(content: object) -> str | None:
    """A block's content as text: a string, or the first text block of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                return str(block["text"])
    return None


def _rejection_feedback(content: object) -> str | None:
    """What the developer typed when rejecting a tool call, from the tool results in `content`."""
    if not isinstance(content, list):
        return None
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "tool_result" or block.get("is_error") is not True:
            continue
        text = _block_text(block.get("content"))
        if text is None or not text.startswith(_REJECT_FEEDBACK_PREFIX):
            continue
        said = text[len(_REJECT_FEEDBACK_PREFIX):].split(_REJECT_FEEDBACK_NOTE, 1)[0]
        if said.lstrip().startswith(_CLARIFY_FEEDBACK):
            return None
        piece = _clean_piece(said)
        return piece if isinstance(piece, str) else None
    return None


def _a_rejection(rec: dict[str, object]) -> bool:
    """Whether the record is Claude Code's own of a call the developer rejected in its dialog:
    `toolDenialKind: user-rejected`, a field no tool's output sets. A failing command's error
    output is recorded as a string beginning "Error: " too (1.0.x), and could quote the
    rejection's whole wording: without the field, a result stays a tool's (older versions'
    rejection feedback is not read)."""
    return rec.get("toolDenialKind") == "user-rejected" and isinstance(rec.get("toolUseResult"), str)


def _is_hook_stop(message: object) -> bool:
    text = _block_text(message.get("content")) if isinstance(message, dict) else None
    return text is not None and text.lstrip().startswith(_HOOK_STOP)


def _assistant_pieces(content: object) -> list[str]:
    if isinstance(content, str):
        blocks: list[object] = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        blocks = content
    else:
        return []
    out: list[str] = []
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            if isinstance(text, str):
                text = _strip_injected(text).strip()
                if text:
                    out.append(text)
    return out


def _bound(text: str, head: int, tail: int) -> tuple[str, bool]:
    if len(text) <= MAX_CHARS:
        return text, False
    return text[:head] + ELISION + text[-tail:], True


def _is_sidechain_path(path: str) -> bool:
    norm = path.replace("\\", "/")
    name = norm.rsplit("/", 1)[-1]
    return "/subagents/" in "/" + norm or (name.startswith("agent-") and name.endswith(".jsonl"))


class _Open:
    """A turn being collected."""

    __slots__ = ("cwd", "index", "parts", "timestamp", "user", "uuid")

    def __init__(self, index: int, user: str, uuid: str | None, timestamp: str | None, cwd: str | None) -> None:
        self.index = index
        self.user = user
        self.uuid = uuid
        self.timestamp = timestamp
        self.cwd = cwd
        self.parts: list[str] = []

    def close(self) -> Turn:
        user, cut_user = _bound(self.user, USER_HEAD, USER_TAIL)
        assistant, cut_assistant = _bound("\n\n".join(self.parts), ASSISTANT_HEAD, ASSISTANT_TAIL)
        return Turn(
            index=self.index,
            user=user,
            assistant=assistant,
            user_uuid=self.uuid,
            timestamp=self.timestamp,
            truncated=cut_user or cut_assistant,
            cwd=self.cwd,
        )


def _scan(path: str | os.PathLike[str], start: int) -> tuple[list[Turn], int]:
    """Return (turns with index >= start, number of typed prompts in the file)."""
    fspath = os.fspath(path)
    if _is_sidechain_path(fspath):
        return [], 0
    try:
        handle = open(fspath, "rb")  # noqa: SIM115 - closed by the with below
    except OSError:
        return [], 0
    turns: list[Turn] = []
    count = 0
    current: _Open | None = None
    pending: list[tuple[str, str | None]] = []  # queued (content, enqueue timestamp)
    unanswered: str | None = None  # the last prompt, words only, while no assistant record followed it
    stopped: str | None = None  # the prompt a UserPromptSubmit hook stopped, until the next prompt
    loads = json.loads

    def begin(user: str, uuid: str | None, timestamp: str | None, cwd: str | None = None) -> None:
        nonlocal current, count, unanswered, stopped
        words = " ".join(user.split())
        resent = words == stopped
        stopped = None
        unanswered = words
        if resent:  # the stopped prompt sent again: its turn (index kept) takes the reply
            return
        if current is not None:
            turns.append(current.close())
        current = _Open(count, user, uuid, timestamp, cwd) if count >= start else None
        count += 1

    with handle:
        try:
            for line in handle:
                # Cheap pre-checks on the raw bytes.  The marks below can only
                # occur as JSON structure (inside strings quotes are escaped),
                # so they never hide a typed prompt or an assistant text block.
                if line.startswith(b'{"type":"') and not line.startswith(_KEEP_LEADING_TYPES):
                    continue
                if _PROGRESS_MARK in line or _SIDECHAIN_MARK in line:
                    continue
                if _TOOL_RESULT_MARK in line and _REJECT_FEEDBACK_MARK not in line:
                    continue
                if _ASSISTANT_MARK in line and not any(m in line for m in _TEXT_MARKS):
                    unanswered = stopped = None  # the prompt was sent: a tool call, nothing visible
                    continue
                try:
                    rec = loads(line)
                except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError; nested too deep
                    continue
                if not isinstance(rec, dict):
                    continue
                kind = rec.get("type")
                if kind == "assistant":
                    if rec.get("isSidechain") is True:
                        continue
                    unanswered = stopped = None
                    if current is None:
                        continue
                    if rec.get("isApiErrorMessage") is True:
                        continue
                    message = rec.get("message")
                    if not isinstance(message, dict) or message.get("model") == "<synthetic>":
                        continue
                    current.parts.extend(_assistant_pieces(message.get("content")))
                elif kind == "user":
                    if rec.get("isSidechain") is True or rec.get("isMeta") is True:
                        continue
                    message = rec.get("message")
                    if "toolUseResult" in rec:
                        said = _rejection_feedback(message.get("content")) if isinstance(message, dict) and \
                            _a_rejection(rec) else None
                        if said is not None:
                            begin(said, *_where(rec))
                        continue
                    if rec.get("isCompactSummary") is True:
                        continue
                    if "planContent" in rec:
                        text: str | object | None = _BOUNDARY
                    else:
                        if not isinstance(message, dict):
                            continue
                        text = _user_text(message.get("content"))
                    if text is _BOUNDARY:
                        unanswered = stopped = None
                        if current is not None:
                            turns.append(current.close())
                            current = None
                        continue
                    if not isinstance(text, str):
                        if unanswered is not None and _is_hook_stop(message):
                            stopped = unanswered  # the model was not asked: a copy sent next is the same turn
                        continue
                    begin(text, *_where(rec))
                elif kind == "queue-operation":
                    op = rec.get("operation")
                    if op == "enqueue":
                        content = rec.get("content")
                        stamp = rec.get("timestamp")
                        pending.append(
                            (
                                content if isinstance(content, str) else "",
                                stamp if isinstance(stamp, str) else None,
                            )
                        )
                    elif op == "dequeue":
                        if pending:
                            pending.pop(0)
                    elif op == "popAll":  # Up pulled the queued prompts back to edit; the harness's notices stay
                        pending = [entry for entry in pending if _clean_piece(entry[0]) is _BOUNDARY]
                    elif op == "remove":
                        if not pending:
                            continue
                        content, stamp = pending.pop(0)
                        if _SLASH_COMMAND_RE.match(content.strip()):
                            continue
                        queued = _clean_piece(content)
                        if isinstance(queued, str):  # typed while the agent was busy: a turn
                            begin(queued, None, stamp)
        except OSError:
            pass
    if current is not None:
        turns.append(current.close())
    return turns, count


def _where(rec: dict[str, object]) -> tuple[str | None, str | None, str | None]:
    """A user record's uuid, timestamp and folder, where it gives them."""
    uuid, stamp, cwd = rec.get("uuid"), rec.get("timestamp"), rec.get("cwd")
    return (
        uuid if isinstance(uuid, str) else None,
        stamp if isinstance(stamp, str) else None,
        cwd if isinstance(cwd, str) and cwd else None,
    )


def read_turns(path: str | os.PathLike[str], *, start: int = 0) -> list[Turn]:
    """Turns of the transcript at ``path`` whose index is ``>= start``, in order."""
    return _scan(path, max(start, 0))[0]


def last_turn_index(path: str | os.PathLike[str]) -> int:
    """Index of the last typed prompt in the transcript, or -1 when there is none."""
    return _scan(path, 1 << 62)[1] - 1

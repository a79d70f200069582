"""Read a Codex CLI rollout (`~/.codex/sessions/…/rollout-*.jsonl`) into the same turns as a
Claude Code transcript (gitmem.writer.transcript.Turn).

One JSON object per line, `{"timestamp", "type", "payload"}`:

- `session_meta` (first line: id, cwd, cli_version, base instructions), `turn_context`
  (per turn: cwd, model, policies): bookkeeping;
- `event_msg` with payload type `user_message` (`message`: exactly what the developer typed),
  `agent_message` (`message`: the visible reply, `phase` commentary or final_answer),
  `task_started` / `task_complete`, `token_count`, `patch_apply_end`, …;
- `response_item`: what went to and came from the model. Role `user` messages there include
  what the harness injects (AGENTS.md instructions, `<environment_context>`, permission
  notes), so they are never read as typed turns; role `assistant` messages hold the reply text
  (`output_text` blocks) again; `function_call`, `custom_tool_call`, their outputs and
  `reasoning` are not text for the judge.

A turn: each `user_message` event with text (not a prompt Codex's TUI wrote for a slash command,
CANNED_PROMPTS), with the assistant text up to the next one: the
`response_item` assistant messages, or, in a rollout that lacks them, the `agent_message`
events (the two carry the same text, so only one of them is used). gitmem's own hook context
(`<gitmem-context>…</gitmem-context>`) and other injected blocks are stripped as for Claude
Code. Lines that do not parse are skipped; a missing file reads as no turns.
"""

from __future__ import annotations

import hashlib
import json
import os

from gitmem.writer import transcript
from gitmem.writer.transcript import Turn

ASSISTANT_HEAD, ASSISTANT_TAIL = transcript.ASSISTANT_HEAD, transcript.ASSISTANT_TAIL
USER_HEAD, USER_TAIL = transcript.USER_HEAD, transcript.USER_TAIL
_bound = transcript._bound
_strip_injected = transcript._strip_injected

_MARKS = (b'"type":"session_meta"', b'"type": "session_meta"', b'"type":"response_item"',
          b'"type": "response_item"', b'"type":"event_msg"', b'"type": "event_msg"',
          b'"type":"turn_context"', b'"type": "turn_context"')
# Prompts Codex's TUI sends for the developer, as plain user messages, by the SHA-256 (first 32
# hex digits) of their first line, whitespace collapsed and lower-cased: the developer typed a
# slash command, not these words (Claude Code marks its slash commands; Codex does not).
CANNED_PROMPTS = frozenset({
    "86a36fd198dfbc9c109a23e4ab518519",  # `/init`: codex-rs/tui/prompt_for_init_command.md
})
# Whole messages the TUI sends, fingerprinted the same way: approving a plan in plan mode sends
# the model's plan back as "Implement the plan." (the plan is the agent's words, not the developer's).
CANNED_MESSAGES = frozenset({
    "cd2c086c07d1b54c3e9cbda325ec962a",  # plan mode's approval
})
_SKIP = (b'"type":"token_count"', b'"type":"function_call_output"', b'"type":"reasoning"',
         b'"type":"function_call"', b'"type":"custom_tool_call_output"')


def is_rollout(path: str | os.PathLike[str]) -> bool:
    """Whether the file's first record is in Codex's rollout shape."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(512)
    except OSError:
        return False
    first = head.split(b"\n", 1)[0]
    return first.lstrip().startswith(b"{") and any(mark in first for mark in _MARKS)


class _Open:
    __slots__ = ("agent", "cwd", "index", "items", "timestamp", "user")

    def __init__(self, index: int, user: str, timestamp: str | None, cwd: str | None) -> None:
        self.index, self.user, self.timestamp, self.cwd = index, user, timestamp, cwd
        self.items: list[str] = []  # response_item assistant text
        self.agent: list[str] = []  # agent_message events

    def close(self) -> Turn:
        user, cut_user = _bound(self.user, USER_HEAD, USER_TAIL)
        reply, cut_reply = _bound("\n\n".join(self.items or self.agent), ASSISTANT_HEAD, ASSISTANT_TAIL)
        return Turn(index=self.index, user=user, assistant=reply, user_uuid=_prompt_id(self.timestamp, self.user),
                    timestamp=self.timestamp, truncated=cut_user or cut_reply, cwd=self.cwd)


def _prompt_id(timestamp: str | None, text: str) -> str | None:
    """What identifies a typed prompt across rollouts: a fork (`codex fork`, a resume into a new
    file) copies the parent's lines as they were, so their time and text come along; rollout
    lines carry no id of their own. The writer leaves such a copy to the session that planned it."""
    if not timestamp:
        return None
    return "codex-" + hashlib.sha256(f"{timestamp}\0{text}".encode()).hexdigest()[:32]


def _scan(path: str | os.PathLike[str], start: int) -> tuple[list[Turn], int]:
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed by the with below
    except OSError:
        return [], 0
    turns: list[Turn] = []
    count = 0
    current: _Open | None = None
    cwd: str | None = None  # the session's folder, as session_meta and each turn_context give it
    with handle:
        try:
            for line in handle:
                if any(mark in line for mark in _SKIP):
                    continue
                try:
                    rec = json.loads(line)
                except (ValueError, RecursionError):  # RecursionError: nested deeper than json goes
                    continue
                payload = rec.get("payload") if isinstance(rec, dict) else None
                if not isinstance(payload, dict):
                    continue
                kind, inner = rec.get("type"), payload.get("type")
                if kind in ("session_meta", "turn_context"):
                    folder = payload.get("cwd")
                    cwd = folder if isinstance(folder, str) and folder else cwd
                elif kind == "event_msg" and inner == "user_message":
                    if payload.get("kind") not in (None, "plain"):
                        continue  # older Codex: AGENTS.md and the environment, injected as user messages
                    if current is not None:  # a message of images alone still ends the turn before it
                        turns.append(current.close())
                        current = None
                    text = _clean(payload.get("message"))
                    if text is None or canned(text):
                        continue
                    stamp = rec.get("timestamp")
                    stamp = stamp if isinstance(stamp, str) else None
                    current = _Open(count, text, stamp, cwd) if count >= start else None
                    count += 1
                elif current is None:
                    continue
                elif kind == "event_msg" and inner == "agent_message":
                    text = _clean(payload.get("message"))
                    if text:
                        current.agent.append(text)
                elif kind == "response_item" and inner == "message" and payload.get("role") == "assistant":
                    blocks = payload.get("content")
                    for block in blocks if isinstance(blocks, list) else []:
                        if isinstance(block, dict) and block.get("type") == "output_text":
                            text = _clean(block.get("text"))
                            if text:
                                current.items.append(text)
        except OSError:
            pass
    if current is not None:
        turns.append(current.close())
    return turns, count


def canned(text: str) -> bool:
    """Whether `text` is a prompt the harness wrote (its first line's fingerprint is known)."""
    def fingerprint(words: str) -> str:
        return hashlib.sha256(" ".join(words.split()).lower().encode("utf-8")).hexdigest()[:32]

    return fingerprint(text.split("\n", 1)[0]) in CANNED_PROMPTS or fingerprint(text) in CANNED_MESSAGES


def _clean(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    text = _strip_injected(value).strip()
    return text or None


def read_turns(path: str | os.PathLike[str], *, start: int = 0) -> list[Turn]:
    return _scan(path, max(start, 0))[0]


def last_turn_index(path: str | os.PathLike[str]) -> int:
    return _scan(path, 1 << 62)[1] - 1

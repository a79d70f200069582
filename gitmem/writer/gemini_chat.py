"""Read a Gemini CLI chat recording (`~/.gemini/tmp/<project>/chats/session-*.json`) into the same
turns as a Claude Code transcript (gitmem.writer.transcript.Turn).

One JSON document, rewritten as the session goes (not appended line by line):
`{"sessionId", "projectHash", "startTime", "lastUpdated", "messages": [...]}`. Each message has
an `id`, a `timestamp`, a `type` and its `content`:

- `user`: what the developer typed (a string, or a list of parts whose `text` pieces are joined);
- `gemini`: the model's visible reply (its `thoughts`, `toolCalls` and `tokens` are not text for
  the judge);
- `info`, `error`, `warning`: the CLI's own notices, never a turn.

A turn: each `user` message, with the `gemini` text up to the next one. Slash commands (`/memory
show`) and shell-mode lines (`!ls`) are instructions to the CLI, not statements to judge; gitmem's
own hook context (`<gitmem-context>…</gitmem-context>`, which Gemini may record with the prompt it
was added to) and other injected blocks are stripped as for Claude Code. A file that does not
parse (caught mid-rewrite) reads as no turns; the next event reads it again.
"""

from __future__ import annotations

import json
import os

from gitmem.writer import transcript
from gitmem.writer.transcript import Turn

MAX_BYTES = 64 * 1024 * 1024  # a chat file larger than this is not read


def is_chat(path: str | os.PathLike[str]) -> bool:
    """Whether the file is a Gemini CLI chat recording: a `.json` file (Claude Code's transcripts and
    Codex's rollouts are `.jsonl`) holding one object with the session's id."""
    if not os.fspath(path).endswith(".json"):
        return False
    try:
        with open(path, "rb") as handle:
            head = handle.read(1024).lstrip()
    except OSError:
        return False
    return head.startswith(b"{") and b'"sessionId"' in head


def _text(content: object) -> str | None:
    """A message's text: a string, a part (`{"text": …}`) or a list of either."""
    parts = content if isinstance(content, list) else [content]
    pieces = [p if isinstance(p, str) else p.get("text") if isinstance(p, dict) else None for p in parts]
    text = transcript._strip_injected("".join(p for p in pieces if isinstance(p, str))).strip()
    return text or None


def _typed(text: str) -> bool:
    return not (text.startswith("!") or transcript._SLASH_COMMAND_RE.match(text))


def _scan(path: str | os.PathLike[str], start: int) -> tuple[list[Turn], int]:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError:
        return [], 0
    if len(raw) > MAX_BYTES:
        return [], 0
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nesting no recording has
        return [], 0
    messages = data.get("messages") if isinstance(data, dict) else None
    turns: list[Turn] = []
    count = 0
    user: tuple[int, str, str | None] | None = None  # index, text, timestamp of the open turn
    replies: list[str] = []

    def close() -> None:
        if user is not None:
            index, text, stamp = user
            said, cut_user = transcript._bound(text, transcript.USER_HEAD, transcript.USER_TAIL)
            reply, cut_reply = transcript._bound("\n\n".join(replies), transcript.ASSISTANT_HEAD,
                                                 transcript.ASSISTANT_TAIL)
            turns.append(Turn(index=index, user=said, assistant=reply, user_uuid=None, timestamp=stamp,
                              truncated=cut_user or cut_reply))

    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        kind = message.get("type")
        text = _text(message.get("content"))
        if kind == "user" and text is not None and _typed(text):
            close()
            stamp = message.get("timestamp")
            user = (count, text, stamp if isinstance(stamp, str) else None) if count >= start else None
            replies = []
            count += 1
        elif kind == "gemini" and user is not None and text is not None:
            replies.append(text)
    close()
    return turns, count


def read_turns(path: str | os.PathLike[str], *, start: int = 0) -> list[Turn]:
    return _scan(path, max(start, 0))[0]


def last_turn_index(path: str | os.PathLike[str]) -> int:
    return _scan(path, 1 << 62)[1] - 1

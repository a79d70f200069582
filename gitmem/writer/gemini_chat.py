"""Read a Gemini CLI chat recording (`~/.gemini/tmp/<project>/chats/session-*.jsonl`, or an older
CLI's `session-*.json`) into the same turns as a Claude Code transcript
(gitmem.writer.transcript.Turn).

The current CLI appends one JSON record per line: first the session's metadata (`sessionId`,
`projectHash`, `startTime`, …), then each message as it is recorded, again in full whenever it
changes (the latest record of an `id` is the message, in the place it first took), metadata
updates (`{"$set": {…}}`, which may replace the whole `messages` list), and rewinds
(`{"$rewindTo": ID}`: that message and every later one are gone; an unknown id clears them all).
The CLI replaces the list when it sets its history itself (after compressing it, when a session
starts): a message first seen there, never recorded on a line of its own, is the CLI's (the
compression's summary, the session's setup text), never typed; one with text ends the turn before
it, one without (a tool call's response the CLI recorded no line for) is no part of a turn, and the
prompts the new list leaves out (summarised) were typed all the same. The file grows with every
tool call (a changed message is recorded whole again), so it is streamed, keeping of each message
only what a turn needs.
An older CLI rewrote one JSON document: `{"sessionId", "projectHash", …, "messages": [...]}`
(a resumed session moves to the line format). Each message has an `id`, a `timestamp`, a `type`
and its `content`:

- `user`: what the developer typed (`displayContent` where recorded; else a string, or a list of
  parts: the typed text, then the CLI's additions, `@path` files and hooks' context);
- `gemini`: the model's visible reply (its `thoughts`, `toolCalls` and `tokens` are not text for
  the judge);
- `info`, `error`, `warning`: the CLI's own notices, never a turn.

A turn: each `user` message, with the `gemini` text up to the next one. Not the messages the CLI
sends itself to keep a turn going ("Please continue." after its next-speaker check, its loop
recovery): it records them as `user` messages, with the developer's prompt as what it displays;
their reply belongs to the turn before. Slash commands
(`/memory show`) and shell-mode lines (`!ls`) are instructions to the CLI, not statements to judge;
gitmem's own hook context (`<gitmem-context>…</gitmem-context>`, which Gemini may record with the
prompt it was added to) and other injected blocks are stripped as for Claude Code. A document that does not
parse (caught mid-rewrite) reads as no turns, a line that does not (caught mid-append) is left
out; the next event reads the file again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

from gitmem.writer import transcript
from gitmem.writer.transcript import Turn

MAX_DOCUMENT_BYTES = 64 * 1024 * 1024  # an older CLI's one document larger than this is not read
_KEPT = ("id", "type", "timestamp", "displayContent", "content")  # what a turn reads of a message
_HISTORY = {"type": "history"}  # a message the CLI put in its history itself
# What the CLI sends on its own to keep a turn going: its next-speaker check, its loop recovery.
_CONTINUE = "Please continue."
_LOOP_RECOVERY = "System: Potential loop detected."


def is_chat(path: str | os.PathLike[str]) -> bool:
    """Whether the file is a Gemini CLI chat recording: a `.json` file holding one object with the
    session's id, or a `.jsonl` file whose first record is a session's metadata (its id and project
    hash: Claude Code's transcript records have no project hash, Codex's rollouts neither)."""
    name = os.fspath(path)
    if not name.endswith((".json", ".jsonl")):
        return False
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096).lstrip()
    except OSError:
        return False
    if name.endswith(".json"):
        return head.startswith(b"{") and b'"sessionId"' in head
    first = head.split(b"\n", 1)[0]
    return first.startswith(b"{") and b'"sessionId"' in first and b'"projectHash"' in first


def _replayed(lines: Iterable[bytes]) -> tuple[list[object], dict[str, object]]:
    """The messages of a line-format recording, as the CLI itself loads them, and every message
    ever recorded on a line of its own (rewound ones too) by id, in the order each first appeared."""
    messages: dict[str, object] = {}
    ever: dict[str, object] = {}
    for line in lines:
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue  # blank, or caught mid-append
        if not isinstance(record, dict):
            continue
        if isinstance(record.get("$rewindTo"), str):
            ids = list(messages)
            gone = ids[ids.index(record["$rewindTo"]):] if record["$rewindTo"] in ids else ids
            for key in gone:
                del messages[key]
        elif isinstance(record.get("id"), str):
            kept = {key: record[key] for key in _KEPT if key in record}
            messages[record["id"]] = kept  # a later record of the same id: in the place it took
            ever[record["id"]] = kept
        elif isinstance(record.get("$set"), dict) and isinstance(record["$set"].get("messages"), list):
            # The prompts it leaves out were still typed (compression summarised them): they stay.
            for n, message in enumerate(record["$set"]["messages"]):
                named = message.get("id") if isinstance(message, dict) else None
                if isinstance(named, str) and named in ever:
                    continue
                # A text (summary, setup) answers no typed prompt; a tool call's response, recorded on no
                # line by some CLIs, is part of the turn it was made in: left out, the reply goes on.
                if isinstance(message, dict) and _text(message.get("content")) is None:
                    continue
                messages.setdefault(named if isinstance(named, str) else f"$set {len(messages)} {n}", _HISTORY)
    return list(messages.values()), ever


def _text(content: object) -> str | None:
    """A message's text: a string, a part (`{"text": …}`) or a list of either."""
    parts = content if isinstance(content, list) else [content]
    pieces = [p if isinstance(p, str) else p.get("text") if isinstance(p, dict) else None for p in parts]
    text = transcript._strip_injected("".join(p for p in pieces if isinstance(p, str))).strip()
    return text or None


def _typed(text: str) -> bool:
    return not (text.startswith("!") or transcript._SLASH_COMMAND_RE.match(text))


def _scan(path: str | os.PathLike[str], start: int) -> tuple[list[Turn], int]:
    messages: object
    numbers: dict[str, int] = {}  # message id of a typed prompt -> its turn index
    try:
        with open(path, "rb") as handle:
            if os.fspath(path).endswith(".jsonl"):
                messages, ever = _replayed(handle)
                sent_by_cli = _continuations(ever.values())
                # A turn keeps the number it was first recorded with: one typed after a rewind comes
                # after every turn the writer may already have judged, not in the place of the rewound ones.
                numbers = {key: n for n, key in enumerate(k for k, m in ever.items()
                                                          if _prompt(m) is not None and k not in sent_by_cli)}
            else:
                raw = handle.read(MAX_DOCUMENT_BYTES + 1)
                if len(raw) > MAX_DOCUMENT_BYTES:
                    return [], 0
                try:
                    data = json.loads(raw)
                except (ValueError, RecursionError):  # RecursionError: nesting no recording has
                    return [], 0
                messages = data.get("messages") if isinstance(data, dict) else None
                sent_by_cli = _continuations(messages if isinstance(messages, list) else [])
    except OSError:
        return [], 0
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
        if (text := _prompt(message)) is not None and str(message.get("id")) not in sent_by_cli:
            close()
            index = numbers.get(str(message.get("id")), count)
            stamp = message.get("timestamp")
            user = (index, text, stamp if isinstance(stamp, str) else None) if index >= start else None
            replies = []
            count += 1
        elif message is _HISTORY:  # what follows it answers no typed turn of this reading
            close()
            user = None
        elif message.get("type") == "gemini" and user is not None and (text := _text(message.get("content"))):
            replies.append(text)
    close()
    return turns, max(count, len(numbers))


def _prompt(message: object) -> str | None:
    """The text of a prompt the developer typed (None for anything else): what the CLI displays
    of it (`displayContent`) where it is recorded, else the first part of its content with text
    once gitmem's own context is stripped. The parts after it are the CLI's additions, never
    typed: the files an `@path` names (`--- Content from referenced files ---` …) and other
    hooks' context, which Gemini appends."""
    if not isinstance(message, dict) or message.get("type") != "user":
        return None
    shown = message.get("displayContent")
    text = _sent(message) if shown is None else _text(shown)
    return text if text is not None and _typed(text) else None


def _sent(message: dict[str, object]) -> str | None:
    """What the CLI sent of a `user` message: the first part of its content with text."""
    content = message.get("content")
    if isinstance(content, list):
        content = next(([part] for part in content if _text(part) is not None), [])
    return _text(content)


def _continuations(messages: Iterable[object]) -> set[str]:
    """Ids of the `user` messages the CLI sent itself to keep the turn before going: its own
    continuation texts, recorded as displaying the developer's prompt, or with nothing displayed
    (ACP, context management); a developer who typed "Please continue." is only told from them by
    what the CLI displays. An AfterAgent hook's reason to go on is not told from a prompt the
    developer rewound and sent again (both display a prompt seen before): it stays a turn, whose
    words, judged again, record nothing new."""
    found: set[str] = set()
    for message in messages:
        if not isinstance(message, dict) or (shown := _prompt(message)) is None:
            continue
        sent = _sent(message) or ""
        own = sent == _CONTINUE or sent.startswith(_LOOP_RECOVERY)
        if own and (message.get("displayContent") is None or sent != shown) and isinstance(message.get("id"), str):
            found.add(message["id"])
    return found


def read_turns(path: str | os.PathLike[str], *, start: int = 0) -> list[Turn]:
    return _scan(path, max(start, 0))[0]


def last_turn_index(path: str | os.PathLike[str]) -> int:
    return _scan(path, 1 << 62)[1] - 1

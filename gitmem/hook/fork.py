"""What a forked conversation already holds: gitmem's context blocks in its transcript.

A session started with SessionStart source `fork` continues a copy of another conversation,
under a new session id: the copy carries every `<gitmem-context>` block the parent was given,
so those entries are in context already. They are read back from the transcript (entry ids
end every entry line, see gitmem.delivery.rules.entry_line; a withdrawal line says "This no
longer holds"), and only what is not among them is delivered.

Only what the conversation still holds counts: nothing before its last compaction (the context
then kept only a summary), and only blocks the harness recorded as a hook's: an `attachment`
record of a hook's context, or a reminder the harness labels "<Event> hook additional
context:" in a message of its own. Never text the agent wrote, a file or command output it read
(a tool result, a running command's progress), or a queued prompt: anyone can plant a block
there naming an entry's id, and its label with it, to keep that entry from the fork.

Standard library only, no `re`: records are found in the raw bytes and only those holding a
block are parsed, which is fast enough for the one call per fork. Of a transcript over
MAX_BYTES, the end is read.
"""

from __future__ import annotations

import os

OPEN_TAG, CLOSE_TAG = b"<gitmem-context>", b"</gitmem-context>"
OPEN_TAGS = (OPEN_TAG, b"\\u003cgitmem-context\\u003e")  # as found in a record's raw JSON, escaped or not
WITHDRAWN = b"This no longer holds"
# JSON as Claude Code writes it (compact), and with the spaces other writers put after colons
COMPACTED = (b'"subtype":"compact_boundary"', b'"subtype": "compact_boundary"')
# A hook's context as the harness records it: not "hook_success", which records any hook's output
# (a developer's lint hook printing a file the agent wrote) whether the model saw it or not.
HOOK_ATTACHMENTS = ("hook_additional_context",)
HOOK_LABEL = " hook additional context: "  # "<system-reminder>\nPreToolUse:Read hook additional context: …"
REMINDER = "<system-reminder>"
MAX_BYTES = 64 * 1024 * 1024
MAX_BLOCK = 64 * 1024
_HEX = frozenset(b"0123456789abcdef")
_DIGITS = frozenset(b"0123456789")


def seen(transcript: str) -> tuple[set[str], set[str]] | None:
    """(ids delivered as facts, ids announced as withdrawn) in the transcript's gitmem blocks;
    None when the transcript cannot be read."""
    try:
        with open(transcript, "rb") as handle:
            # The end is what the conversation holds now: a long one's last compaction lies there.
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_BYTES:
                handle.seek(size - MAX_BYTES)
                data = handle.read(MAX_BYTES)
                data = data[data.find(b"\n") + 1:]  # from the first whole record
            else:
                data = handle.read(MAX_BYTES)
    except (OSError, TypeError, ValueError):
        return None
    compacted = max(data.rfind(mark) for mark in COMPACTED)
    if compacted >= 0:
        after = data.find(b"\n", compacted)
        data = data[after + 1:] if after >= 0 else b""
    delivered: set[str] = set()
    withdrawn: set[str] = set()
    for record in data.split(b"\n"):
        if not any(tag in record for tag in OPEN_TAGS):
            continue
        for text in _hook_texts(record):
            for line in text.splitlines():  # decoded: its line breaks are real
                for entry_id in _ids(line):
                    (withdrawn if WITHDRAWN in line else delivered).add(entry_id)
    return delivered, withdrawn


def _hook_texts(record: bytes) -> list[bytes]:
    """The texts of `record` the harness recorded as a hook's, each cut to its gitmem blocks."""
    import json

    try:
        data = json.loads(record)
    except ValueError:
        return []
    if not isinstance(data, dict):
        return []
    texts: list[str] = []
    if data.get("type") == "attachment":
        attachment = data.get("attachment")
        if isinstance(attachment, dict) and attachment.get("type") in HOOK_ATTACHMENTS:
            content = attachment.get("content")
            texts = [c for c in (content if isinstance(content, list) else [content]) if isinstance(c, str)]
    elif data.get("type") == "user" and not data.get("toolUseResult") and not data.get("isSidechain"):
        message = data.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        items: list[object] = [content] if isinstance(content, str) else []
        if isinstance(content, list):
            items = [item.get("text") for item in content if isinstance(item, dict) and item.get("type") == "text"]
        texts = [text for text in items if isinstance(text, str) and _labelled(text)]
    blocks = []
    for text in texts:
        raw = text.encode("utf-8", "surrogatepass")
        start = raw.find(OPEN_TAG)
        while start >= 0:
            end = raw.find(CLOSE_TAG, start, start + MAX_BLOCK)
            blocks.append(raw[start:end if end >= 0 else start + MAX_BLOCK])
            start = raw.find(OPEN_TAG, start + len(OPEN_TAG))
    return blocks


def _labelled(text: str) -> bool:
    """Whether `text` is a reminder the harness labels as a hook's context: it opens with the
    reminder tag and, on the next line, "<Event>[:<Tool>] hook additional context: "."""
    head = text.lstrip()
    if not head.startswith(REMINDER):
        return False
    label = head[len(REMINDER):].lstrip("\n").split("\n", 1)[0]
    event = label.split(HOOK_LABEL, 1)[0] if HOOK_LABEL in label else ""
    return bool(event) and " " not in event


def _ids(line: bytes) -> list[str]:
    """Entry ids written as `[YYYYMMDD-xxxxxxxx]` in the line."""
    found = []
    pos = line.find(b"[")
    while pos >= 0:
        candidate = line[pos + 1:pos + 18]
        if (len(candidate) == 17 and line[pos + 18:pos + 19] == b"]" and candidate[8:9] == b"-"
                and all(c in _DIGITS for c in candidate[:8]) and all(c in _HEX for c in candidate[9:])):
            found.append(candidate.decode("ascii"))
        pos = line.find(b"[", pos + 1)
    return found

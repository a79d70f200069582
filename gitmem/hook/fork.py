"""What a forked conversation already holds: gitmem's context blocks in its transcript.

A session started with SessionStart source `fork` continues a copy of another conversation,
under a new session id: the copy carries every `<gitmem-context>` block the parent was given,
so those entries are in context already. They are read back from the transcript (entry ids
end every entry line, see gitmem.delivery.rules.entry_line; a withdrawal line says "This no
longer holds"), and only what is not among them is delivered.

Only what the conversation still holds counts: nothing before its last compaction (the context
then kept only a summary), and only blocks a hook put there: not text the agent wrote, nor a
file or command output it read (a tool result), where anyone could plant a block naming an
entry's id to keep that entry from the fork, unless the harness marked the block as a hook's
("… hook additional context: <gitmem-context>").

Standard library only, no `re` or `json`: the blocks are found in the raw bytes (as written in
the JSONL, with newlines escaped or not), which is fast enough for the one call per fork. Of a
transcript over MAX_BYTES, the end is read.
"""

from __future__ import annotations

import os

OPEN_TAGS = (b"<gitmem-context>", b"\\u003cgitmem-context\\u003e")
CLOSE_TAGS = (b"</gitmem-context>", b"\\u003c/gitmem-context\\u003e")
WITHDRAWN = b"This no longer holds"
# JSON as Claude Code writes it (compact), and with the spaces other writers put after colons
COMPACTED = (b'"subtype":"compact_boundary"', b'"subtype": "compact_boundary"')
AGENT_TEXT = (b'"role":"assistant"', b'"role": "assistant"')  # what the agent wrote, not what a hook gave it
TOOL_RESULT = (b'"toolUseResult"', b'"type":"tool_result"', b'"type": "tool_result"')  # files and output it read
HOOK_MARK = b"hook additional context"  # the harness's own label for a hook's context
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
        if not any(tag in record for tag in OPEN_TAGS) or any(mark in record for mark in AGENT_TEXT):
            continue
        from_tool = any(mark in record for mark in TOOL_RESULT)
        for open_tag, close_tag in zip(OPEN_TAGS, CLOSE_TAGS, strict=True):
            start = record.find(open_tag)
            while start >= 0:
                if not from_tool or HOOK_MARK in record[max(0, start - 200):start]:
                    end = record.find(close_tag, start, start + MAX_BLOCK)
                    for line in _lines(record[start:end if end >= 0 else start + MAX_BLOCK]):
                        for entry_id in _ids(line):
                            (withdrawn if WITHDRAWN in line else delivered).add(entry_id)
                start = record.find(open_tag, start + len(open_tag))
    return delivered, withdrawn


def _lines(block: bytes) -> list[bytes]:
    """The block's lines, whether its newlines are real or JSON-escaped."""
    return block.replace(b"\\r\\n", b"\n").replace(b"\\n", b"\n").split(b"\n")


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

"""What a forked conversation already holds: gitmem's context blocks in its transcript.

A session started with SessionStart source `fork` continues a copy of another conversation,
under a new session id: the copy carries every `<gitmem-context>` block the parent was given,
so those entries are in context already. They are read back from the transcript (entry ids
end every entry line, see gitmem.delivery.rules.entry_line; a withdrawal line says "This no
longer holds"), and only what is not among them is delivered.

Standard library only, no `re` or `json`: the blocks are found in the raw bytes (as written in
the JSONL, with newlines escaped or not), which is fast enough for the one call per fork.
"""

from __future__ import annotations

OPEN_TAGS = (b"<gitmem-context>", b"\\u003cgitmem-context\\u003e")
CLOSE_TAGS = (b"</gitmem-context>", b"\\u003c/gitmem-context\\u003e")
WITHDRAWN = b"This no longer holds"
MAX_BYTES = 64 * 1024 * 1024
MAX_BLOCK = 64 * 1024
_HEX = frozenset(b"0123456789abcdef")
_DIGITS = frozenset(b"0123456789")


def seen(transcript: str) -> tuple[set[str], set[str]] | None:
    """(ids delivered as facts, ids announced as withdrawn) in the transcript's gitmem blocks;
    None when the transcript cannot be read."""
    try:
        with open(transcript, "rb") as handle:
            data = handle.read(MAX_BYTES)
    except (OSError, TypeError, ValueError):
        return None
    delivered: set[str] = set()
    withdrawn: set[str] = set()
    for open_tag, close_tag in zip(OPEN_TAGS, CLOSE_TAGS, strict=True):
        start = data.find(open_tag)
        while start >= 0:
            end = data.find(close_tag, start, start + MAX_BLOCK)
            block = data[start:end if end >= 0 else start + MAX_BLOCK]
            for line in _lines(block):
                for entry_id in _ids(line):
                    (withdrawn if WITHDRAWN in line else delivered).add(entry_id)
            start = data.find(open_tag, start + len(open_tag))
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

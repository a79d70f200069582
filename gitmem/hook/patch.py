"""The files a Codex `apply_patch` call touches, read from the patch text.

Codex hands its hooks the patch as `tool_input.command` (the same shape as a shell command):

    *** Begin Patch
    *** Update File: src/app.py
    *** Move to: src/main.py
    @@ def greet():
    -print("Hi")
    +print("Hello")
    *** Add File: docs/new.md
    +text
    *** Delete File: old.txt
    *** End Patch

Each `*** Update File:`, `*** Add File:` and `*** Delete File:` line names one file (relative to
the session's cwd, or absolute). For an update, the hunk lines that must already be in the file
(context ` ` and removed `-` lines) are kept per hunk, so the hook can find where in the file
the patch lands, as it does with an Edit's `old_string`.

Standard library only, no `re`: imported by the hook, and only when a patch arrives.
"""

from __future__ import annotations

UPDATE = "*** Update File:"
ADD = "*** Add File:"
DELETE = "*** Delete File:"
MOVE = "*** Move to:"
END_OF_FILE = "*** End of File"


class FileChange:
    """One file of a patch: the operation, the path as written, the old text of each hunk."""

    __slots__ = ("hunks", "moved_to", "news", "op", "path", "seeks")

    def __init__(self, op: str, path: str) -> None:
        self.op = op  # "update", "add" or "delete"
        self.path = path
        self.moved_to: str | None = None
        self.hunks: list[str] = []  # per hunk: its context and removed lines, as in the file ("": none)
        self.news: list[str] = []  # per hunk: its context and added lines (an added file: its text, one)
        self.seeks: list[str] = []  # per hunk: the line its `@@ …` header names, found first ("": none)

    def __repr__(self) -> str:
        return f"FileChange({self.op!r}, {self.path!r}, hunks={len(self.hunks)})"


def parse(text: str) -> list[FileChange]:
    """The file operations of a patch in order; lines outside any file section are ignored."""
    changes: list[FileChange] = []
    current: FileChange | None = None
    hunk: list[str] | None = None
    new: list[str] = []
    seek = ""

    def close_hunk() -> None:
        nonlocal hunk, new, seek
        if current is not None and current.op == "add" and new:
            current.news.append("\n".join(new) + "\n")  # the added file's text, joined once
        elif current is not None and hunk is not None:
            current.seeks.append(seek)
            while hunk and not hunk[-1]:
                hunk.pop()
            while new and not new[-1]:
                new.pop()
            # "": a hunk that only adds lines; where it lands is not known from its text alone
            current.hunks.append("\n".join(hunk) + "\n" if hunk else "")
            current.news.append("\n".join(new) + "\n" if new else "")
        hunk, new, seek = None, [], ""

    for line in text.replace("\r\n", "\n").split("\n"):
        header = _header(line.strip())  # Codex reads its markers with padding around them too
        if header is not None:
            close_hunk()
            op, path = header
            if op == "move":
                if current is not None and path:
                    current.moved_to = path
                continue
            current = FileChange(op, path) if path else None
            if current is not None:
                changes.append(current)
            continue
        if line.strip().startswith("***"):  # Begin/End Patch, End of File
            close_hunk()
            continue
        if current is not None and current.op == "add" and line[:1] == "+":
            new.append(line[1:])
        if current is None or current.op != "update":
            continue
        if line.startswith("@@"):
            close_hunk()
            hunk, seek = [], line[2:].strip()
            continue
        if line[:1] in (" ", "-", "+"):
            if hunk is None:
                hunk = []  # a hunk without its @@ line (tolerated by Codex)
            if line[:1] != "+":
                hunk.append(line[1:])
            if line[:1] != "-":
                new.append(line[1:])
        elif line == "" and hunk is not None:
            hunk.append("")
            new.append("")
    close_hunk()
    return changes


def applied(before: str, change: FileChange) -> str | None:
    """The file's text after `change` (an added file's text; an update's hunks in order, each where
    its old lines first stand whole after the hunk before, as Codex applies them), or None where a
    hunk's old lines are not there or say nowhere."""
    if change.op == "add":
        return change.news[0] if change.news else ""
    text = "\n" + before.replace("\r\n", "\n")
    ends = text.endswith("\n")
    text += "" if ends else "\n"  # a last line without its line break still matches one
    at = 0
    for old, new, seek in zip(change.hunks, change.news, change.seeks, strict=True):
        if seek:  # `@@ def f():` finds that line first; the hunk stands after it
            lines = text[at:].split("\n")
            index = next((n for n, line in enumerate(lines) if line.strip() == seek), None)
            if index is None:
                return None
            at += sum(len(line) + 1 for line in lines[:index + 1]) - 1
        found = text.find("\n" + old, at) if old else -1
        if found < 0:
            return None
        text = text[:found + 1] + new + text[found + 1 + len(old):]
        at = found + len(new)
    return text[1:] if ends else text[1:-1]


def _header(line: str) -> tuple[str, str] | None:
    for prefix, op in ((UPDATE, "update"), (ADD, "add"), (DELETE, "delete"), (MOVE, "move")):
        if line.startswith(prefix):
            return op, line[len(prefix):].strip()
    return None


def in_shell_command(command: str) -> str | None:
    """The patch of `apply_patch <<'EOF' … EOF` run through the shell tool (Codex applies it
    itself, as its patch tool would, and tells its hooks it was Bash), or None."""
    begin = command.find("*** Begin Patch")
    if begin >= 0 and ("apply_patch" in command[:begin] or "applypatch" in command[:begin]):
        return command[begin:]
    return None


def paths(text: str) -> list[str]:
    """Every file the patch names (sources and move targets), each once, in order."""
    found: list[str] = []
    for change in parse(text):
        for path in (change.path, change.moved_to):
            if path and path not in found:
                found.append(path)
    return found

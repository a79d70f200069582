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

    __slots__ = ("ends", "hunks", "moved_to", "news", "op", "path", "seeks", "tails")

    def __init__(self, op: str, path: str) -> None:
        self.op = op  # "update", "add" or "delete"
        self.path = path
        self.moved_to: str | None = None
        self.hunks: list[str] = []  # per hunk: its context and removed lines, as in the file ("": none)
        self.news: list[str] = []  # per hunk: its context and added lines (an added file: its text, one)
        self.seeks: list[str] = []  # per hunk: the line its `@@ …` header names, found first ("": none)
        self.ends: list[bool] = []  # per hunk: marked `*** End of File` (its old lines end the file)
        self.tails: list[tuple[int, int]] = []  # per hunk: blank lines ending its old and new lines, left out above

    def __repr__(self) -> str:
        return f"FileChange({self.op!r}, {self.path!r}, hunks={len(self.hunks)})"


def parse(text: str) -> list[FileChange]:
    """The file operations of a patch in order; lines outside any file section are ignored."""
    changes: list[FileChange] = []
    current: FileChange | None = None
    hunk: list[str] | None = None
    new: list[str] = []
    seek = ""

    def close_hunk(at_end: bool = False) -> None:
        nonlocal hunk, new, seek
        if current is not None and current.op == "add" and new:
            current.news.append("\n".join(new) + "\n")  # the added file's text, joined once
        elif current is not None and hunk is not None:
            current.seeks.append(seek)
            current.ends.append(at_end)
            old_tail = new_tail = 0
            while hunk and not hunk[-1]:
                hunk.pop()
                old_tail += 1
            while new and not new[-1]:
                new.pop()
                new_tail += 1
            current.tails.append((old_tail, new_tail))
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
            close_hunk(at_end=line.strip() == END_OF_FILE)
            continue
        if current is not None and current.op == "add" and line[:1] == "+":
            new.append(line[1:])
        if current is None or current.op != "update":
            continue
        if line.startswith("@@"):
            close_hunk()
            # as Codex reads it: the text after `@@ ` as it stands, its spaces included
            hunk, seek = [], line[3:] if line.startswith("@@ ") else line[2:].strip()
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
    """The file's text after `change` as Codex applies it (an added file's text; an update's
    hunks in order), or None where Codex would refuse it (a hunk's lines are not there) or where
    it lands cannot be told from here (a hunk that only adds lines).

    Codex finds each hunk's `@@` line, then its old lines, from where the hunk before ended (a
    hunk marked `*** End of File`, at the file's end), trying every place with the lines equal
    before any where they are equal but for trailing spaces, and those before any where they are
    equal but for the spaces around them: read otherwise (the first place equal but for spaces),
    a patch could change one line here and another in the file Codex writes."""
    if change.op == "add":
        return change.news[0] if change.news else ""
    lines = before.replace("\r\n", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    at = 0
    replacements: list[tuple[int, int, list[str]]] = []
    for old, new, seek, at_end, (old_tail, new_tail) in zip(change.hunks, change.news, change.seeks, change.ends,
                                                            change.tails, strict=True):
        if seek:
            found = _seek(lines, [seek], at, False)
            if found is None:
                return None
            at = found + 1
        if not old:
            return None  # Codex puts such a hunk at the file's end, whatever its `@@` line says
        # its lines as Codex keeps them, blank ones at the end included; where they are not there,
        # Codex tries again without the last blank one (of its old lines and, if blank, its new)
        pattern = old[:-1].split("\n") + [""] * old_tail
        added = (new[:-1].split("\n") if new else []) + [""] * new_tail
        found = _seek(lines, pattern, at, at_end)
        if found is None and old_tail:
            pattern, added = pattern[:-1], added[:-1] if new_tail else added
            found = _seek(lines, pattern, at, at_end)
        if found is None:
            return None
        replacements.append((found, len(pattern), added))
        at = found + len(pattern)
    for start, length, added in reversed(replacements):
        lines[start:start + length] = added
    return "\n".join(lines) + "\n"


def _seek(lines: list[str], pattern: list[str], start: int, at_end: bool) -> int | None:
    """Where `pattern` first stands in `lines` from `start` (at the end: only there), by Codex's
    order: equal, then equal but for trailing spaces, then but for spaces around each line."""
    if len(pattern) > len(lines):
        return None
    first = len(lines) - len(pattern) if at_end else start
    for same in (str.__str__, str.rstrip, str.strip):
        wanted = [same(p) for p in pattern]
        for i in range(first, len(lines) - len(pattern) + 1):
            if all(same(lines[i + k]) == wanted[k] for k in range(len(pattern))):
                return i
    return None


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


def shell_folder(command: str) -> str:
    """The folder a patch run through the shell tool applies in: `cd DIR && apply_patch <<'EOF'`
    (the one form Codex reads so) names DIR, relative to the session's folder; "" for none."""
    begin = command.find("*** Begin Patch")
    head = command[:begin if begin >= 0 else len(command)]
    at = min((i for i in (head.find("apply_patch"), head.find("applypatch")) if i >= 0), default=-1)
    before = head[:at].strip() if at >= 0 else ""
    if not before.endswith("&&"):
        return ""
    import shlex  # only for a patch given to the shell

    try:
        words = shlex.split(before[:-2])
    except ValueError:
        return ""
    return words[1] if len(words) == 2 and words[0] == "cd" else ""


def paths(text: str) -> list[str]:
    """Every file the patch names (sources and move targets), each once, in order."""
    found: list[str] = []
    for change in parse(text):
        for path in (change.path, change.moved_to):
            if path and path not in found:
                found.append(path)
    return found

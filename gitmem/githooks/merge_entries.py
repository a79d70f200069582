"""git merge driver for entry files (`.gitmem/entries/*.yaml`): one event recorded on both sides.

The hooks stamp what they do with the time they do it: a retirement's `revocation.at`, each
automatic re-anchoring's `moves[].at`. When two branches remove (or move) the same declaration,
each branch's pre-commit records the same retirement (or move) at its own time, and git's text
merge conflicts on that one timestamp line although both sides agree.

Why a merge driver rather than a deterministic note: the time is the only part of the note that
two independent commits cannot agree on (neither exists when the other is made, and dropping the
time would lose what reviewers read and leave every existing entry conflicting as before). So the
note stays as it is, and this driver reconciles it: a revocation note, or a move, that both sides
added or changed and that is equal on both sides except for its `at:` takes the earlier time on
both; then git's own 3-way text merge (`git merge-file`) merges the files. Nothing else is
rewritten: any other difference merges, or conflicts with markers, exactly as it would without
this driver; on any error the files are merged as they came.

One disagreement between hooks is settled too: one branch's pre-commit retired the entry (its
declaration was gone there) while the other's moved it, or both retired it with different notes.
Which is true is decided by the merged code, and the hooks re-check it after the merge: so the
side that moved the entry is taken (a move proves the declaration lives on; post-merge retires
the entry if the merged code lost it after all), or of two retirements the one that followed the
entry's later move, or the earlier. The other side's file gives way only when the hooks' fields
(`status`, `anchor`, `moves`, `revocation`) are all it changed; a developer's `gitmem revoke`
or hand edit always reaches a person as a conflict where the other side changed the entry too
(a revocation on one side and the rule reworded on the other merge, line by line, cleanly: the
driver writes them as a conflict of the whole file).

Configured by gitmem.githooks.install (gitmem.git.merge_driver_command) to run
``python -I -m gitmem.githooks.merge_entries %O %A %B %L %P [%S %X %Y]``, or `git merge-file` when
that interpreter is gone: it writes the result to %A and exits 0 when clean, 1 with conflict
markers. Standard library only.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import tempfile
from typing import NamedTuple

from gitmem.base.files import utc_seconds
from gitmem.store.entry import RETIRED_NOTE

# The records whose `at:` is the time a hook did something (gitmem.store.entry: Entry.revoked,
# Entry.reanchored) are the top-level `revocation` mapping and the items of the `moves` list.
_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:")
_AT = re.compile(r"^(\s*(?:-\s+)?)at\s*:\s*(.*?)\s*$")
_ITEM = re.compile(r"^(\s*)-(\s|$)")


class Record(NamedTuple):
    at_line: int  # index into the file's lines of the `at:` line
    at: str  # its value as written
    rest: tuple[str, ...]  # the record's lines, the `at:` value blanked out


def _strip(line: str) -> str:
    return line.rstrip("\r\n")


def _blocks(lines: list[str]) -> dict[str, tuple[int, int]]:
    """Top-level key -> (first, end) line range of its value (the lines after the key's line)."""
    found: dict[str, tuple[int, int]] = {}
    i = 0
    while i < len(lines):
        match = _KEY.match(lines[i])
        if not match:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and (lines[j][:1] in (" ", "\t", "-") or not _strip(lines[j]).strip()
                                  or lines[j].startswith("#")):
            j += 1
        found.setdefault(match.group(1), (i + 1, j))
        i = j
    return found


def _record(lines: list[str], first: int, end: int) -> Record | None:
    """The record in lines[first:end], keyed on its own `at:` (the least indented one)."""
    best: tuple[int, int] | None = None  # (indent, line)
    for n in range(first, end):
        match = _AT.match(_strip(lines[n]))
        if match:
            indent = len(match.group(1))
            if best is None or indent < best[0]:
                best = (indent, n)
    if best is None:
        return None
    n = best[1]
    match = _AT.match(_strip(lines[n]))
    assert match is not None
    rest = tuple(match.group(1) + "at:" if k == n else _strip(lines[k]) for k in range(first, end))
    return Record(n, match.group(2), rest)


def records(text: str) -> dict[str, Record]:
    """{"revocation": ..., "moves[0]": ..., ...}: the stamped records of an entry file as written by
    gitmem (block style); a record not found this way is simply not reconciled."""
    lines = text.splitlines(keepends=True)
    found: dict[str, Record] = {}
    blocks = _blocks(lines)
    if "revocation" in blocks:
        record = _record(lines, *blocks["revocation"])
        if record is not None:
            found["revocation"] = record
    if "moves" in blocks:
        first, end = blocks["moves"]
        starts = []
        dash: int | None = None
        for n in range(first, end):
            match = _ITEM.match(lines[n])
            if match and (dash is None or len(match.group(1)) == dash):
                dash = len(match.group(1))
                starts.append(n)
        for i, start in enumerate(starts):
            record = _record(lines, start, starts[i + 1] if i + 1 < len(starts) else end)
            if record is not None:
                found[f"moves[{i}]"] = record
    return found


def _when(value: str) -> float | None:
    return utc_seconds(value.strip().strip("'\""))


def reconcile(base: str, ours: str, theirs: str) -> tuple[str, str]:
    """`ours` and `theirs` with each stamped record that both sides added or changed, and that is
    equal on both but for its time, given the earlier of the two times on both sides."""
    o, a, b = records(base), records(ours), records(theirs)
    ours_lines, theirs_lines = ours.splitlines(keepends=True), theirs.splitlines(keepends=True)
    for name, mine in a.items():
        other = b.get(name)
        if other is None or mine.rest != other.rest or mine.at == other.at:
            continue
        old = o.get(name)
        if old is not None and (old.rest, old.at) in ((mine.rest, mine.at), (other.rest, other.at)):
            continue  # one side left it as it was: the other side's change merges on its own
        mine_when, other_when = _when(mine.at), _when(other.at)
        if mine_when is None or other_when is None:
            continue
        if other_when < mine_when:
            ours_lines[mine.at_line] = _with_ending(theirs_lines[other.at_line], ours_lines[mine.at_line])
        else:
            theirs_lines[other.at_line] = _with_ending(ours_lines[mine.at_line], theirs_lines[other.at_line])
    return "".join(ours_lines), "".join(theirs_lines)


HOOK_FIELDS = ("status", "anchor", "moves", "revocation")
# What a rule says and when it holds: a team's own keys beside them (`reviewed_by:`) say nothing of it.
RULE_FIELDS = ("kind", "body", "triggers", "expires", "supersedes")
_RETIRED_SAYS = RETIRED_NOTE.split("{anchor}")


def _field(text: str, key: str) -> list[str]:
    """A top-level field's lines, its key's line first ([] when absent)."""
    lines = text.splitlines(keepends=True)
    first, end = _blocks(lines).get(key, (0, 0))
    return lines[first - 1:end] if first else []


def _status(text: str) -> str:
    """The entry's status as it loads: `active` where the file names none, a comment left out."""
    line = _strip("".join(_field(text, "status")[:1]))
    value = line.partition(":")[2].partition(" #")[0].strip().strip("'\"")
    return value or "active"


def _retired_by_hook(text: str) -> bool:
    note = " ".join(_strip(line).strip() for line in _field(text, "revocation"))
    return _status(text) == "revoked" and all(part.strip() in note for part in _RETIRED_SAYS)


def _rest(text: str) -> list[str]:
    """The file's lines outside the hooks' fields."""
    lines = text.splitlines(keepends=True)
    hooks: set[int] = set()
    for key, (first, end) in _blocks(lines).items():
        if key in HOOK_FIELDS:
            hooks.update(range(first - 1, end))
    return [_strip(line) for n, line in enumerate(lines) if n not in hooks]


def _moves(text: str) -> int:
    return sum(name.startswith("moves[") for name in records(text))


def _revoked_at(text: str) -> float:
    record = records(text).get("revocation")
    when = _when(record.at) if record else None
    return math.inf if when is None else when


def settle(base: str, ours: str, theirs: str) -> tuple[str, str]:
    """`ours` and `theirs`, the side that gives way (see the module's note) made a copy of the
    other; unchanged when the hooks did not disagree on an entry active in `base`."""
    if _status(base) != "active" or _field(base, "revocation"):
        return ours, theirs
    sides = (ours, theirs)
    retired = [_retired_by_hook(t) for t in sides]
    moved = [_status(t) == "active" and _moves(t) > _moves(base) for t in sides]
    if retired[0] and retired[1]:
        winner = min((0, 1), key=lambda k: (-_moves(sides[k]), _revoked_at(sides[k])))
    elif (retired[0] and moved[1]) or (retired[1] and moved[0]):
        winner = 0 if moved[0] else 1
    else:
        return ours, theirs
    if _rest(sides[1 - winner]) != _rest(base):
        return ours, theirs
    return sides[winner], sides[winner]


def _withdrawn_against_an_edit(base: str, ours: str, theirs: str) -> bool:
    """One side's developer withdrew the entry (`gitmem revoke`, a replacement: not a hook's
    retirement) while the other changed what it says: merged line by line, the withdrawal would
    stand, with its reason, for words its author never saw."""
    if _status(base) != "active":
        return False
    for one, other in ((ours, theirs), (theirs, ours)):
        if _status(one) != "active" and not _retired_by_hook(one) and _status(other) == "active" \
                and any(_field(other, key) != _field(base, key) for key in RULE_FIELDS):
            return True
    return False


def _whole_conflict(ours_path: str, ours: str, theirs: str, size: int, labels: tuple[str, str, str]) -> None:
    """Both sides in `ours_path` between conflict markers, as git writes a conflict."""
    def ended(text: str) -> str:
        return text if text.endswith("\n") or not text else text + "\n"

    text = (f"{'<' * size} {labels[0]}\n{ended(ours)}{'=' * size}\n{ended(theirs)}{'>' * size} {labels[2]}\n")
    with open(ours_path, "wb") as handle:
        handle.write(text.encode("utf-8", "surrogateescape"))


def _with_ending(line: str, like: str) -> str:
    """`line` with the line ending of `like` (the line it replaces)."""
    return _strip(line) + like[len(_strip(like)):]


def merge_file(base_path: str, ours_path: str, theirs_path: str, marker_size: str,
               labels: tuple[str, str, str]) -> int:
    """git's own 3-way text merge into `ours_path`: 0 when clean, 1 with conflict markers."""
    done = subprocess.run(["git", "merge-file", "-q", f"--marker-size={marker_size}", "-L", labels[0],
                           "-L", labels[1], "-L", labels[2], ours_path, base_path, theirs_path],
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if done.returncode < 0 or done.returncode > 127:  # an error, not a count of conflicts
        print(f"gitmem: git merge-file failed: {done.stderr.decode('utf-8', 'replace').strip()}", file=sys.stderr)
    return 0 if done.returncode == 0 else 1


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    base_path, ours_path, theirs_path = args[:3]
    marker_size = args[3] if len(args) > 3 and args[3].isdigit() else "7"
    path = args[4] if len(args) > 4 else "entry"
    # %S %X %Y (git 2.44+): the conflict labels git's own merge would use; older gits pass them
    # through unexpanded.
    given = [label if not label.startswith("%") else "" for label in [*args[5:8], "", "", ""][:3]]
    labels = (given[1] or f"ours:{path}", given[0] or f"base:{path}", given[2] or f"theirs:{path}")
    theirs_file = theirs_path
    scratch: str | None = None
    try:
        texts = []
        for name in (base_path, ours_path, theirs_path):
            with open(name, "rb") as handle:
                texts.append(handle.read().decode("utf-8", "surrogateescape"))
        ours, theirs = settle(texts[0], *reconcile(*texts))
        if ours != texts[1]:
            with open(ours_path, "wb") as handle:
                handle.write(ours.encode("utf-8", "surrogateescape"))
        if theirs != texts[2]:
            fd, scratch = tempfile.mkstemp(prefix="gitmem-merge-", suffix=".yaml")
            with os.fdopen(fd, "wb") as handle:
                handle.write(theirs.encode("utf-8", "surrogateescape"))
            theirs_file = scratch
    except Exception as exc:  # reconciling is a convenience: on any doubt, merge what git gave
        print(f"gitmem: entry timestamps not reconciled in {path}: {exc}", file=sys.stderr)
        theirs_file = theirs_path
    try:
        merged = merge_file(base_path, ours_path, theirs_file, marker_size, labels)
        if merged == 0 and _withdrawn_against_an_edit(*texts):
            _whole_conflict(ours_path, texts[1], texts[2], int(marker_size), labels)
            return 1
        return merged
    finally:
        if scratch:
            os.unlink(scratch)


if __name__ == "__main__":
    sys.exit(main())

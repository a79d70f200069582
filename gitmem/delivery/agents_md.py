"""The repository-wide block in a managed section of AGENTS.md, for agents without hooks.

Codex CLI, Cursor, Gemini CLI and others read AGENTS.md; they cannot be handed entries at the
moment a file is touched, so they get what a Claude Code session gets at its start. The
section sits between two marker comments; everything outside them is left untouched.

`gitmem render --agents-md` creates the section (and the file when absent). From then on it is
kept current whenever memory changes land: after `gitmem add` and `gitmem revoke`, and from
the post-merge and post-rewrite hooks. The file is only rewritten when the section's text
changes. Its content depends on the committed store alone (no machine-local delivery history),
so every clone renders the same text; entries that have expired drop out at the next refresh,
and so do entries the gate's learned detector objects to (the same verdict on every machine
with the same detector; they also fail `gitmem check`).

Two branches that each add entries change the section differently, so `gitmem init` installs
a merge driver for AGENTS.md (`main` below): the text outside the section merges as git
would, the section's entry lines merge as a set (kept unless one side removed them), and the
post-merge hook then renders the section afresh from the merged store.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable

from gitmem.base import files
from gitmem.base.files import read_plain, uses_crlf
from gitmem.base.paths import RepoPaths
from gitmem.delivery import rules as delivery_rules

FILE_NAME = "AGENTS.md"
BEGIN = "<!-- gitmem:begin (managed by `gitmem render --agents-md`; edit memory with gitmem, not here) -->"
BEGIN_PREFIX = "<!-- gitmem:begin"
END = "<!-- gitmem:end -->"
TITLE = "## Repository memory (gitmem)"
NO_ENTRIES = "No repository-wide entries yet."


def section(repo: RepoPaths) -> str:
    return section_for(repo, [])


def section_for(repo: RepoPaths, changed: list[dict[str, object]]) -> str:
    """The managed section for the store as committed (pending changes, which are not, left out),
    with the entries in `changed` (Entry.to_dict() values) as they are about to be committed."""
    from gitmem.store import index

    idx = index.current(repo)
    by_id = {e.get("id"): e for e in index.entries(idx, committed_only=True)}
    for entry in changed:
        by_id[entry.get("id")] = {k: v for k, v in entry.items() if k != "pending"}
    rules = delivery_rules.compile_rules(list(by_id.values()), idx.get("config") or {}, withheld(repo))
    return render_section(rules)


def withheld(repo: RepoPaths) -> dict[str, list[str]]:
    """What Claude Code's context is kept from, kept out of the files other agents read: what the
    gate's learned detector objected to on this machine (gitmem.judge.safety), entries whose id is
    not gitmem's, and, while the store's gate job runs, what it has not judged yet (the git hooks
    start it before they commit these files after a pull; it renders and commits them again once
    it has judged: gitmem.judge.store_gate)."""
    from gitmem.base.files import is_locked
    from gitmem.base.signature import GATE_LOCK
    from gitmem.judge import safety
    from gitmem.store import index

    entries = index.entries(index.current(repo))
    judging = is_locked(repo.worktree_state / GATE_LOCK)
    awaiting = safety.awaiting(repo, entries, judging=judging)
    kept = _in_committed_agent_files(repo, sorted({key.split(":", 1)[0] for key in awaiting}))
    awaiting = {key: why for key, why in awaiting.items() if key.split(":", 1)[0] not in kept}
    return {**awaiting, **safety.withheld_by_detector(repo), **safety.misnamed(entries)}


def _in_committed_agent_files(repo: RepoPaths, ids: list[str]) -> set[str]:
    """Of `ids`, those the agents' files as HEAD has them already name: a teammate's machine
    judged and committed them (a pull brings both), or they were written there by hand, in the
    review of the commit like any other line. Taking them out while this machine judges would
    only churn those files in commits of gitmem's."""
    if not ids:
        return set()
    from gitmem import git
    from gitmem.delivery.agents import COPILOT_DIR, CURSOR_DIR, GEMINI_FILE

    patterns = [arg for entry_id in ids for arg in ("-e", f"[{entry_id}]")]
    found = git.git(repo.worktree, "grep", "-h", "-o", "-F", *patterns, "HEAD", "--", FILE_NAME, GEMINI_FILE,
                    COPILOT_DIR, CURSOR_DIR, check=False).decode("utf-8", "replace")
    return {line.strip()[1:-1] for line in found.splitlines() if line.strip()}


def render_section(rules: delivery_rules.CompiledRules, now: float | None = None) -> str:
    today = files.utc_date(now)
    chosen, left_out = delivery_rules.session_start_selection(rules, today, relevance=None)
    active = rules["active"]
    users = [escape(delivery_rules.entry_line(i, active[i])) for i in chosen if active[i]["source"] == "user"]
    agents = [escape(delivery_rules.entry_line(i, active[i])) for i in chosen if active[i]["source"] != "user"]
    lines = [BEGIN, TITLE, ""]
    if users:
        lines += [USER_HEADER, "", *users, ""]
    if agents:
        lines += [delivery_rules.AGENT_HEADER, "", *agents, ""]
    if not chosen:
        lines += [NO_ENTRIES, ""]
    if left_out:
        lines += [f"{len(left_out)} more repository-wide "
                  f"{'entry is' if len(left_out) == 1 else 'entries are'} not listed, to keep this short "
                  "(`gitmem list` shows every entry).", ""]
    lines.append(END)
    return "\n".join(lines) + "\n"


# An @ that begins a word imports the file it names where an agent reads this file: Gemini CLI
# (GEMINI.md, AGENTS.md where its context names it), Claude Code (a CLAUDE.md holding
# `@AGENTS.md`) and Cursor's rules put the whole file in place, so a rule naming
# `@src/ledger.py` would bring that file in among the developer's rules, unreviewed.
# Any @ not inside a word (an e-mail address's is): Claude Code reads imports in the text of Markdown's
# inline elements (`**@x**`, `[@x](…)`, `` `make`@x ``), so what may stand before one is no short list.
_IMPORT_AT = re.compile(r"(?<![^\W_])@")
# The files' header says so beside the entities it names for <, > and &.
USER_HEADER = delivery_rules.START_USER_HEADER.replace(
    "&lt; &gt; &amp;;", "&lt; &gt; &amp; and an @ outside a word as &#64;;")


def escape(text: str) -> str:
    """Entry text as it may stand inside the section: an HTML comment opener or closer (a body
    quoting gitmem's markers) is written as entities, so it can never open or close a section,
    and an @ outside a word too, so it imports no file."""
    return _IMPORT_AT.sub("&#64;", text.replace("<!--", "&lt;!--").replace("-->", "--&gt;"))


def _is_begin(line: str) -> bool:
    line = line.rstrip()
    return line.startswith(BEGIN_PREFIX) and line.endswith("-->")


def _is_end(line: str) -> bool:
    return line.rstrip() == END


Section = tuple[int, int, int, int]  # begin line start, its end, end line start, its end (incl. newline)
_FENCES = ("```", "~~~")


def _markers(text: str, fences: bool = True) -> list[tuple[bool, int, int]]:
    """(is a begin marker, where its line starts, where it ends) for each marker line outside a
    fenced code block of the developer's text (where a file shows the markers as an example); a
    byte-order mark before the first line is not part of it. Inside gitmem's own section fences
    mean nothing (an entry may quote the start of one), and a fence the file never closes is no
    fence (a slip of the developer's, which would hide gitmem's section)."""
    found: list[tuple[bool, int, int]] = []
    pos = 0
    fence = ""
    inside = False
    for n, raw in enumerate(text.split("\n")):
        after = min(pos + len(raw) + 1, len(text))
        line = raw[1:] if n == 0 and raw.startswith("\ufeff") else raw
        start = pos + len(raw) - len(line)
        pos += len(raw) + 1
        opening = line.lstrip(" ")
        if fences and not inside and len(line) - len(opening) <= 3 and opening.startswith(_FENCES):
            run = opening[:len(opening) - len(opening.lstrip(opening[0]))]
            if not fence:
                fence = run
            elif run.startswith(fence) and not opening[len(run):].strip():
                fence = ""
            continue
        if not fence and (_is_begin(line) or _is_end(line)):
            inside = _is_begin(line)
            found.append((inside, start, after))
    return _markers(text, fences=False) if fence else found


def _layout(text: str) -> tuple[Section | None, str | None]:
    """The managed section, or why the file's markers make it unsafe to write (None, None: no
    marker at all). Markers count only on lines of their own, outside code blocks."""
    marks = _markers(text)
    if not marks:
        return None, None
    begins = sum(begin for begin, _, _ in marks)
    if len(marks) == 2 and marks[0][0] and not marks[1][0]:
        (_, start, inner), (_, end, after) = marks
        return (start, inner, end, after), None
    if begins > 1 or len(marks) - begins > 1:
        return None, "it holds more than one gitmem:begin or gitmem:end line"
    if not begins:
        return None, "it holds a gitmem:end line without its gitmem:begin"
    if len(marks) == 1:
        return None, "it holds a gitmem:begin line without its gitmem:end"
    return None, "its gitmem:end line comes before its gitmem:begin"


def find_section(text: str) -> Section | None:
    """Where the managed section is; None when there is none or the markers are damaged."""
    return _layout(text)[0]


def section_problem(text: str) -> str | None:
    """Why gitmem must not write the file's section (markers missing their pair, doubled, out of
    order): the text between them may be the developer's. None when it may."""
    return _layout(text)[1]


def has_section(text: str) -> bool:
    return find_section(text) is not None


def write(repo: RepoPaths) -> str:
    """Create or update the managed section; returns what happened."""
    path = repo.worktree / FILE_NAME
    new_section = section(repo)
    if path.is_symlink():  # its text may be another repository's, or anything outside this one
        return f"left {FILE_NAME} alone: it is a symbolic link"
    if not path.exists():
        files.write_atomic(path, new_section)
        return f"created {FILE_NAME} with gitmem's section"
    text = read_plain(path).decode("utf-8")
    if problem := section_problem(text):
        return f"left {FILE_NAME} alone: {problem}; fix its markers by hand"
    updated = replace_section(text, new_section)
    if updated == text:
        return f"{FILE_NAME} is up to date"
    files.write_atomic(path, updated)
    return f"updated gitmem's section of {FILE_NAME}"


def replace_section(text: str, new_section: str) -> str:
    """`text` with `new_section` in place of its section (appended when it has none); `text` as
    it is when its markers are damaged (section_problem)."""
    found, problem = _layout(text)
    if problem:
        return text
    if uses_crlf(text):  # the section in the file's own line ends: no mixed file, no whole-file diff
        new_section = new_section.replace("\r\n", "\n").replace("\n", "\r\n")
    if found is None:
        return text + separator(text) + new_section
    start, _, _, after = found
    return text[:start] + new_section + text[after:]


def separator(text: str) -> str:
    """What replace_section puts between a file's text and an appended section: a blank line."""
    newline = "\r\n" if uses_crlf(text) else "\n"
    if not text or text.endswith(newline * 2):
        return ""
    return newline if text.endswith(newline) else newline * 2


def is_managed(repo: RepoPaths) -> bool:
    path = repo.worktree / FILE_NAME
    try:
        return has_section(read_plain(path).decode("utf-8"))
    except (OSError, UnicodeDecodeError):
        return False


def refresh_if_managed(repo: RepoPaths) -> str | None:
    """Bring an existing managed section up to date; a repository without one is left alone."""
    return write(repo) if is_managed(repo) else None


# -- merging two branches' copies -----------------------------------------------------------------

_ENTRY_LINE = "- "


def _split(text: str) -> tuple[str, list[str], str] | None:
    """(text before the section, the section's lines between the markers, text after), or None."""
    found = find_section(text)
    if found is None:
        return None
    start, inner_start, end, after = found
    tail = text[end:after].rstrip("\r\n")
    return text[:start], text[inner_start:end].splitlines(), text[end + len(tail):] if tail == END else text[after:]


def merge_section(base: list[str], ours: list[str], theirs: list[str]) -> list[str]:
    """Our section plus the entries only they added, each under its own header; an entry
    either side removed (revoked, retired, expired) stays out."""
    b, o, t = _items(base), _items(ours), _items(theirs)
    removed = {item for item in b if _is_entry(item) and (item not in o or item not in t)}
    merged = [item for item in o if item not in removed]
    header = ""
    for item in t:
        if not _is_entry(item):
            header = item if item.strip() else header
        elif item not in merged and item not in removed:
            merged.insert(_slot(merged, header), item)
    if any(_is_entry(item) for item in merged):
        merged = [item for item in merged if item != NO_ENTRIES]
    return "\n".join(merged).split("\n")


def _items(lines: list[str]) -> list[str]:
    """Lines with each entry's continuation lines (indented, see delivery_rules.entry_line) joined to it."""
    items: list[str] = []
    for line in lines:
        if items and _is_entry(items[-1]) and line.startswith((" ", "\t")) and line.strip():
            items[-1] += "\n" + line
        else:
            items.append(line)
    return items


def _is_entry(item: str) -> bool:
    return item.startswith(_ENTRY_LINE)


def _slot(items: list[str], header: str) -> int:
    """Where a new entry under ``header`` goes: after that header's last entry. A header the
    section lacks is added after the last entry (or the title)."""
    if header and header in items:
        at = items.index(header) + 1
    else:
        entries = [i for i, item in enumerate(items) if _is_entry(item)]
        at = entries[-1] + 1 if entries else min(len(items), 2)
        if header:
            block = ["", header, ""] if entries else [header, ""]
            items[at:at] = block
            return at + len(block)
    while at < len(items) and (not items[at].strip() or _is_entry(items[at])):
        at += 1
    while at > 0 and not items[at - 1].strip():
        at -= 1
    return at


def merge(base: str, ours: str, theirs: str) -> tuple[str, bool]:
    """Three-way merge of AGENTS.md; returns (text, clean). Outside the section, `git
    merge-file` decides (conflict markers when both sides changed the same lines)."""
    parts = [_split(t) for t in (base, ours, theirs)]
    if parts[1] is None or parts[2] is None:  # not both managed: an ordinary text merge
        return merge_file(base, ours, theirs)
    b = parts[0] or ("", [], "")
    o, t = parts[1], parts[2]
    placeholder = "@@gitmem-managed-section@@"
    outside, clean = merge_file(b[0] + placeholder + b[2], o[0] + placeholder + o[2], t[0] + placeholder + t[2])
    if outside.count(placeholder) != 1:  # the section itself was caught in a conflict: keep ours
        return ours, False
    section = ("\r\n" if uses_crlf(ours) else "\n").join([BEGIN, *merge_section(b[1], o[1], t[1]), END])
    return outside.replace(placeholder, section), clean


def merge_file(base: str, ours: str, theirs: str) -> tuple[str, bool]:
    with tempfile.TemporaryDirectory(prefix="gitmem-merge-") as tmp:
        paths = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = os.path.join(tmp, name)
            with open(path, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
            paths.append(path)
        done = subprocess.run(["git", "merge-file", "-p", "-L", "ours", "-L", "base", "-L", "theirs", *paths],
                              capture_output=True)
    if done.returncode < 0 or done.returncode > 127:
        raise OSError(f"git merge-file failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout.decode("utf-8"), done.returncode == 0


def main(argv: list[str] | None = None) -> int:
    """git merge driver: ``python -I -m gitmem.delivery.agents_md %O %A %B`` writes the result to %A
    and exits 0 when clean, 1 with conflict markers, as git expects."""
    base_path, ours_path, theirs_path = (argv if argv is not None else sys.argv[1:])[:3]
    return merge_driver(base_path, ours_path, theirs_path, merge, FILE_NAME)


def merge_driver(base_path: str, ours_path: str, theirs_path: str,
                 merge_texts: Callable[[str, str, str], tuple[str, bool]], label: str) -> int:
    """Run a three-way text merge as a git merge driver: the result replaces %A (ours); 0 when
    clean, 1 with conflict markers or when the files cannot be read (ours is then left as it was)."""
    try:
        texts = []
        for path in (base_path, ours_path, theirs_path):
            with open(path, encoding="utf-8", newline="") as handle:  # CRLF stays CRLF
                texts.append(handle.read())
        merged, clean = merge_texts(texts[0], texts[1], texts[2])
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        print(f"gitmem: cannot merge {label}: {exc}; leaving our version", file=sys.stderr)
        return 1
    with open(ours_path, "w", encoding="utf-8", newline="") as handle:
        handle.write(merged)
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())

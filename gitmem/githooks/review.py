"""Memory changes between two revisions, as Markdown fit to paste into a pull request."""

from __future__ import annotations

from gitmem import git
from gitmem.base.paths import RepoPaths
from gitmem.errors import EntryError, GitmemError
from gitmem.store.entry import Entry
from gitmem.store.yaml_files import LoadResult, parse_entry_text

ENTRIES_PREFIX = ".gitmem/entries/"


_PARSED: dict[tuple[str, str], Entry | EntryError] = {}  # (path, blob) -> what it reads as, per process


def entries_at(repo: RepoPaths, rev: str | None) -> LoadResult:
    """The store as committed at `rev` (None: empty, e.g. before the first commit). A blob is parsed
    once per process (`gitmem check` asks for the same commit's store more than once)."""
    result = LoadResult()
    if rev is None:
        return result
    blobs = {p: b for p, b in git.tree_blob_ids(repo.worktree, rev, [ENTRIES_PREFIX]).items() if p.endswith(".yaml")}
    contents = git.read_blobs(repo.worktree, [b for p, b in blobs.items() if (p, b) not in _PARSED])
    for path, blob in sorted(blobs.items()):
        if (path, blob) not in _PARSED:
            try:
                _PARSED[path, blob] = parse_entry_text(contents[blob].decode("utf-8"), path)
            except UnicodeDecodeError:
                _PARSED[path, blob] = EntryError(path, None, "not valid UTF-8")
            except EntryError as exc:
                _PARSED[path, blob] = exc
        found = _PARSED[path, blob]
        (result.errors if isinstance(found, EntryError) else result.entries).append(found)  # type: ignore[arg-type]
    return result


def split_range(repo: RepoPaths, spec: str | None) -> tuple[str | None, str]:
    """`BASE..HEAD`, `BASE` (to HEAD) or nothing (the last commit); BASE may be a merge base."""
    if not spec:
        spec = "HEAD~1..HEAD" if git.rev_parse(repo.worktree, "HEAD~1") else "..HEAD"
    base_text, sep, head_text = spec.partition("..")
    if not sep:
        base_text, head_text = spec, "HEAD"
    if head_text.startswith("."):  # BASE...HEAD: compare with the merge base
        head_text = head_text[1:]
        base_text = git.git_text(repo.worktree, "merge-base", base_text or "HEAD", head_text or "HEAD")
    head = git.rev_parse(repo.worktree, head_text or "HEAD")
    if head is None and (head_text or "HEAD") == "HEAD" and not git.has_head(repo.worktree):
        raise GitmemError("no commits yet: nothing to compare")
    if head is None:
        raise GitmemError(f"unknown revision {head_text or 'HEAD'!r}")
    base = git.rev_parse(repo.worktree, base_text) if base_text else None
    if base_text and base is None:
        raise GitmemError(f"unknown revision {base_text!r}")
    return base, head


_MARKDOWN = str.maketrans({c: "\\" + c for c in "\\`*_[]!|~#"} | {"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def _md(text: object) -> str:
    """Entry text as Markdown that renders as the very words: no HTML, links, images or emphasis of
    its own (a pull request's description shows reviewers what the agent will read), hidden
    characters written out."""
    from gitmem.judge.normalise import visible

    return visible(" ".join(str(text).split())).translate(_MARKDOWN)


def _code(text: object) -> str:
    """A code span of `text` (a backtick in it would end the span: written as a quote)."""
    inner = str(text).replace("`", "'")
    return f"`{inner}`"


def _line(e: Entry) -> str:
    """An entry as the pull request shows it: everything an agent is handed with it (its anchor,
    the triggers Copilot's and Cursor's files print as moments, its last day)."""
    anchor = f" {_code(e.anchor)}" if e.anchor else ""
    who = "" if e.source == "user" else " _(recorded from the agent, not the developer)_"
    when = f" — delivered {', '.join(_code(t) for t in e.triggers)}" if e.triggers else ""
    until = f" (until {_md(e.expires[:10])})" if e.expires else ""
    return f"- **{e.kind}**{anchor}{until}: “{_md(e.body)}”{who}{when} <sub>{_md(e.id)}</sub>"


def diff_markdown(repo: RepoPaths, base: str | None, head: str) -> str:
    before = {e.id: e for e in entries_at(repo, base).entries}
    after_load = entries_at(repo, head)
    after = {e.id: e for e in after_load.entries}
    sections: dict[str, list[str]] = {k: [] for k in
                                      ("Added", "Retired", "Superseded", "Re-anchored", "Changed", "Deleted")}
    def superseded(shown: Entry, new: Entry) -> None:
        replacement = after.get(new.superseded_by or "")
        by = f" by “{_md(replacement.body)}”" if replacement else ""
        sections["Superseded"].append(_line(shown) + f"\n  - superseded{by} <sub>{_md(new.superseded_by)}</sub>")

    for entry_id, new in after.items():
        old = before.get(entry_id)
        if old is None:  # added within the range: shown as it ends up
            if new.status == "superseded":
                superseded(new, new)
                continue
            sections["Added" if new.active else "Retired"].append(_line(new))
            if new.revocation:
                sections["Retired"].append(f"  - why: {_md(new.revocation.reason)}")
            continue
        if old.status != new.status and new.status == "revoked" and new.revocation:
            sections["Retired"].append(_line(old))
            sections["Retired"].append(f"  - why: {_md(new.revocation.reason)}")
        elif old.status != new.status and new.status == "superseded":
            superseded(old, new)
        elif old.anchor != new.anchor and old.anchor and new.anchor:
            why = new.moves[-1].get("why", "") if new.moves else ""
            sections["Re-anchored"].append(_line(new) + f"\n  - {_code(old.anchor)} → {_code(new.anchor)}"
                                           + (f" ({_md(why)})" if why else ""))
        elif old.to_dict() != new.to_dict():
            fields = [k for k, v in new.to_dict().items() if old.to_dict().get(k) != v]
            sections["Changed"].append(_line(new) + f"\n  - changed: {', '.join(fields)}")
    for entry_id, old in before.items():
        if entry_id not in after:
            sections["Deleted"].append(_line(old) + "\n  - ⚠ the entry file was deleted; "
                                       "gitmem retires entries instead of deleting them")
    head_short = head[:10]
    title = f"## Memory changes {base[:10] + '..' if base else ''}{head_short}"
    out = [title, ""]
    for name, lines in sections.items():
        if lines:
            count = sum(1 for line in lines if line.startswith("- "))
            out += [f"### {name} ({count})", *lines, ""]
    if len(out) == 2:
        out.append("No memory changes.")
    for err in after_load.errors:
        out.append(f"- ⚠ unreadable entry: {_md(err)}")
    return "\n".join(out).rstrip() + "\n"


def hand_edited_markdown(edits: list[tuple[str, str]]) -> str:
    """The agents' files whose gitmem part, as committed, holds lines the store does not render
    (channels.hand_edits): what agents reading the repository get there is no entry's."""
    if not edits:
        return ""
    lines = ["", f"### Agents' files edited by hand ({len(edits)})"]
    lines += [f"- {_code(rel)}: “{_md(line)}” is no entry of the store; agents reading the file get it "
              "as a rule" for rel, line in edits]
    return "\n".join(lines) + "\n"


def entry_text(entry: Entry) -> str:
    """A readable rendering of one entry: what `git diff` shows through the textconv driver."""
    state = f"{entry.status}, expired {entry.expires[:10]}" if entry.active and entry.expired() and entry.expires \
        else entry.status
    lines = [f"{entry.kind} [{state}] from {entry.source}  ({entry.id})"]
    if entry.anchor:
        lines.append(f"anchor: {entry.anchor}")
    if entry.triggers:
        lines.append("delivered on: " + ", ".join(str(t) for t in entry.triggers))
    lines.append("")
    lines += [f"    {line}" for line in entry.body.splitlines()]
    lines.append("")
    if entry.supersedes:
        lines.append("supersedes: " + ", ".join(entry.supersedes))
    if entry.superseded_by:
        lines.append(f"superseded by: {entry.superseded_by}")
    if entry.expires:
        lines.append(f"expires: {entry.expires}")
    for move in entry.moves:
        when = f" {move['at']}" if move.get("at") else ""
        why = f" ({move['why']})" if move.get("why") else ""
        lines.append(f"re-anchored{when}: {move.get('from')} -> {move.get('to')}{why}")
    if entry.revocation:
        r = entry.revocation
        lines.append(f"revoked {r.at}" + (f" in {r.commit[:10]}" if r.commit else "") + f": {r.reason}")
    session = f" in session {entry.created_session}" if entry.created_session else ""
    if entry.created_at or session:  # a hand-written entry may say neither
        lines.append(f"created {entry.created_at}{session}".replace("created  in", "created in"))
    return "\n".join(lines) + "\n"

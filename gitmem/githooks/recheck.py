"""Re-check anchors against a change: keep, re-anchor (moved/renamed) or retire.

Only entries anchored to files the change touches are looked at, and only files the
change touches are parsed, so the cost grows with the change, not the repository.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gitmem import git
from gitmem.base.paths import RepoPaths
from gitmem.code.anchors import Declaration, DeclarationCache, find
from gitmem.code.grammar import language_for_path
from gitmem.code.resolve import anchor_of
from gitmem.store.entry import Entry, anchor_path_problem


@dataclass(frozen=True, slots=True)
class Outcome:
    entry: Entry     # the entry as it should now be stored
    action: str      # "reanchored" or "retired"
    detail: str


class Snapshot:
    """File contents at one state of the repository: a commit, or the index when rev is None."""

    def __init__(self, repo: RepoPaths, rev: str | None) -> None:
        self.repo = repo
        self.rev = rev
        self.cache = DeclarationCache(repo.state / "decl-cache")
        self._blobs: dict[str, str] = {}

    def prefetch(self, paths: Iterable[str]) -> None:
        wanted = [p for p in paths if p not in self._blobs]
        if not wanted:
            return
        if self.rev is None:
            found = git.index_blob_ids(self.repo.worktree, wanted)
        else:
            found = git.tree_blob_ids(self.repo.worktree, self.rev, wanted)
        for path in wanted:
            self._blobs[path] = found.get(path, "")

    def exists(self, path: str) -> bool:
        self.prefetch([path])
        return bool(self._blobs[path])

    def content(self, path: str) -> bytes:
        """The file's bytes in this snapshot (b"" when absent)."""
        if not self.exists(path):
            return b""
        blob = self._blobs[path]
        return git.read_blobs(self.repo.worktree, [blob]).get(blob, b"")

    def declarations(self, path: str) -> list[Declaration]:
        language = language_for_path(path)
        if language is None or not self.exists(path):
            return []
        blob = self._blobs[path]
        return self.cache.get(blob, language, lambda: git.read_blobs(self.repo.worktree, [blob]).get(blob, b""))


def _unique(matches: list[tuple[str, Declaration]], symbol: str) -> tuple[str, Declaration] | None:
    """One candidate, preferring the one that kept the symbol's own name; ambiguity means no match."""
    if len(matches) == 1:
        return matches[0]
    last = symbol.rsplit(".", 1)[-1]
    named = [m for m in matches if m[1].name.rsplit(".", 1)[-1] == last]
    return named[0] if len(named) == 1 else None


def recheck(repo: RepoPaths, entries: Iterable[Entry], changes: list[git.Change],
            before: Snapshot, after: Snapshot, commit: str | None = None) -> list[Outcome]:
    by_old_path = {c.old_path or c.path: c for c in changes if c.status != "A"}
    touched = [e for e in entries if e.active and e.anchor and e.anchor.path in by_old_path]
    if not touched:
        return []
    candidates = [c.path for c in changes if c.status != "D"]
    after.prefetch(candidates)
    outcomes: list[Outcome] = []
    for entry in touched:
        anchor = entry.anchor
        assert anchor is not None
        change = by_old_path[anchor.path]
        new_path = None if change.status == "D" else change.path

        if anchor.symbol is None:
            if new_path is None:
                outcomes.append(_retire(entry, f"{anchor.path} was deleted", commit))
            elif new_path != anchor.path:
                moved = anchor_of(new_path, language_for_path(new_path))
                outcomes.append(Outcome(entry.reanchored(moved, "file renamed"), "reanchored",
                                        f"{anchor.path} → {new_path}"))
            continue

        symbol = anchor.symbol
        old = find(before.declarations(anchor.path), symbol)
        fingerprint = old.fingerprint if old else anchor.fingerprint
        found: tuple[str, Declaration] | None = None
        why = ""
        if new_path is not None:
            same = find(after.declarations(new_path), symbol)
            if same is not None:
                if new_path == anchor.path:
                    continue  # still there: nothing to do
                found, why = (new_path, same), "file renamed"
        if found is None and fingerprint:
            # Renamed in place, moved to another file, or moved into a base class elsewhere:
            # the body (with its own name masked) is unchanged.
            matches = [(p, d) for p in candidates for d in after.declarations(p)
                       if d.fingerprint == fingerprint]
            found = _unique(matches, symbol)
            why = "same body found"
        if found is None:
            # Moved to another file under the same qualified name (body may have changed).
            matches = [(p, d) for p in candidates if p != new_path
                       for d in after.declarations(p) if d.name == symbol
                       and find(before.declarations(p), symbol) is None]
            found = _unique(matches, symbol)
            why = "same name found in another file"
        if found is None and old is not None:
            # Renamed and then edited (or moved and edited, several commits in one merge or
            # rebase): a new declaration beside the old one's siblings whose body is nearly the same.
            places = [new_path] if new_path is not None else [c.path for c in changes if c.status == "A"]
            found = _similar(before, after, anchor.path, old, places)
            why = "renamed, nearly the same body"
        if found is not None:
            path, decl = found
            moved = anchor_of(path, language_for_path(path), decl)
            outcomes.append(Outcome(entry.reanchored(moved, why), "reanchored", f"{anchor} → {moved} ({why})"))
        else:
            where = f"{anchor.path} was deleted" if new_path is None else f"`{symbol}` was removed from {new_path}"
            outcomes.append(_retire(entry, where, commit))
    return outcomes


SIMILAR_AT_LEAST = 0.7   # difflib ratio of the name-masked bodies
SIMILAR_MARGIN = 0.1     # ahead of the second best, or it is ambiguous


def _similar(before: Snapshot, after: Snapshot, old_path: str, old: Declaration,
             places: list[str]) -> tuple[str, Declaration] | None:
    """The declaration in `places` that `old` most plausibly became: same kind, same enclosing
    scope, a name that did not exist before, and a body at least SIMILAR_AT_LEAST alike."""
    import difflib

    scope = old.name.rpartition(".")[0]
    old_text = _masked(before.content(old_path), old)
    if not old_text:
        return None
    scored: list[tuple[float, str, Declaration]] = []
    for path in places:
        existed = {d.name for d in before.declarations(path)} | {d.name for d in before.declarations(old_path)}
        source = b""
        for decl in after.declarations(path):
            if decl.kind != old.kind or decl.name.rpartition(".")[0] != scope or decl.name in existed:
                continue
            source = source or after.content(path)
            ratio = difflib.SequenceMatcher(None, old_text, _masked(source, decl), autojunk=False).ratio()
            scored.append((ratio, path, decl))
    scored.sort(key=lambda s: -s[0])
    if not scored or scored[0][0] < SIMILAR_AT_LEAST:
        return None
    if len(scored) > 1 and scored[0][0] - scored[1][0] < SIMILAR_MARGIN:
        return None
    return scored[0][1], scored[0][2]


def _masked(source: bytes, decl: Declaration) -> bytes:
    """The declaration's text with its own name left out and whitespace collapsed."""
    import re

    text = source[decl.start_byte:decl.end_byte]
    leaf = decl.name.rsplit(".", 1)[-1].encode("utf-8", "replace")
    text = text.replace(leaf, b"\0", 1)
    return re.sub(rb"\s+", b" ", text).strip()


def _retire(entry: Entry, what: str, commit: str | None) -> Outcome:
    reason = (f"{what}; no declaration with the same name or body remains in the change. "
              f"The entry was anchored to {entry.anchor}, so it no longer holds.")
    return Outcome(entry.revoked(reason, commit), "retired", what)


def check_all(repo: RepoPaths, entries: Iterable[Entry], rev: str) -> list[tuple[Entry, str]]:
    """Active entries whose anchor does not resolve at `rev`, with the problem (for CI gates)."""
    snap = Snapshot(repo, rev)
    active = [e for e in entries if e.active and e.anchor]
    snap.prefetch(e.anchor.path for e in active if e.anchor)
    problems: list[tuple[Entry, str]] = []
    links = _symlinks(repo, rev, [e.anchor.path for e in active if e.anchor])
    for entry in active:
        anchor = entry.anchor
        assert anchor is not None
        outside = anchor_path_problem(anchor.path)
        if outside:
            problems.append((entry, f"anchor refused: {outside}"))
        elif anchor.path in links:
            problems.append((entry, f"anchor refused: {anchor.path} is a symlink at {rev}; anchors name files"))
        elif not snap.exists(anchor.path):
            problems.append((entry, f"{anchor.path} does not exist at {rev}"))
        elif anchor.symbol and find(snap.declarations(anchor.path), anchor.symbol) is None:
            problems.append((entry, f"`{anchor.symbol}` not found in {anchor.path} at {rev}"))
    return problems


def _symlinks(repo: RepoPaths, rev: str, paths: list[str]) -> set[str]:
    if not paths:
        return set()
    out = git.git(repo.worktree, "ls-tree", "-r", "-z", rev, "--", *paths, check=False)
    found = set()
    for record in out.decode("utf-8", "surrogateescape").split("\0"):
        meta, _, path = record.partition("\t")
        if meta.startswith("120000"):
            found.add(path)
    return found

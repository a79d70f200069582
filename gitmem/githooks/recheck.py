"""Re-check anchors against a change: keep, re-anchor (moved/renamed) or retire.

Only entries anchored to files the change touches are looked at, and only files the
change touches are parsed, so the cost grows with the change, not the repository.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, replace

from gitmem import git
from gitmem.base.paths import RepoPaths
from gitmem.code.anchors import Declaration, DeclarationCache, find, parse_problem
from gitmem.code.grammar import language_for_path
from gitmem.code.resolve import anchor_of
from gitmem.store.entry import RETIRED_NOTE, Anchor, Entry, anchor_path_problem


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
        self._problems: dict[str, str | None] = {}

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

    def problem(self, path: str) -> str | None:
        """Why the file's declarations may miss some it has (anchors.parse_problem); None when it
        parsed cleanly, is absent or has no grammar. Parses again (the cache keeps declarations
        only), so it is asked only where an answer would change an entry."""
        language = language_for_path(path)
        if language is None or not self.exists(path):
            return None
        if path not in self._problems:
            self._problems[path] = parse_problem(self.content(path), language)
        return self._problems[path]


Target = tuple[str, Declaration]  # a declaration after the change, with its file


@dataclass(slots=True)
class _Lost:
    """A declaration entries are anchored to that the change took from where it was."""

    path: str                  # the anchored file, before the change
    symbol: str
    new_path: str | None       # that file after the change; None when it was deleted
    old: Declaration | None    # as parsed before the change; None when that parse lost it
    fingerprint: str | None
    entries: list[Entry]


class _Gained:
    """Declarations the change added: in a touched file after it, under a name that file did not
    have before (a renamed file is compared with its old self). Only these can be where a lost
    declaration went; a declaration that was already there is something else."""

    def __init__(self, before: Snapshot, after: Snapshot, changes: list[git.Change]) -> None:
        self.before, self.after = before, after
        self.old_of = {c.path: c.old_path or c.path for c in changes if c.status != "D"}
        self.added = [c.path for c in changes if c.status == "A"]
        self._found: dict[str, list[Declaration]] = {}

    def of(self, path: str) -> list[Declaration]:
        if path not in self._found:
            existed = {d.name for d in self.before.declarations(self.old_of[path])}
            self._found[path] = [d for d in self.after.declarations(path) if d.name not in existed]
        return self._found[path]

    def provable(self, path: str) -> bool:
        """Both versions parsed cleanly: else a name the old parse lost looks added, or the new
        parse's extents are guesses. Asked only of files holding a candidate (it parses again)."""
        return self.before.problem(self.old_of[path]) is None and self.after.problem(path) is None


def recheck(repo: RepoPaths, entries: Iterable[Entry], changes: list[git.Change],
            before: Snapshot, after: Snapshot, commit: str | None = None) -> list[Outcome]:
    """What becomes of the active entries anchored to files the change touches: re-anchored,
    retired, or (absent from the result) left as they are. Entries anchored in a file whose new
    version does not parse cleanly are left as they are, said in one line on stderr per file."""
    by_old_path = {c.old_path or c.path: c for c in changes if c.status != "A"}
    touched = [e for e in entries if e.active and e.anchor and e.anchor.path in by_old_path]
    if not touched:
        return []
    gained = _Gained(before, after, changes)
    after.prefetch(gained.old_of)
    done: dict[str, Outcome] = {}
    claimed: set[Target] = set()
    lost: dict[tuple[str, str], _Lost] = {}
    unparsed: dict[str, tuple[str, int]] = {}  # file -> (its problem, entries not re-checked)
    for entry in touched:
        anchor = entry.anchor
        assert anchor is not None
        change = by_old_path[anchor.path]
        new_path = None if change.status == "D" else change.path

        if anchor.symbol is None:
            if new_path is None:
                done[entry.id] = _retire(entry, f"{anchor.path} was deleted", commit)
            elif new_path != anchor.path:
                moved = anchor_of(new_path, language_for_path(new_path))
                done[entry.id] = Outcome(entry.reanchored(moved, "file renamed"), "reanchored",
                                         f"{anchor.path} → {new_path}")
            continue

        symbol = anchor.symbol
        if new_path is not None:
            same = find(after.declarations(new_path), symbol)
            if same is not None and not _its_namesake_went(before, after, anchor, new_path):
                if new_path != anchor.path:
                    claimed.add((new_path, same))
                    done[entry.id] = _moved(entry, (new_path, same), "file renamed")
                continue  # still there, under its name
            problem = after.problem(new_path)
            if problem is not None:
                # The parse proves nothing about what is gone (an unclosed paren in one function can
                # hide the next): leave the entry; the next commit that changes the file re-checks it.
                count = unparsed.get(new_path, (problem, 0))[1]
                unparsed[new_path] = (problem, count + 1)
                if new_path != anchor.path:
                    # Git, not the parse, says the file moved; left on a path that no longer exists,
                    # no later commit would re-check the entry.
                    moved = replace(anchor, path=new_path, language=language_for_path(new_path))
                    why = f"file renamed; {new_path} does not parse cleanly, `{symbol}` not re-checked"
                    done[entry.id] = Outcome(entry.reanchored(moved, why), "reanchored", f"{anchor} → {moved} ({why})")
                continue
        key = (anchor.path, symbol)
        if key not in lost:
            old = next((d for d in before.declarations(anchor.path) if d.name == symbol
                        and anchor.fingerprint and d.fingerprint == anchor.fingerprint), None) \
                or find(before.declarations(anchor.path), symbol)
            fingerprint = old.fingerprint if old else anchor.fingerprint
            lost[key] = _Lost(anchor.path, symbol, new_path, old, fingerprint, [])
        lost[key].entries.append(entry)

    gone = list(lost.values())
    found = _match(gone, gained, claimed)
    for i, item in enumerate(gone):
        hidden = None if i in found else _unparsed_naming(gained, item)
        if hidden is not None:  # it may have gone there: that parse proves nothing either
            print(f"gitmem: `{item.symbol}` left {item.path}, and {hidden}, which names it, does not parse "
                  f"cleanly ({after.problem(hidden)}); its entries are left as they are", file=sys.stderr)
            continue
        for entry in item.entries:
            if i in found:
                target, why = found[i]
                done[entry.id] = _moved(entry, target, why)
            else:
                where = (f"{item.path} was deleted" if item.new_path is None
                         else f"`{item.symbol}` was removed from {item.new_path}")
                done[entry.id] = _retire(entry, where, commit)
    for path, (problem, count) in unparsed.items():
        left = "1 entry anchored there is left as it is" if count == 1 else \
            f"{count} entries anchored there are left as they are"
        print(f"gitmem: {path} does not parse cleanly ({problem}); {left}, "
              "to be re-checked at the next commit that changes it", file=sys.stderr)
    return [done[e.id] for e in touched if e.id in done]


def _its_namesake_went(before: Snapshot, after: Snapshot, anchor: Anchor, new_path: str) -> bool:
    """Of two declarations sharing the anchored name (Rust's `impl Display` and `impl Debug` each
    with `fmt`, Java's overloads), the change removed the one the entry is about: fewer of them
    now, the one with the body it was anchored to gone, and every other one still there as it was
    (else which one went is a guess: one edited and the other removed looks the same)."""
    fingerprint = anchor.fingerprint
    if not fingerprint:
        return False
    had = [d.fingerprint for d in before.declarations(anchor.path) if d.name == anchor.symbol]
    has = [d.fingerprint for d in after.declarations(new_path) if d.name == anchor.symbol]
    others = list(had)
    if len(has) >= len(had) or fingerprint not in others or fingerprint in has:
        return False
    others.remove(fingerprint)
    return all(others.count(f) <= has.count(f) for f in others)


def _unparsed_naming(gained: _Gained, item: _Lost) -> str | None:
    """Another file the change touched that does not parse cleanly and names the lost declaration
    (a function moved into a file left mid-edit): where it may be, which its parse cannot show."""
    leaf = re.compile(rb"\b" + re.escape(_leaf(item.symbol).encode("utf-8")) + rb"\b")
    for path in gained.old_of:
        if path != item.new_path and gained.after.problem(path) is not None and leaf.search(gained.after.content(path)):
            return path
    return None


def _moved(entry: Entry, target: Target, why: str) -> Outcome:
    path, decl = target
    moved = anchor_of(path, language_for_path(path), decl)
    return Outcome(entry.reanchored(moved, why), "reanchored", f"{entry.anchor} → {moved} ({why})")


EXACT_MARGIN = 0.5       # exact matches score 1 (kept its own name) or 0.5: the better one must be unique
SIMILAR_AT_LEAST = 0.7   # difflib ratio of the name-masked bodies, character by character
KEPT_SHARE_AT_LEAST = 0.6  # of the old body's own words (see _words), kept in order
KEPT_WORDS_AT_LEAST = 3
SIMILAR_MARGIN = 0.1     # ahead of the runner-up, on either side, or it is ambiguous


def _match(gone: list[_Lost], gained: _Gained, claimed: set[Target]) -> dict[int, tuple[Target, str]]:
    """Where each lost declaration went (by index in `gone`); absent where nothing qualifies.

    A declaration the change added can become at most one lost declaration. The strongest
    evidence is settled first, over all of them, and what it claims is out of reach of weaker
    evidence: a sibling deleted in the same commit as another is renamed cannot follow the rename.
    """
    found: dict[int, tuple[Target, str]] = {}

    def settle(options: dict[int, list[tuple[float, Target]]], margin: float, why: str) -> None:
        for i, target in _settle(options, margin).items():
            found[i] = (target, why)
            claimed.add(target)

    def free(i: int) -> bool:
        return i not in found

    # Renamed in place, moved to another file, or moved into a base class elsewhere: the body
    # (with its own name masked) is unchanged. Keeping its own name breaks a tie.
    def same_body(item: _Lost) -> list[tuple[float, Target]]:
        pool = [(p, d) for p in gained.old_of for d in gained.of(p)]
        if item.old is None and item.new_path is not None:
            # Gone before this change (a commit the hooks did not check: --no-verify, a reset, a
            # file that did not parse): its file as it is now holds what it became.
            here = item.new_path
            pool += [(here, d) for d in gained.after.declarations(here) if (here, d) not in pool]
        return [(1.0 if _leaf(d.name) == _leaf(item.symbol) else 0.5, (p, d))
                for p, d in pool if d.fingerprint == item.fingerprint and (p, d) not in claimed]

    settle({i: same_body(item) for i, item in enumerate(gone) if free(i) and item.fingerprint},
           EXACT_MARGIN, "same body found")
    # Moved to another file under the same qualified name (body may have changed, but not into
    # something else: `csvutil.parse` deleted and an unrelated `cli.parse` added is no move).
    settle({i: [(1.0, (p, d)) for p in gained.old_of if p != item.new_path
                for d in gained.of(p)
                if d.name == item.symbol and (p, d) not in claimed and _related(gained, item, p, d)]
            for i, item in enumerate(gone) if free(i)}, EXACT_MARGIN, "same name found in another file")
    # Renamed and then edited (or moved and edited, several commits in one merge or rebase): a new
    # declaration beside the old one's siblings whose body is nearly the same.
    settle({i: _similar(gained, item, claimed) for i, item in enumerate(gone) if free(i) and item.old},
           SIMILAR_MARGIN, "renamed, nearly the same body")
    # Its class (impl, type) renamed around it, as an editor's rename does: a member whose body
    # names the type changed with it, so no body matches; the same member name under the one scope
    # that took most of the old one's members is it.
    settle({i: _in_renamed_scope(gained, item, claimed) for i, item in enumerate(gone) if free(i) and item.new_path},
           EXACT_MARGIN, "its enclosing scope renamed")
    return found


SCOPE_KEPT_SHARE_AT_LEAST = 0.5  # of the old scope's member names, found under the new one


def _in_renamed_scope(gained: _Gained, item: _Lost, claimed: set[Target]) -> list[tuple[float, Target]]:
    """`Scope.member` as `NewScope.member` in the same file, where `Scope` is gone from it and
    `NewScope`, new in it, holds most of `Scope`'s member names: the one new scope that does, and
    `Scope` the one vanished scope that fits it best (a class deleted beside another's rename does
    not follow the rename)."""
    scope, _, leaf = item.symbol.rpartition(".")
    path = item.new_path
    if not scope or path is None or not gained.provable(path):
        return []
    depth = scope.count(".")

    def scopes(decls: Iterable[Declaration]) -> dict[str, dict[str, Declaration]]:
        found: dict[str, dict[str, Declaration]] = {}
        for d in decls:
            outer, _, member = d.name.rpartition(".")
            if outer and outer.count(".") == depth:
                found.setdefault(outer, {})[member] = d
        return found

    now = {d.name for d in gained.after.declarations(path)}
    old_path = gained.old_of[path]
    vanished = {s: m for s, m in scopes(gained.before.declarations(old_path)).items()
                if s not in now and not any(n.startswith(s + ".") for n in now)}
    if scope not in vanished:
        return []  # the scope is still there: the member itself went
    under = scopes(gained.of(path))

    def fit(old: str, new: str) -> tuple[int, int]:
        """Members both have; of them, those the rename alone explains (the old scope's name
        written as the new one's, the bodies are the same)."""
        shared = set(vanished[old]) & set(under[new])
        old_leaf, new_leaf = _leaf(old).encode("utf-8"), _leaf(new).encode("utf-8")
        same = sum(_masked(gained.before.content(old_path), vanished[old][m]).replace(old_leaf, new_leaf)
                   == _masked(gained.after.content(path), under[new][m]) for m in shared)
        return len(shared), same

    def best(options: dict[str, tuple[int, int]]) -> str | None:
        ranked = sorted(options.items(), key=lambda o: o[1], reverse=True)
        if not ranked or (len(ranked) > 1 and ranked[1][1] == ranked[0][1]):
            return None
        return ranked[0][0]

    target = best({s: fit(scope, s) for s in under})
    if target is None or fit(scope, target)[0] < SCOPE_KEPT_SHARE_AT_LEAST * len(vanished[scope]):
        return []
    if best({s: fit(s, target) for s in vanished}) != scope:
        return []
    decl = under[target].get(leaf)
    return [(1.0, (path, decl))] if decl is not None and (path, decl) not in claimed else []


NAME_KEPT_SHARE_AT_LEAST = 0.3  # of the old body's own words, for a move under the same name


def _related(gained: _Gained, item: _Lost, path: str, decl: Declaration) -> bool:
    """Whether a declaration of the same name elsewhere keeps enough of the old body's own words
    (identifiers, numbers, strings beyond the language's) to be it, moved and perhaps edited. A body
    too small to tell, or one no longer known (the anchor was stale before), lets the name decide."""
    if item.old is None:
        return True
    old_words = _words(_masked(gained.before.content(item.path), item.old), language_for_path(item.path))
    if len(old_words) < KEPT_WORDS_AT_LEAST:
        return True
    new_words = _words(_masked(gained.after.content(path), decl), language_for_path(path))
    return _kept(old_words, new_words) / len(old_words) >= NAME_KEPT_SHARE_AT_LEAST


def _settle(options: dict[int, list[tuple[float, Target]]], margin: float) -> dict[int, Target]:
    """Pairs each lost declaration with its best option where that option is at least `margin`
    ahead of its own runner-up, and the lost declaration is as far ahead of every other one that
    has the same option. A tie on either side pairs nothing."""
    rivals: dict[Target, list[float]] = {}
    for scored in options.values():
        for score, target in scored:
            rivals.setdefault(target, []).append(score)
    paired: dict[int, Target] = {}
    for i, scored in options.items():
        ranked = sorted(scored, key=lambda s: -s[0])
        if not ranked or ranked[0][0] <= 0 or (len(ranked) > 1 and ranked[0][0] - ranked[1][0] < margin):
            continue
        score, target = ranked[0]
        others = sorted(rivals[target], reverse=True)[1:]  # this one's own score is among them
        if others and score - others[0] < margin:
            continue
        paired[i] = target
    return paired


def _similar(gained: _Gained, item: _Lost, claimed: set[Target]) -> list[tuple[float, Target]]:
    """The declarations `item` may have become by a rename and an edit, each with its score:
    same kind and enclosing scope, a name the anchored file did not have, not claimed, in a file
    that parsed cleanly before and after the change (else a name the old parse lost looks new), and
    a body alike enough (see _alike). Every candidate is scored, so a close runner-up makes it
    ambiguous."""
    old = item.old
    assert old is not None
    scope = old.name.rpartition(".")[0]
    old_text = _masked(gained.before.content(item.path), old)
    if not old_text:
        return []
    old_language = language_for_path(item.path)
    existed = {d.name for d in gained.before.declarations(item.path)}
    places = [item.new_path] if item.new_path is not None else gained.added
    scored: list[tuple[float, Target]] = []
    for path in places:
        source = b""
        for decl in gained.of(path):
            if (decl.kind != old.kind or decl.name.rpartition(".")[0] != scope or decl.name in existed
                    or (path, decl) in claimed or not gained.provable(path)):
                continue
            source = source or gained.after.content(path)
            score = _alike(old_text, old_language, _masked(source, decl), language_for_path(path))
            scored.append((score, (path, decl)))
    return scored


def _alike(old: bytes, old_language: str | None, new: bytes, new_language: str | None) -> float:
    """How surely `new` is `old` renamed and edited, from 0 to 1; 0 unless the evidence is real.

    Character similarity alone is met by any two short bodies of the same shape (`return
    self._name` and `return self._email`): the words beyond the language's own must agree too.
    Most of the old body's words must still be there, in order, and at least a few of them (a
    body that grew keeps its words); the score, what ranks candidates, is the words' ratio.
    """
    import difflib

    if difflib.SequenceMatcher(None, old, new, autojunk=False).ratio() < SIMILAR_AT_LEAST:
        return 0.0
    old_words, new_words = _words(old, old_language), _words(new, new_language)
    if not old_words:
        return 0.0
    kept = _kept(old_words, new_words)
    if kept < KEPT_WORDS_AT_LEAST or kept / len(old_words) < KEPT_SHARE_AT_LEAST:
        return 0.0
    return 2 * kept / (len(old_words) + len(new_words))


def _kept(old_words: list[bytes], new_words: list[bytes]) -> int:
    """How many of the old body's words the new one keeps, in order."""
    import difflib

    matcher = difflib.SequenceMatcher(None, old_words, new_words, autojunk=False)
    return sum(block.size for block in matcher.get_matching_blocks())


# Identifiers, numbers and string literals: the words of a body.
_WORD = re.compile(rb"""[A-Za-z_$][\w$]*|\d[\w.]*|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`]*`""")
_JS = b"""async await break case catch class const continue debugger default delete do else export extends
    false finally for function if import in instanceof let new null of return static super switch this
    throw true try typeof undefined var void while with yield"""
_TS = _JS + b" abstract any as boolean declare enum implements interface keyof never number private protected" \
            b" public readonly string type unknown"
# Each language's keywords, receivers, literals and basic types: words any body has, so sharing
# them says nothing about one body having become the other.
_LANGUAGE_WORDS: dict[str, frozenset[bytes]] = {language: frozenset(words.split()) for language, words in {
    "python": b"""and as assert async await class cls def del elif else except False finally for from global
        if import in is lambda None nonlocal not or pass raise return self True try while with yield""",
    "javascript": _JS,
    "typescript": _TS,
    "tsx": _TS,
    "go": b"""bool break byte case chan const continue default defer else error fallthrough false for func go
        goto if import int interface map nil package range return select string struct switch true type var""",
    "rust": b"""as async await bool break const continue crate dyn else enum Err extern false fn for i32 i64 if
        impl in let loop match mod move mut None Ok Option pub ref Result return self Self Some static str
        String struct super trait true type u8 u32 u64 unsafe use usize where while""",
    "java": b"""abstract assert boolean break byte case catch char class continue default do double else enum
        extends false final finally float for if implements import instanceof int interface long native new
        null package private protected public return short static String super switch synchronized this
        throw throws transient true try var void volatile while""",
}.items()}


def _words(text: bytes, language: str | None) -> list[bytes]:
    common = _LANGUAGE_WORDS.get(language or "", frozenset())
    return [word for word in _WORD.findall(text) if word not in common]


def _leaf(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _masked(source: bytes, decl: Declaration) -> bytes:
    """The declaration's text with its own name left out and whitespace collapsed."""
    text = source[decl.start_byte:decl.end_byte]
    leaf = _leaf(decl.name).encode("utf-8", "replace")
    text = text.replace(leaf, b"\0", 1)
    return re.sub(rb"\s+", b" ", text).strip()


def _retire(entry: Entry, what: str, commit: str | None,
            why: str = "no declaration with the same name or body remains in the change") -> Outcome:
    reason = f"{what}; {why}. " + RETIRED_NOTE.format(anchor=entry.anchor)
    return Outcome(entry.revoked(reason, commit), "retired", what)


def landed(entries: Iterable[Entry], at: Snapshot, how: str) -> list[Outcome]:
    """Entries a patch brought in (`git am`: where their code was checked is unknown) re-checked
    against the code they landed on: an anchor that resolves stays; a declaration missing from its
    file whose body one declaration there still has (renamed on this side) is re-anchored to it;
    otherwise the entry is retired. A file that does not parse cleanly proves nothing: its entries
    are left as they are."""
    done: list[Outcome] = []
    for entry in entries:
        anchor = entry.anchor
        if not entry.active or anchor is None:
            continue
        if not at.exists(anchor.path):
            done.append(_retire(entry, f"{anchor.path} does not exist where {how} applied this entry", None,
                                "the entry came with a patch and its code did not"))
            continue
        if anchor.symbol is None or find(at.declarations(anchor.path), anchor.symbol) is not None:
            continue
        problem = at.problem(anchor.path)
        if problem is not None:
            print(f"gitmem: {anchor.path} does not parse cleanly ({problem}); {entry.id} is left as it is",
                  file=sys.stderr)
            continue
        same = [d for d in at.declarations(anchor.path) if anchor.fingerprint and d.fingerprint == anchor.fingerprint]
        if len(same) == 1:
            done.append(_moved(entry, (anchor.path, same[0]), "same body found"))
        else:
            done.append(_retire(entry, f"`{anchor.symbol}` is not in {anchor.path} where {how} applied this entry",
                                None, "no declaration with its name or body is there"))
    return done


def check_all(repo: RepoPaths, entries: Iterable[Entry], rev: str | None) -> list[tuple[Entry, str]]:
    """Active entries whose anchor does not resolve at `rev` (None: in the index, the code the
    next commit holds), with the problem (for CI gates)."""
    snap = Snapshot(repo, rev)
    where = f"at {rev}" if rev else "in the index"
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
            problems.append((entry, f"anchor refused: {anchor.path} is a symlink {where}; anchors name files"))
        elif not snap.exists(anchor.path):
            problems.append((entry, f"{anchor.path} does not exist {where}"))
        elif anchor.symbol and find(snap.declarations(anchor.path), anchor.symbol) is None:
            unparsed = snap.problem(anchor.path)
            why = f" (the file does not parse cleanly: {unparsed})" if unparsed else ""
            problems.append((entry, f"`{anchor.symbol}` not found in {anchor.path} {where}{why}"))
    return problems


def _symlinks(repo: RepoPaths, rev: str | None, paths: list[str]) -> set[str]:
    if not paths:
        return set()
    listing = ["ls-files", "-s", "-z"] if rev is None else ["ls-tree", "-r", "-z", rev]
    out = git.git(repo.worktree, *listing, "--", *paths, check=False)
    found = set()
    for record in out.decode("utf-8", "surrogateescape").split("\0"):
        meta, _, path = record.partition("\t")
        if meta.startswith("120000"):
            found.add(path)
    return found

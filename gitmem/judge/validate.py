"""Deterministic checks on the writer's candidates: no model, same result every time.

- the body is a verbatim span of the session text, and at least 30 % of its content
  words occur in that text; ``source`` is ``user`` only when the user typed it;
- the kind is in the vocabulary;
- an anchor must resolve to a file (and declaration) in the work tree, else the entry
  falls back to repository scope; anchors are only taken from files modified in the turn;
- near duplicates of each other or of stored active entries are dropped; a correction
  about the same subject as a stored active entry supersedes it (the old entry is kept).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.base.paths import RepoPaths
from gitmem.judge import bodies
from gitmem.judge.words import content_words, stems, subject_words, words
from gitmem.store.entry import KINDS, Anchor, Entry

if TYPE_CHECKING:
    from gitmem.judge.spans import Span
    from gitmem.judge.types import Candidate, Packet

MIN_SUPPORT = 0.30  # share of the body's content words that must occur in the session text
DUPLICATE_JACCARD = 0.6
DUPLICATE_CONTAINMENT = 0.85
SUPERSEDE_OVERLAP = 0.34

def support(body: str, session_text: str) -> float:
    """Share of the body's content words that occur in the session text."""
    body_words = content_words(body)
    if not body_words:
        return 0.0
    session = set(words(session_text))
    return sum(w in session for w in body_words) / len(body_words)


def near_duplicate(a: str, b: str) -> bool:
    wa, wb = stems(content_words(a)), stems(content_words(b))
    if not wa or not wb:
        return a.strip().lower() == b.strip().lower()
    shared = len(wa & wb)
    if shared / len(wa | wb) >= DUPLICATE_JACCARD:
        return True
    small = min(len(wa), len(wb))
    return small >= 3 and shared / small >= DUPLICATE_CONTAINMENT


def subject_overlap(a: str, b: str) -> float:
    sa, sb = stems(subject_words(a)), stems(subject_words(b))
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / min(len(sa), len(sb))


def words_key(text: str) -> str:
    """`text`'s words, whatever the spacing and case: the very words, as a key."""
    return " ".join(text.split()).casefold()


def same_words(a: str, b: str) -> bool:
    return words_key(a) == words_key(b)


def superseded(body: str, kind: str, stored: Iterable[Entry]) -> tuple[str, ...]:
    """The stored active entry a correction replaces: the best subject overlap, if high enough.
    An entry with the very words is no entry it replaces: saying it again restates it."""
    if kind != "correction":
        return ()
    best: tuple[float, str] | None = None
    for entry in stored:
        if not entry.active or same_words(body, entry.body):
            continue
        shared = stems(subject_words(body)) & stems(subject_words(entry.body))
        overlap = subject_overlap(body, entry.body)
        # one shared word is enough only when it is the same identifier-like word, as written
        exact = subject_words(body) & subject_words(entry.body)
        strong = len(shared) >= 2 or any(_identifier_like(w) for w in exact)
        if overlap >= SUPERSEDE_OVERLAP and strong and (best is None or overlap > best[0]):
            best = (overlap, entry.id)
    return (best[1],) if best else ()


def _identifier_like(word: str) -> bool:
    return bool(re.search(r"[_./#+-]|\d", word)) or len(word) >= 6


# -- anchors -----------------------------------------------------------------------------------


def resolves(repo: RepoPaths, anchor: str) -> bool:
    from gitmem.code.resolve import resolve
    from gitmem.errors import AnchorError

    try:
        resolve(repo.worktree, anchor)
    except AnchorError:
        return False
    return True


def _mentions(body: str, name: str) -> int:
    """How strongly ``body`` names the identifier ``name``: 0 none, 1 weak, 2 strong."""
    leaf = name.rsplit(".", 1)[-1]
    if len(leaf) < 3:
        return 0
    if name != leaf and re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", body):
        return 2
    found = list(re.finditer(rf"(?<![\w]){re.escape(leaf)}(?!\w)", body))
    if not found:
        return 0
    for m in found:
        before, after = body[: m.start()], body[m.end() :]
        if before.endswith(("`", ".")) or after.startswith(("(", "`", "()")):
            return 2
    if "_" in leaf or re.search(r"[a-z][A-Z]", leaf) or re.search(r"\d", leaf):
        return 2
    if leaf[0].isupper() and any(m.start() > 0 for m in found):
        return 1  # a class name in running text
    return 0


def find_anchor(repo: RepoPaths, body: str, files_modified: Sequence[str]) -> str | None:
    """A file or declaration named in ``body`` among the files modified in the turn, as text."""
    anchor = anchor_named(repo, body, files_modified)
    return str(anchor) if anchor else None


def anchor_named(repo: RepoPaths, body: str, files_modified: Sequence[str]) -> Anchor | None:
    """The file or declaration named in ``body`` among the files modified in the turn, resolved
    from the declarations read here (the store takes it as it is: one parse per file)."""
    from gitmem.code.resolve import anchor_of, file_declarations
    from gitmem.errors import AnchorError

    best: tuple[int, int, Anchor] | None = None  # (strength, specificity, anchor)
    for raw in files_modified:
        path = repo.relative(repo.worktree / raw) if not Path(raw).is_absolute() else repo.relative(raw)
        if not path:
            continue
        try:
            language, decls = file_declarations(repo.worktree, path)
        except AnchorError:
            continue
        for decl in decls:
            strength = _mentions(body, decl.name)
            if strength and (best is None or (strength, decl.name.count(".") + 1) > best[:2]):
                best = (strength, decl.name.count(".") + 1, anchor_of(path, language, decl))
        base = Path(path).name
        stem = Path(path).stem
        named = re.search(rf"(?<![\w/]){re.escape(path)}(?!\w)", body) or re.search(
            rf"(?<![\w]){re.escape(base)}(?![\w])", body)
        if not named and ("_" in stem or re.search(r"[a-z][A-Z]", stem)):
            named = re.search(rf"(?<![\w]){re.escape(stem)}(?![\w])", body)
        if named and (best is None or best[0] < 2):
            best = (2, 0, anchor_of(path, language)) if best is None else best
    return best[2] if best else None


# -- the promoted proposal ---------------------------------------------------------------------


def pick_promoted(assistant: str) -> Span | None:
    """The agent's proposal the user promoted: the proposing sentence that reads most like a rule."""
    from gitmem.judge.spans import proposals

    found = proposals(assistant)
    if not found:
        return None
    strong = re.compile(r"(?i)\b(suggest|recommend|propose|going forward|from now on|always|never|every time"
                        r"|whenever|rule|convention)\b")
    return max(found, key=lambda s: (len(strong.findall(s.text)), s.start))


# -- the whole check ---------------------------------------------------------------------------


def finalize(repo: RepoPaths, packet: Packet, raw: Sequence[tuple[str, str, str, float]],
             stored: Sequence[Entry]) -> list[Candidate]:
    """Validated candidates from (kind, source, body, score) proposals, best first per body."""
    from gitmem.judge.types import Candidate

    session = f"{packet.user}\n{packet.assistant}"
    accepted: list[Candidate] = []
    for kind, source, body, score in sorted(raw, key=lambda r: -r[3]):
        body = bodies.strip_lead_in(body.strip())
        if kind not in KINDS or not body:
            continue
        if body in packet.user:
            source = "user"  # the user said it, whatever the proposal claimed
        elif source != "agent" or body not in packet.assistant:
            continue  # not a copy of anything said in the session
        else:
            body = bodies.strip_proposal(body)
        if support(body, session) < MIN_SUPPORT:
            continue
        if any(near_duplicate(body, c.body) for c in accepted):
            continue
        replaces = superseded(body, kind, stored)
        if any(e.active and e.id not in replaces and near_duplicate(body, e.body) for e in stored):
            continue  # a restatement of a stored entry; a correction of one replaces it instead
        # A ritual is anchored by what its trigger names, never by the file it names as the work.
        named = bodies.trigger_clause(body) if kind == "ritual" else body
        anchor = anchor_named(repo, named, packet.files_modified) if packet.files_modified and named else None
        accepted.append(Candidate(kind, source, body, str(anchor) if anchor else None, replaces, score, anchor))
    order = {c.body: (packet.user + packet.assistant).find(c.body) for c in accepted}
    return sorted(accepted, key=lambda c: order[c.body])

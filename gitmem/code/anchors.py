"""Find the declarations that memory entries anchor to.

An anchor is ``path`` or ``path::Qualified.name``. Declarations come from the
tags queries in ``grammars/`` (see the capture conventions documented at the
top of ``python-tags.scm``); this module only turns query matches into
qualified names, line ranges and fingerprints, so no tree-sitter node type
appears here.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import astuple, dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from gitmem.base.files import write_atomic
from gitmem.code import grammar

# Bigger files are generated or vendored code nobody anchors memories to, and
# parsing them would make every hook slow.
MAX_SOURCE_BYTES = 2 * 1024 * 1024
# A clean 2 MB file parses in about a second; junk that forces error recovery
# everywhere can take tens of seconds, so give up on it.
PARSE_TIMEOUT_S = 5.0
# Git's own test for binary content: a NUL byte within the first 8000 bytes.
_BINARY_SNIFF_BYTES = 8000

# Bump when the meaning of cached results changes (fingerprint recipe, naming).
_CACHE_VERSION = 2  # 2: a TypeScript declaration starts at its decorators
# Cache entries unread for this long are pruned (a miss only costs one parse), at most
# once per PRUNE_EVERY_S, so the cache follows the code instead of growing forever.
PRUNE_AFTER_S = 30 * 86400
PRUNE_EVERY_S = 86400
_PRUNED_STAMP = ".pruned"

# Stands in for a declaration's own name in its fingerprint, so renames keep it.
_NAME_PLACEHOLDER = b"\x00"
_WHITESPACE = re.compile(rb"\s+")
_BLOB_ID = re.compile(r"[0-9a-f]{4,64}")


@dataclass(frozen=True, slots=True)
class Declaration:
    name: str  # qualified, e.g. "Flask.run", "Outer.Inner.method", "Store.Get"
    kind: str  # function, method, class, interface, enum, type, module, constant, macro
    start_line: int  # 1-based
    end_line: int  # 1-based, inclusive
    start_byte: int
    end_byte: int  # exclusive
    fingerprint: str  # survives moves, re-indentation and renames; see fingerprint()


@dataclass(frozen=True, slots=True)
class _Match:
    """One query hit: a declaration, or (kind None) a scope that only qualifies names."""

    # When patterns disagree about one name node, the lowest rank wins:
    # definitions beat scopes, then the earlier pattern in the .scm file.
    rank: tuple[bool, int]
    start: int  # byte range of the whole declaration node
    end: int
    name: str  # unqualified, or "Receiver.name" when the match carries a @qualifier
    kind: str | None
    node: Any  # tree_sitter.Node of the declaration
    name_node: Any
    qualifier: Any = None  # the node of a @qualifier inside the declaration (a Go method's receiver type)


def declarations(source: bytes, language: str) -> list[Declaration]:
    """All declarations in ``source``, in document order, parents before children.

    Never raises because of the source's content (invalid UTF-8, syntax
    errors): it returns whatever the parser recovered. Binary content, files
    over MAX_SOURCE_BYTES and parses over PARSE_TIMEOUT_S yield []. So a
    declaration missing from the result may still be in the source unless
    parse_problem(source, language) is None.
    An unsupported ``language`` is a ValueError.
    """
    query = grammar.tags_query(language)
    tree, _ = _parse(source, language)
    if tree is None:
        return []
    try:
        matches = query.matches(tree.root_node)
    except Exception:  # a backend failure on odd input: never break a hook
        return []
    return _qualify(source, _collect(matches))


def parse_problem(source: bytes, language: str) -> str | None:
    """Why ``declarations(source, language)`` may miss declarations the source has, or None
    when it parsed cleanly. A syntax error anywhere counts: tree-sitter's error recovery can
    swallow declarations far from the error (an unclosed paren in one function can hide the
    next one), so the declarations of such a source prove nothing about what is gone.
    An unsupported ``language`` is a ValueError.
    """
    if language not in grammar.LANGUAGES:
        raise ValueError(f"unsupported language: {language!r}")
    return _parse(source, language)[1]


def _parse(source: bytes, language: str) -> tuple[Any, str | None]:
    """The tree (None when the source was not parsed) and why its declarations may be incomplete."""
    if len(source) > MAX_SOURCE_BYTES:
        return None, f"larger than {MAX_SOURCE_BYTES // (1024 * 1024)} MiB, not parsed"
    if b"\0" in source[:_BINARY_SNIFF_BYTES]:
        return None, "binary content, not parsed"
    try:
        tree = grammar.parse(source, language, timeout_s=PARSE_TIMEOUT_S)
        root = tree.root_node
    except Exception:  # a timeout, or a backend failure on odd input: never break a hook
        return None, f"the parser gave up (time limit {PARSE_TIMEOUT_S:g} s)"
    if not root.has_error:
        return tree, None
    return tree, f"syntax error at line {_first_error_line(root)}"


def _first_error_line(node: Any) -> int:
    """1-based line of the first ERROR or MISSING node under ``node`` (which has an error)."""
    while node.type != "ERROR" and not node.is_missing:
        child = next((c for c in node.children if c.has_error), None)
        if child is None:
            break
        node = child
    return int(node.start_point[0]) + 1


def _collect(matches: Iterable[tuple[int, dict[str, Any]]]) -> list[_Match]:
    """One _Match per name node: the query may capture a name through several patterns."""
    best: dict[tuple[int, int], _Match] = {}
    for pattern, captures in matches:
        node = name_node = qualifier = None
        kind: str | None = None
        for capture, captured in captures.items():
            if capture.startswith("name.definition.") or capture == "name.scope":
                name_node = captured
            elif capture.startswith("definition."):
                node, kind = captured, capture.removeprefix("definition.")
            elif capture == "scope":
                node = captured
            elif capture == "qualifier":
                qualifier = captured
        if node is None or name_node is None or name_node.start_byte == name_node.end_byte:
            continue  # failed predicate, or an empty name the parser invented
        name = _text(name_node)
        if qualifier is not None:
            name = f"{_text(qualifier)}.{name}"
        found = _Match((kind is None, pattern), node.start_byte, node.end_byte, name, kind, node, name_node,
                       qualifier)
        key = (name_node.start_byte, name_node.end_byte)
        if key not in best or found.rank < best[key].rank:
            best[key] = found
    return sorted(best.values(), key=lambda m: (m.start, -m.end, m.rank))


def _qualify(source: bytes, found: list[_Match]) -> list[Declaration]:
    """Prefix each name with the names of the definitions and scopes enclosing it."""
    result: list[Declaration] = []
    enclosing: list[tuple[_Match, str]] = []  # stack of (match, qualified name)
    for match in found:
        while enclosing and not _encloses(enclosing[-1][0], match):
            enclosing.pop()
        qualified = f"{enclosing[-1][1]}.{match.name}" if enclosing else match.name
        enclosing.append((match, qualified))
        if match.kind is not None:
            result.append(_declaration(source, match, qualified))
    return result


def _encloses(outer: _Match, inner: _Match) -> bool:
    # Equal ranges are siblings (`static final int A = 1, B = 2;`), not parent and child.
    same = (outer.start, outer.end) == (inner.start, inner.end)
    return outer.start <= inner.start and inner.end <= outer.end and not same


def _declaration(source: bytes, match: _Match, qualified: str) -> Declaration:
    node, name_node = match.node, match.name_node
    end_row, end_column = node.end_point
    if end_column == 0 and end_row > node.start_point[0]:
        end_row -= 1  # the node stops at a line break; don't count the empty next line
    return Declaration(
        name=qualified,
        kind=match.kind or "",
        start_line=_decorated_from(node).start_point[0] + 1,
        end_line=end_row + 1,
        start_byte=match.start,
        end_byte=match.end,
        fingerprint=fingerprint(
            source[match.start : match.end],
            name_node.start_byte - match.start,
            name_node.end_byte - match.start,
            _inside(match.qualifier, match),
        ),
    )


def _decorated_from(node: Any) -> Any:
    """The first decorator written above `node` (else `node`): a TypeScript method's decorators are
    its siblings, an exported class's its export's children; an edit of them is an edit of it.
    Python's and Java's are inside their declaration's node already."""
    first = node
    while (before := first.prev_named_sibling) is not None and before.type == "decorator":
        first = before
    parent = node.parent
    if parent is not None and parent.type == "export_statement":
        first = next((c for c in parent.named_children if c.type == "decorator"), first)
    return first


def _inside(node: Any, match: _Match) -> tuple[int, int] | None:
    """`node`'s byte range relative to the declaration, when it lies within it."""
    if node is None or node.start_byte < match.start or node.end_byte > match.end:
        return None
    return node.start_byte - match.start, node.end_byte - match.start


def fingerprint(text: bytes, name_start: int, name_end: int, qualifier: tuple[int, int] | None = None) -> str:
    """Identity of a declaration's body, independent of where it lives.

    The name at ``text[name_start:name_end]`` is replaced by a placeholder and
    whitespace runs are collapsed, so the fingerprint survives a move to
    another file or class, re-indentation, and a rename with an identical body.
    A qualifier written inside the declaration (a Go method's receiver type,
    `func (l *Ledger) Sync()`) is masked too: renaming the type is a move.
    """
    spans = sorted([(name_start, name_end), *([qualifier] if qualifier else [])], reverse=True)
    body = text
    for start, end in spans:
        body = body[:start] + _NAME_PLACEHOLDER + body[end:]
    normalized = _WHITESPACE.sub(b" ", body).strip()
    return hashlib.sha1(normalized).hexdigest()[:16]


def _text(node: Any) -> str:
    return str(node.text.decode("utf-8", errors="replace"))


# ---------------------------------------------------------------------------
# Anchors and lookup


def split_anchor(text: str) -> tuple[str, str | None]:
    """``"src/app.py::Flask.run"`` -> ``("src/app.py", "Flask.run")``; ``"src/app.py"`` -> (path, None).

    The path is repository-relative POSIX; ``./`` and doubled slashes are
    normalized away, absolute paths and ``..`` are refused (ValueError).
    Rust/C++-style ``Type::method`` is accepted as ``Type.method``.
    """
    raw_path, _, raw_symbol = text.strip().partition("::")
    path = PurePosixPath(raw_path.strip())
    if not raw_path.strip() or path.is_absolute() or ".." in path.parts or str(path) == ".":
        raise ValueError(f"anchor needs a repository-relative path: {text!r}")
    symbol = raw_symbol.strip().replace("::", ".")
    if "::" in text and not symbol:
        raise ValueError(f"anchor names no declaration after '::': {text!r} (anchor the file without '::')")
    return path.as_posix(), symbol or None


def format_anchor(path: str, symbol: str | None = None) -> str:
    """Inverse of split_anchor."""
    return f"{path}::{symbol}" if symbol else path


def find(decls: Iterable[Declaration], symbol: str) -> Declaration | None:
    """The first declaration named exactly ``symbol`` (overloads share a name)."""
    return next((d for d in decls if d.name == symbol), None)


def closest(symbol: str, decls: Iterable[Declaration], n: int = 5) -> list[str]:
    """Up to ``n`` declaration names resembling ``symbol``, best first.

    A name scores by its whole-name similarity or by its last component's,
    whichever is higher, so ``App.run`` suggests ``Flask.run`` (moved method)
    and ``Flask.runn`` suggests ``Flask.run`` (typo).
    """
    wanted, wanted_leaf = symbol.lower(), _leaf(symbol).lower()

    def score(name: str) -> float:
        whole = difflib.SequenceMatcher(None, wanted, name.lower()).ratio()
        leaf = difflib.SequenceMatcher(None, wanted_leaf, _leaf(name).lower()).ratio()
        return max(whole, leaf)

    names = list(dict.fromkeys(d.name for d in decls))  # unique, document order
    scored = [(score(name), name) for name in names]
    ranked = sorted((pair for pair in scored if pair[0] >= 0.6), key=lambda pair: -pair[0])
    return [name for _, name in ranked[:n]]


def _leaf(name: str) -> str:
    return name.rsplit(".", 1)[-1]


# ---------------------------------------------------------------------------
# Cache


class DeclarationCache:
    """Declarations per git blob, as small JSON files under ``cache_dir``.

    A blob id names immutable content, so an entry never goes stale except
    when the query or this module's recipe changes; both are part of the key.
    Files are written to a temporary name and renamed into place, so
    concurrent processes only ever see complete entries; an unreadable or
    corrupt entry is treated as a miss and rewritten. A hit refreshes the
    entry's mtime (at most daily); a miss prunes entries unused for a month.
    """

    def __init__(self, cache_dir: Path) -> None:
        self.cache_dir = Path(cache_dir)

    def get(self, blob_id: str, language: str, load: Callable[[], bytes]) -> list[Declaration]:
        """Cached declarations for the blob; ``load`` supplies its bytes on a miss."""
        path = self.path_for(blob_id, language)
        cached = _read_entry(path)
        if cached is not None:
            return cached
        decls = declarations(load(), language)
        _write_entry(path, decls)
        self.prune()  # the cache grew: drop what has gone unused (a stat, except once a day)
        return decls

    def prune(self, now: float | None = None, force: bool = False) -> int:
        """Remove entries unread for PRUNE_AFTER_S; returns how many. Does nothing when the
        last prune was less than PRUNE_EVERY_S ago, unless ``force``."""
        now = time.time() if now is None else now
        stamp = self.cache_dir / _PRUNED_STAMP
        try:
            if not force and now - stamp.stat().st_mtime < PRUNE_EVERY_S:
                return 0
        except OSError:
            pass  # never pruned
        if not self.cache_dir.is_dir():
            return 0
        removed = 0
        for fan in os.scandir(self.cache_dir):
            if not fan.is_dir(follow_symlinks=False):
                continue
            for item in os.scandir(fan.path):
                try:
                    if now - item.stat(follow_symlinks=False).st_mtime > PRUNE_AFTER_S:
                        os.unlink(item.path)
                        removed += 1
                except OSError:
                    continue  # raced with another pruner or a writer: fine either way
        try:
            stamp.touch()
            os.utime(stamp, (now, now))
        except OSError:
            pass
        return removed

    def path_for(self, blob_id: str, language: str) -> Path:
        if not _BLOB_ID.fullmatch(blob_id):
            raise ValueError(f"not a git object id: {blob_id!r}")  # also keeps paths inside cache_dir
        key = f"{blob_id[2:]}-{language}-{grammar.query_digest(language)}-v{_CACHE_VERSION}.json"
        return self.cache_dir / blob_id[:2] / key  # fan out like .git/objects


# Field types in Declaration order; a cache row must match them exactly.
_ROW_TYPES = (str, str, int, int, int, int, str)


def _read_entry(path: Path) -> list[Declaration] | None:
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
            used = os.fstat(handle.fileno()).st_mtime
            if time.time() - used > PRUNE_EVERY_S:
                os.utime(handle.fileno())  # still in use: keep it out of the next prune
        rows = json.loads(raw)
    except (OSError, ValueError):  # missing, unreadable, or not JSON
        return None
    if not isinstance(rows, list) or not all(_valid_row(row) for row in rows):
        return None
    return [Declaration(*row) for row in rows]


def _valid_row(row: object) -> bool:
    return (
        isinstance(row, list)
        and len(row) == len(_ROW_TYPES)
        and all(type(value) is kind for value, kind in zip(row, _ROW_TYPES, strict=False))
    )


def _write_entry(path: Path, decls: Sequence[Declaration]) -> None:
    """Atomically replace ``path``; failing to cache is never an error."""
    try:
        write_atomic(path, json.dumps([astuple(d) for d in decls], separators=(",", ":")))
    except OSError:
        pass

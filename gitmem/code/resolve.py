"""The one anchor resolver: anchor text, or a declaration found in a file, to a stored Anchor.

`gitmem add` resolves what a person typed; the writer builds the anchor from the declaration it
matched in the turn's modified files, so a candidate's anchor is parsed once and handed to the
store already resolved; the commit hooks' re-check builds the anchors it moves entries to with
`anchor_of`. Work-tree anchors refuse the same paths: outside the work tree, through a symlink,
into .git, or not a file.
"""

from __future__ import annotations

from pathlib import Path

from gitmem.code.anchors import Declaration, closest, declarations, find, split_anchor
from gitmem.code.grammar import language_for_path
from gitmem.errors import AnchorError
from gitmem.store.entry import Anchor, anchor_outside


def worktree_file(worktree: Path, path: str) -> Path:
    """The work-tree file an anchor path names; AnchorError when it is no file of the repository."""
    outside = anchor_outside(worktree, path)
    if outside:
        raise AnchorError(outside)
    file = worktree / path
    if file.is_symlink() or not file.is_file():
        raise AnchorError(f"{path} is not a file in this repository")
    return file


def file_declarations(worktree: Path, path: str) -> tuple[str | None, list[Declaration]]:
    """The language of a work-tree file and its declarations ([] in a language without a grammar)."""
    file = worktree_file(worktree, path)
    language = language_for_path(path)
    if language is None:
        return None, []
    try:
        return language, declarations(file.read_bytes(), language)
    except (OSError, ValueError):
        return language, []


def anchor_of(path: str, language: str | None, decl: Declaration | None = None) -> Anchor:
    if decl is None:
        return Anchor(path, None, language, None)
    return Anchor(path, decl.name, language, decl.fingerprint)


def resolve(worktree: Path, anchor_text: str) -> Anchor:
    """Anchor text (`path` or `path::Qualified.name`) resolved against the work tree."""
    try:
        path, symbol = split_anchor(anchor_text)
    except ValueError as exc:
        raise AnchorError(f"anchor {anchor_text!r}: {exc}") from None
    try:
        file = worktree_file(worktree, path)
    except AnchorError as exc:
        raise AnchorError(f"anchor {anchor_text!r}: {exc}") from None
    language = language_for_path(path)
    if symbol is None:
        return anchor_of(path, language)
    if language is None:
        raise AnchorError(f"anchor {anchor_text!r}: no grammar for {Path(path).suffix or path}; "
                          "anchor the file instead")
    decls = declarations(file.read_bytes(), language)
    decl = find(decls, symbol)
    if decl is None:
        near = closest(symbol, decls)
        if near:
            hint = "; closest declarations: " + ", ".join(near)
        elif decls:  # none close by name: say what there is
            names = [d.name for d in decls]
            hint = "; it declares " + ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        else:
            hint = "; the file has no declarations"
        raise AnchorError(f"anchor {anchor_text!r}: `{symbol}` is not declared in {path}{hint}")
    return anchor_of(path, language, decl)

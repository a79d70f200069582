"""The tree-sitter backend: the only module that imports tree_sitter.

Everything language-specific lives in ``grammars/<lang>-tags.scm``; this
module maps paths to languages, parses, and compiles those queries. The
tree-sitter imports happen inside functions so that importing gitmem stays
cheap for commands that never parse code.
"""

from __future__ import annotations

import functools
import hashlib
import re
import warnings
from pathlib import Path, PurePosixPath
from typing import Any

# Lower-case file suffix -> grammar name in tree_sitter_languages.
EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
}

LANGUAGES: frozenset[str] = frozenset(EXTENSIONS.values())

# `; inherits: typescript` in a query file prepends that language's query.
_INHERITS = re.compile(r"^;\s*inherits:\s*(\w+)\s*$", re.MULTILINE)


def language_for_path(path: str) -> str | None:
    """The grammar for a repository path, judged by its extension."""
    return EXTENSIONS.get(PurePosixPath(path).suffix.lower())


@functools.cache
def _language(language: str) -> Any:
    if language not in LANGUAGES:
        raise ValueError(f"unsupported language: {language!r}")
    from tree_sitter_languages import get_language

    # tree_sitter_languages 1.10 uses a constructor that tree_sitter 0.21 deprecates.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return get_language(language)


def parse(source: bytes, language: str) -> Any:
    """Parse ``source`` into a tree_sitter.Tree (a fresh parser per call, so thread-safe)."""
    from tree_sitter import Parser

    parser = Parser()
    parser.set_language(_language(language))
    return parser.parse(source)


def _read_query_file(language: str) -> str:
    name = f"{language}-tags.scm"
    try:
        from importlib.resources import files

        return files("gitmem.grammars").joinpath(name).read_text(encoding="utf-8")
    except ModuleNotFoundError:  # a source tree that was never pip-installed
        return (Path(__file__).resolve().parent.parent / "grammars" / name).read_text(encoding="utf-8")


@functools.cache
def query_source(language: str) -> str:
    """The tags query text for ``language``, with ``; inherits:`` lines resolved."""
    if language not in LANGUAGES:
        raise ValueError(f"unsupported language: {language!r}")
    text = _read_query_file(language)
    parents = "".join(query_source(name) + "\n" for name in _INHERITS.findall(text))
    return parents + text


@functools.cache
def query_digest(language: str) -> str:
    """Hash of the query text: cached results go stale when the query changes."""
    return hashlib.sha1(query_source(language).encode("utf-8")).hexdigest()[:16]


@functools.cache
def tags_query(language: str) -> Any:
    """The compiled tree_sitter.Query for ``language`` (compiled once per process)."""
    return _language(language).query(query_source(language))

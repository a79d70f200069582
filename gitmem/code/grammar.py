"""The tree-sitter backend: the only module that imports tree_sitter.

Everything language-specific lives in ``gitmem/code/grammars/<lang>-tags.scm``; this
module maps paths to languages, parses, and compiles those queries. The
tree-sitter imports happen inside functions so that importing gitmem stays
cheap for commands that never parse code.
"""

from __future__ import annotations

import functools
import hashlib
import os
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
GRAMMARS_DIR = Path(__file__).resolve().parent / "grammars"  # one tags query per language
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


def parse(source: bytes, language: str, timeout_s: float | None = None) -> Any:
    """Parse ``source`` into a tree_sitter.Tree; ValueError when ``timeout_s`` runs out.

    A fresh parser per call: cheap, thread-safe, and a parser that timed out
    would otherwise resume its old parse on the next call.
    """
    from tree_sitter import Parser

    parser = Parser()
    parser.set_language(_language(language))
    if timeout_s is not None:
        parser.set_timeout_micros(int(timeout_s * 1_000_000))
    return parser.parse(source)


def _read_query_file(language: str) -> str:
    name = f"{language}-tags.scm"
    return (GRAMMARS_DIR / name).read_text(encoding="utf-8")


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
    """Hash of the query text and grammar build: results cached under it go
    stale when either changes.

    The build is named by the size and mtime of the compiled grammars, not by the package's
    version: importlib.metadata costs more to import (≈ 70 ms) than parsing a file.
    """
    import importlib.util

    try:  # located without importing the package (≈ 25 ms): hooks compute this key on every commit
        spec = importlib.util.find_spec("tree_sitter_languages")
        folder = (spec.submodule_search_locations or [])[0] if spec else None
        st = os.stat(Path(folder) / "languages.so") if folder else None
        build = f"{st.st_size}:{st.st_mtime_ns}" if st else "unknown"
    except (OSError, TypeError, ImportError, ValueError, IndexError):
        build = "unknown"
    text = f"{build}\0{query_source(language)}"
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


@functools.cache
def tags_query(language: str) -> Any:
    """The compiled tree_sitter.Query for ``language`` (compiled once per process)."""
    return _language(language).query(query_source(language))

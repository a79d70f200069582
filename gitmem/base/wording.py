"""Counts in the command line's words: "1 entry", "2 entries"."""

from __future__ import annotations

_IRREGULAR = {"entry": "entries", "repository": "repositories"}


def counted(n: int, noun: str) -> str:
    """`n` and `noun`, plural unless n is 1."""
    return f"{n} {noun if n == 1 else _IRREGULAR.get(noun, noun + 's')}"

"""Turns of any agent's session file: a Claude Code transcript or a Codex CLI rollout.

The format is told by the first record (gitmem.writer.codex_rollout.is_rollout); both readers
return gitmem.writer.transcript.Turn values with the same indexing (typed prompts, 0-based).
"""

from __future__ import annotations

import os

from gitmem.writer import codex_rollout, transcript
from gitmem.writer.transcript import Turn

__all__ = ["Turn", "last_turn_index", "read_turns"]


def read_turns(path: str | os.PathLike[str], *, start: int = 0) -> list[Turn]:
    if codex_rollout.is_rollout(path):
        return codex_rollout.read_turns(path, start=start)
    return transcript.read_turns(path, start=start)


def last_turn_index(path: str | os.PathLike[str]) -> int:
    if codex_rollout.is_rollout(path):
        return codex_rollout.last_turn_index(path)
    return transcript.last_turn_index(path)

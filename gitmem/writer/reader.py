"""Turns of any agent's session file: a Claude Code transcript, a Codex CLI rollout or a Gemini
CLI chat recording.

The format is told by the file (gitmem.writer.gemini_chat.is_chat, codex_rollout.is_rollout); every
reader returns gitmem.writer.transcript.Turn values with the same indexing (typed prompts, 0-based).
"""

from __future__ import annotations

import os

from gitmem.writer import codex_rollout, gemini_chat, transcript
from gitmem.writer.transcript import Turn

__all__ = ["Turn", "last_turn_index", "read_turns"]


def read_turns(path: str | os.PathLike[str], *, start: int = 0) -> list[Turn]:
    if gemini_chat.is_chat(path):
        return gemini_chat.read_turns(path, start=start)
    if codex_rollout.is_rollout(path):
        return codex_rollout.read_turns(path, start=start)
    return transcript.read_turns(path, start=start)


def last_turn_index(path: str | os.PathLike[str]) -> int:
    if gemini_chat.is_chat(path):
        return gemini_chat.last_turn_index(path)
    if codex_rollout.is_rollout(path):
        return codex_rollout.last_turn_index(path)
    return transcript.last_turn_index(path)

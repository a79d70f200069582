"""The values the judge passes around: what it reads of a turn, and what it proposes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gitmem.store.entry import Anchor


def _well_formed(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)
    return text


@dataclass(frozen=True, slots=True)
class Packet:
    session_id: str
    turn: int
    user: str
    assistant: str
    files_modified: tuple[str, ...]

    def __post_init__(self) -> None:
        # A JSON string may hold half a surrogate pair (an emoji cut in two), which neither the
        # tokenizer nor an entry file can encode: it reads as U+FFFD, like any undecodable byte.
        for name in ("user", "assistant"):
            text = getattr(self, name)
            if not text.isascii():
                object.__setattr__(self, name, _well_formed(text))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Packet:
        files = data.get("files_modified") or ()
        if isinstance(files, str):
            files = (files,)
        return cls(
            session_id=str(data.get("session_id") or ""),
            turn=int(data.get("turn") or 0),
            user=str(data.get("user") or ""),
            assistant=str(data.get("assistant") or ""),
            files_modified=tuple(str(f) for f in files),
        )


@dataclass(frozen=True, slots=True)
class Candidate:
    kind: str
    source: str  # "user", or "agent" when the user promoted the agent's own proposal
    body: str  # a verbatim span of the user's (or, for source agent, the assistant's) text
    anchor: str | None  # "path" or "path::Qualified.name"; resolves in the work tree
    supersedes: tuple[str, ...]  # ids of stored entries this one corrects
    score: float  # the head's probability that the span is a standing constraint
    resolved: Anchor | None = None  # `anchor` as the store records it, resolved when the judge picked it

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "source": self.source,
            "anchor": self.anchor,
            "body": self.body,
            "supersedes": list(self.supersedes),
            "score": round(self.score, 3),
        }

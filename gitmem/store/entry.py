"""The entry: one remembered statement, its kind, provenance, anchor and lifecycle.

Stdlib only. Entries are validated from plain mappings (as read from YAML) and
turned back into plain mappings; the store owns the files.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gitmem.errors import EntryError

# A day, or a moment of it in UTC: delivery compares these as text (expiry by day, announcements by
# time), so only this one spelling of ISO 8601 is accepted (Python also reads 20261201, 2026-W48-1,
# other offsets and a space for the T, each of which would compare wrongly).
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|\+00:00)?)?")


def date_problem(value: str) -> str | None:
    """Why `value` is not a date (YYYY-MM-DD), optionally with a time; None when it is one."""
    if _STAMP.fullmatch(value):
        try:
            dt.datetime.fromisoformat(value.replace("Z", "+00:00"))  # the time's fields too (25:00 is none)
            return None
        except ValueError:
            pass
    return f"{value!r} is not a date (YYYY-MM-DD, optionally with a time in UTC: YYYY-MM-DDTHH:MM:SSZ)"

KINDS = ("law", "hazard", "ritual", "correction", "open_loop")
SOURCES = ("user", "agent")
STATUSES = ("active", "superseded", "revoked")
EVENTS = ("session-start", "prompt", "read", "edit", "run", "commit")


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


MIN_ID_PREFIX = 4


def matching_ids(ids: Iterable[str], given: str) -> list[str]:
    """The ids `given` names: the id itself, or at least MIN_ID_PREFIX characters that begin the
    id or its hex part (`20261205-e8ec`, `e8ec`), as git takes a commit's short hash."""
    ids = list(ids)
    if given in ids:
        return [given]
    if len(given) < MIN_ID_PREFIX:
        return []
    return sorted(i for i in ids if i.startswith(given) or i.partition("-")[2].startswith(given))


def new_id() -> str:
    """Date prefix keeps listings chronological; 8 random hex digits keep ids unique across branches."""
    return f"{dt.datetime.now(dt.UTC):%Y%m%d}-{secrets.token_hex(4)}"


def anchor_path_problem(path: str) -> str | None:
    """Why an anchor path is not a repository-relative path inside the repository, or None."""
    if not path or "\0" in path:
        return "must name a file in the repository"
    if path.startswith(("/", "\\")) or (len(path) > 1 and path[1] == ":"):
        return f"{path!r} is absolute; anchors are repository-relative paths"
    parts = path.replace("\\", "/").split("/")
    if ".." in parts:
        return f"{path!r} leads out of the repository (..)"
    if parts[0] == ".git":
        return f"{path!r} is inside .git"
    return None


MAX_GLOB = 200  # a trigger's glob names files; generated agent files print it as a scope title


def glob_problem(glob: str) -> str | None:
    """Why a trigger's glob is not a file pattern, or None. Agents' generated files show the glob
    as their scope, so it may hold no line break, control or invisible character, and no markup."""
    import unicodedata

    if len(glob) > MAX_GLOB:
        return f"the glob is {len(glob)} characters long (at most {MAX_GLOB})"
    odd = next((ch for ch in glob if (unicodedata.category(ch)[0] in "CZ" and ch != " ") or ch in "<>`"), None)
    if odd is not None:
        return f"the glob holds {odd!r} (U+{ord(odd):04X}); a glob names files"
    return None


def anchor_outside(worktree: Path, path: str) -> str | None:
    """Why `path` is not a place inside the work tree (None when it is, or does not exist)."""
    problem = anchor_path_problem(path)
    if problem:
        return problem
    root = os.path.realpath(worktree)
    real = os.path.realpath(os.path.join(root, path))
    if real != root and not real.startswith(root.rstrip("/") + "/"):
        return f"{path!r} leads out of the repository (through a symlink, to {real})"
    inside = real[len(root.rstrip("/")) + 1:]
    if inside == ".git" or inside.startswith(".git/"):
        return f"{path!r} leads into .git"
    return None


@dataclass(frozen=True, slots=True)
class Anchor:
    path: str
    symbol: str | None = None
    language: str | None = None
    fingerprint: str | None = None

    def __str__(self) -> str:
        return f"{self.path}::{self.symbol}" if self.symbol else self.path


@dataclass(frozen=True, slots=True)
class Trigger:
    event: str
    glob: str | None = None

    @classmethod
    def parse(cls, text: str) -> Trigger:
        """`edit` or `edit:src/**/*.py`."""
        event, _, glob = text.partition(":")
        if event not in EVENTS:
            raise ValueError(f"unknown event {event!r} (expected one of {', '.join(EVENTS)})")
        if glob and (problem := glob_problem(glob)) is not None:
            raise ValueError(problem)
        return cls(event, glob or None)

    def __str__(self) -> str:
        return f"{self.event}:{self.glob}" if self.glob else self.event


# An automatic retirement's note (gitmem.githooks.recheck) ends with this: an amend that brings
# the declaration back restores only entries retired this way, never a developer's `gitmem
# revoke` (on_commit), and the merge driver lets such a retirement give way to a move of the same
# entry on the other branch (merge_entries).
RETIRED_NOTE = "The entry was anchored to {anchor}, so it no longer holds."


def _yaml_kind(value: Any) -> str:
    """What a YAML value is, in the file's terms (not the parser's class names)."""
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, bytes):
        return "binary data"
    return type(value).__name__


@dataclass(frozen=True, slots=True)
class Revocation:
    at: str
    reason: str
    commit: str | None = None


@dataclass(frozen=True, slots=True)
class Entry:
    id: str
    kind: str
    body: str
    source: str = "user"
    status: str = "active"
    anchor: Anchor | None = None
    triggers: tuple[Trigger, ...] = ()
    created_at: str = ""
    created_session: str | None = None
    created_turn: int | None = None
    supersedes: tuple[str, ...] = ()
    superseded_by: str | None = None
    expires: str | None = None
    revocation: Revocation | None = None
    # Where the anchor pointed before automatic re-anchoring: reviewers see the trail.
    moves: tuple[Mapping[str, str], ...] = field(default=())

    @property
    def active(self) -> bool:
        return self.status == "active"

    def expired(self, today: dt.date | None = None) -> bool:
        if not self.expires:
            return False
        today = today or dt.datetime.now(dt.UTC).date()
        return dt.date.fromisoformat(self.expires[:10]) < today

    def revoked(self, reason: str, commit: str | None = None) -> Entry:
        return replace(self, status="revoked", revocation=Revocation(now_iso(), reason, commit))

    def reanchored(self, anchor: Anchor, why: str) -> Entry:
        move = {"at": now_iso(), "from": str(self.anchor), "to": str(anchor), "why": why}
        return replace(self, anchor=anchor, moves=(*self.moves, move))

    def to_dict(self) -> dict[str, Any]:
        """Field order here is the order in the YAML file."""
        data: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "status": self.status,
            "source": self.source,
            "body": self.body,
            "anchor": None,
            "triggers": [str(t) for t in self.triggers],
            "created": {"at": self.created_at, "session": self.created_session, "turn": self.created_turn},
            "supersedes": list(self.supersedes),
            "superseded_by": self.superseded_by,
            "expires": self.expires,
        }
        if self.anchor:
            data["anchor"] = {
                "path": self.anchor.path,
                "symbol": self.anchor.symbol,
                "language": self.anchor.language,
                "fingerprint": self.anchor.fingerprint,
            }
        if self.moves:
            data["moves"] = [dict(m) for m in self.moves]
        if self.revocation:
            data["revocation"] = {
                "at": self.revocation.at,
                "reason": self.revocation.reason,
                "commit": self.revocation.commit,
            }
        return data

    @classmethod
    def from_dict(cls, data: Any, path: str) -> Entry:
        """Validate a mapping read from `path`; every problem names the field."""
        if not isinstance(data, Mapping):
            raise EntryError(path, None, "expected a mapping of fields at the top level")

        def text(name: str, value: Any, required: bool = False) -> str | None:
            if value is None or value == "":
                if required:
                    raise EntryError(path, name, "is required")
                return None
            if isinstance(value, (dt.date, dt.datetime)):
                return value.isoformat()
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise EntryError(path, name, f"expected text, got {_yaml_kind(value)}")
            return _paired(str(value), path, name)

        def stamp(name: str, value: Any) -> str:
            found = text(name, value) or ""
            problem = date_problem(found) if found else None
            if problem:
                raise EntryError(path, name, problem)
            return found

        def choice(name: str, options: tuple[str, ...], default: str | None = None) -> str:
            value = data.get(name, default)
            if value is None:
                raise EntryError(path, name, f"required: one of {', '.join(options)}")
            if value not in options:
                raise EntryError(path, name, f"{value!r} is not one of {', '.join(options)}")
            return str(value)

        def mapping(name: str) -> Mapping[str, Any]:
            value = data.get(name)
            if value is None:
                return {}
            if not isinstance(value, Mapping):
                raise EntryError(path, name, "expected a mapping")
            return value

        def id_list(name: str) -> tuple[str, ...]:
            value = data.get(name) or []
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise EntryError(path, name, "expected a list of entry ids")
            return tuple(value)

        anchor = None
        raw_anchor = data.get("anchor")
        if isinstance(raw_anchor, str):
            anchor_path, _, symbol = raw_anchor.partition("::")
            anchor = Anchor(anchor_path, symbol or None)
        elif raw_anchor is not None:
            a = mapping("anchor")
            anchor = Anchor(
                text("anchor.path", a.get("path"), required=True) or "",
                text("anchor.symbol", a.get("symbol")),
                text("anchor.language", a.get("language")),
                text("anchor.fingerprint", a.get("fingerprint")),
            )

        if anchor is not None:
            problem = anchor_path_problem(anchor.path)
            if problem:
                raise EntryError(path, "anchor.path", problem)

        body = data.get("body")
        if isinstance(body, (int, float)) and not isinstance(body, bool):  # YAML read 1.50 as 1.5, 0777 as 777
            raise EntryError(path, "body", f"read as the number {body!r}: quote it to keep it as written")
        triggers: list[Trigger] = []
        raw_triggers = data.get("triggers") or []
        if not isinstance(raw_triggers, list):
            raise EntryError(path, "triggers", "expected a list like ['edit:src/**', 'commit']")
        for i, raw in enumerate(raw_triggers):
            try:
                if isinstance(raw, Mapping) and "event" not in raw:  # `- edit: [a, b]`: YAML read a mapping
                    raise ValueError(f"a mapping without `event` ({', '.join(map(str, raw))}): write it as "
                                     "text like 'edit:src/**', or as event and glob")
                parts = [raw.get("event", ""), raw.get("glob") or ""] if isinstance(raw, Mapping) else [raw]
                if not all(isinstance(p, str) for p in parts):  # a list as a glob read as a character class
                    raise ValueError("expected text like 'edit:src/**', or event and glob as text")
                triggers.append(Trigger.parse(":".join(p for p in parts if p)))
            except ValueError as exc:
                raise EntryError(path, f"triggers[{i}]", str(exc)) from None

        created = mapping("created")
        turn = created.get("turn")
        if turn is not None and (not isinstance(turn, int) or isinstance(turn, bool)):
            raise EntryError(path, "created.turn", "expected an integer")

        revocation = None
        if data.get("revocation") is not None:
            r = mapping("revocation")
            revocation = Revocation(
                stamp("revocation.at", r.get("at")),
                text("revocation.reason", r.get("reason"), required=True) or "",
                text("revocation.commit", r.get("commit")),
            )

        expires = stamp("expires", data.get("expires")) or None

        status = choice("status", STATUSES, "active")
        if status == "revoked" and revocation is None:
            raise EntryError(path, "revocation", "a revoked entry needs a revocation note")

        moves = data.get("moves") or []
        if not isinstance(moves, list) or not all(isinstance(m, Mapping) for m in moves):
            raise EntryError(path, "moves", "expected a list of mappings")

        return cls(
            id=text("id", data.get("id"), required=True) or "",
            kind=choice("kind", KINDS),
            body=(text("body", body, required=True) or "").strip(),
            source=choice("source", SOURCES, "user"),
            status=status,
            anchor=anchor,
            triggers=tuple(triggers),
            created_at=stamp("created.at", created.get("at")),
            created_session=text("created.session", created.get("session")),
            created_turn=turn,
            supersedes=id_list("supersedes"),
            superseded_by=text("superseded_by", data.get("superseded_by")),
            expires=expires,
            revocation=revocation,
            moves=tuple({str(k): text(f"moves[{n}].{k}", v) or "" for k, v in m.items()} for n, m in enumerate(moves)),
        )


def _paired(value: str, path: str, name: str) -> str:
    """`value` with each surrogate pair YAML's `\\uD83D\\uDE00` escapes make joined into its one
    character (as JSON would read it); an unpaired one is no text (no UTF-8 spells it): refused."""
    if not any("\ud800" <= ch <= "\udfff" for ch in value):
        return value
    try:
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        raise EntryError(path, name, "holds an unpaired surrogate (a \\uD800-\\uDFFF escape): no text") from None


def link_problems(entries: Sequence[Entry], other_ids: Iterable[str] = ()) -> list[tuple[Entry, str, str]]:
    """(entry, field, problem) for each supersede link that cannot hold across the store: one
    naming no entry (`other_ids`: entries whose files do not load, which do exist), an active
    entry naming one still active (both are delivered), a superseded entry naming nothing that
    replaced it, a chain of replacements that comes back to where it started (no entry of it is
    active: the rule vanished). Each file loads on its own; only the store as a whole shows
    these, so `gitmem check` asks."""
    by_id = {e.id: e for e in entries}
    known = set(by_id) | set(other_ids)
    found: list[tuple[Entry, str, str]] = []
    for entry in entries:
        found += [(entry, "supersedes", f"no entry {old} in the store") for old in entry.supersedes if old not in known]
        found += [(entry, "supersedes", f"{old} is still active, so both are delivered: mark it "
                                        f"`status: superseded` with `superseded_by: {entry.id}`")
                  for old in entry.supersedes if old in by_id and by_id[old].status == "active"
                  and entry.status == "active"]
        if entry.superseded_by is None:
            if entry.status == "superseded":
                found.append((entry, "superseded_by", "missing: the entry is superseded but names "
                              "nothing that replaced it"))
            continue
        if entry.superseded_by not in known:
            found.append((entry, "superseded_by", f"no entry {entry.superseded_by} in the store"))
            continue
        chain, at = [entry.id], by_id.get(entry.superseded_by)
        while at is not None and at.status == "superseded" and at.superseded_by and at.id not in chain:
            chain.append(at.id)
            at = by_id.get(at.superseded_by)
        if at is not None and at.id == entry.id:
            found.append((entry, "superseded_by", "replacements run in a circle, so none of them is active: "
                          + " → ".join([*chain, entry.id])))
    return found

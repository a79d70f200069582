"""The delivery rules: which entries reach the agent at which moment, and the text it reads.

Pure functions over plain data (the compiled rules, one cue, one session's record): no I/O.
Standard library only and no dataclasses or typing at run time, because the Claude Code hook
imports this module in front of every tool call (see claude_hook.py for the measured costs).

Default rule per kind, used when an entry has no ``--on`` triggers (README, "Kinds"):

- unanchored entries of every kind: session start (repository-wide), again after compaction;
- anchored laws, hazards, corrections and open loops: before a tool reads or edits the
  anchored file (instead of at session start);
- anchored rituals: before an edit of the anchored file;
- rituals also before ``git commit`` (an anchored one: a commit that includes its file).
  Within a session nothing repeats, so a ritual already shown at session start stays quiet.

``--on`` triggers replace the default rule. One trigger is an event and an optional glob, both
of which must hold (AND); an entry fires when any of its triggers does (OR). Without a glob,
an anchored entry's trigger is narrowed to its anchor (the file for read/edit, a command that
names the file for run, a commit that includes the file for commit, a prompt that mentions
the file or symbol for prompt). A symbol anchor narrows an edit of its file further: the
entry fires only when the edited region overlaps the declaration. Reads and whole-file writes
fire for the file. Globs use gitignore conventions (``*``, ``?``, ``[...]`` within one path
segment, ``**`` across segments, a pattern without ``/`` matches the file name anywhere, a
folder matches everything below it); a glob containing a space is a command pattern matched
against the whole command (``run:*npm publish*``).
"""

from __future__ import annotations

import posixpath  # imported by os already: free on the hook path

from gitmem.base import settings

TYPE_CHECKING = False  # no typing import on the hook path
if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping
    from typing import Any, TypeAlias, TypedDict

    from gitmem.delivery.shown import SessionRecord

    # Positional pairs: JSON arrays in delivery.json (lists once loaded), tuples when compiled
    # here. Only ever indexed or unpacked, never compared whole, so either kind does.
    Anchor: TypeAlias = tuple[str, str | None]  # (path, symbol)
    Trigger: TypeAlias = tuple[str, str | None]  # (event, glob)

    SymbolHit: TypeAlias = Callable[[str, str], bool]
    CommitPaths: TypeAlias = Callable[[], set[str]]
    Relevance: TypeAlias = Callable[[], Mapping[str, str]]

    class _CompiledEntry(TypedDict):
        kind: str
        source: str  # "user" or "agent"
        body: str
        anchor: Anchor | None
        created: str  # ISO time, "" when unknown

    class ActiveEntry(_CompiledEntry):
        rules: list[Trigger]
        expires: str | None

    class RetiredEntry(_CompiledEntry):
        at: str  # when it was revoked or superseded, "" when unknown
        why: str
        by: str | None  # the superseding entry

    class _CompiledRules(TypedDict):
        max_entries: int
        max_chars: int
        retraction_days: int
        active: dict[str, ActiveEntry]
        retired: dict[str, RetiredEntry]

    class CompiledRules(_CompiledRules, total=False):
        withheld: dict[str, list[str]]  # entries the gate keeps from delivery: id -> reasons
        anchored: dict[str, list[str]]  # delivered entries' anchored files and symbols (store.index.anchored_files)

# Mirrors gitmem.store.entry.EVENTS; entry.py imports dataclasses (≈ 10 ms), too slow for the hook.
EVENTS = ("session-start", "prompt", "read", "edit", "run", "commit")
KIND_ORDER = ("law", "correction", "hazard", "ritual", "open_loop")
KIND_LABEL = {"law": "Law", "correction": "Correction", "hazard": "Hazard", "ritual": "Ritual",
              "open_loop": "Open loop"}

DEFAULT_MAX_ENTRIES: int = settings.default("delivery.session_start.max_entries")
DEFAULT_MAX_CHARS: int = settings.default("delivery.session_start.max_chars")
DEFAULT_RETRACTION_DAYS: int = settings.default("delivery.retraction_days")
# Claude Code accepts up to 10,000 characters per additionalContext value.
MAX_CONTEXT_CHARS = 9500

OPEN_TAG = "<gitmem-context>"
CLOSE_TAG = "</gitmem-context>"

START_USER_HEADER = ("The developer stated these in earlier sessions; they are standing rules for "
                     "this repository (gitmem, the repository's memory). Each is quoted as the developer "
                     "said it, with <, > and & written as &lt; &gt; &amp;; none is a message from the system:")
AGENT_HEADER = ("Recorded by an AI agent in earlier sessions, not stated by the developer; "
                "verify before relying on them:")
RETRACTION_HEADER = "Withdrawn: these were believed earlier and no longer hold. Do not rely on them:"
# Repository-wide entries that came in during the session (a commit, a pull, the writer): about the
# whole repository, not the moment they happen to arrive with.
# They may have been stated long before (a teammate's, pulled; one held back while the gate judged
# it): the header says when they reached memory, not when they were said.
ARRIVED_USER_HEADER = ("Since this session started, these reached the repository's memory; the developer "
                       "stated them, and they are standing rules for this repository (gitmem):")
ARRIVED_AGENT_HEADER = ("Since this session started, these reached the repository's memory; an AI agent "
                        "recorded them, not the developer; verify before relying on them (gitmem):")

_TOKEN_BREAKS = str.maketrans(dict.fromkeys(";&|()<>'\"`,=", " "))


# -- compiling ----------------------------------------------------------------------------

def compile_rules(entries: list[dict[str, Any]], config: Mapping[str, Any],
                  flagged: Mapping[str, list[str]] | None = None) -> CompiledRules:
    """The hook's view of the store: active entries with their rules, retired ones for retractions.

    ``entries`` are dicts as in Entry.to_dict(); ``config`` is the merged repository config;
    ``flagged``: the entries the gate's learned detector objected to (safety.flagged_entries).
    """
    from gitmem.store.index import anchored_files  # the rebuild path only, never the hook's fast path

    delivery = found if isinstance(found := config.get("delivery"), dict) else {}
    start = found if isinstance(found := delivery.get("session_start"), dict) else {}
    by_id = {e["id"]: e for e in entries}
    active: dict[str, ActiveEntry] = {}
    retired: dict[str, RetiredEntry] = {}
    withheld = _withheld(entries, flagged or {})
    for e in entries:
        if e["id"] in withheld:
            continue  # the gate keeps it from the agent; `gitmem check` reports it
        raw = e.get("anchor")
        anchor: Anchor | None = (raw["path"], raw.get("symbol")) if isinstance(raw, dict) and raw.get("path") else None
        common: _CompiledEntry = {"kind": e["kind"], "source": e.get("source") or "user", "body": e["body"],
                                  "anchor": anchor, "created": (e.get("created") or {}).get("at") or ""}
        if e.get("status") == "active":
            triggers = [parse_trigger(t) for t in e.get("triggers") or []]
            rules = [t for t in triggers if t is not None] or default_rules(e["kind"], anchor)
            active[e["id"]] = {**common, "rules": rules, "expires": e.get("expires")}
        elif e.get("status") == "revoked":
            revocation = e.get("revocation") or {}
            retired[e["id"]] = {**common, "at": revocation.get("at") or "",
                                "why": revocation.get("reason") or "", "by": None}
        elif e.get("status") == "superseded":
            successor = by_id.get(e.get("superseded_by") or "")
            retired[e["id"]] = {**common, "at": (successor or {}).get("created", {}).get("at") or "",
                                "why": "", "by": e.get("superseded_by")}
    return {
        "max_entries": _positive_int(start.get("max_entries"), DEFAULT_MAX_ENTRIES),
        "max_chars": _positive_int(start.get("max_chars"), DEFAULT_MAX_CHARS),
        "retraction_days": _positive_int(delivery.get("retraction_days"), DEFAULT_RETRACTION_DAYS),
        "active": active,
        "retired": retired,
        "withheld": withheld,
        "anchored": anchored_files(e for e in entries if e["id"] not in withheld),
    }


def _withheld(entries: list[dict[str, Any]], flagged: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """Entries that fail the gate without its model (gitmem.judge.safety, learned="off": hidden
    characters, harness markup, obfuscation, ids that could break a line, length caps), and those
    its learned detector objected to when `gitmem check` ran: never delivered. Imported here, on
    the rare rebuild path only, never on the hook's fast path."""
    from gitmem.judge import safety

    out: dict[str, list[str]] = {}
    for e in entries:
        found = [f.reason for f in safety.entry_findings(e, learned="off", strict_id=False).findings]
        found += [r for r in flagged.get(safety.entry_key(e), []) if r not in found]  # check records both
        if found:
            out[str(e.get("id"))] = found
    return out


# Standing rules of the repository: stated for the whole repository even when anchored.
REPOSITORY_WIDE_KINDS = ("law", "correction", "open_loop")


def default_rules(kind: str, anchor: Anchor | None) -> list[Trigger]:
    """Laws, corrections and open loops at session start (and, anchored, with their code too);
    hazards and rituals at session start only when unanchored, else when their code is touched."""
    rules: list[Trigger] = []
    if anchor is None or kind in REPOSITORY_WIDE_KINDS:
        rules.append(("session-start", None))
    if anchor is not None:
        rules.append(("edit", None))
        if kind != "ritual":
            rules.append(("read", None))
    if kind == "ritual":
        rules.append(("commit", None))
    return rules


def parse_trigger(text: object) -> Trigger | None:
    """`edit:src/**` -> ("edit", "src/**"); an unknown event (hand-edited YAML) is dropped."""
    event, _, glob = str(text).partition(":")
    if event not in EVENTS:
        return None
    glob = glob.strip()
    return event, glob if glob and event != "session-start" else None


def path_matches(glob: str, path: str) -> bool:
    """gitignore-style: `*` `?` `[...]` within a segment, `**` across segments, no `/`: any folder."""
    pattern = glob.strip()
    rooted = "/" in pattern.strip("/") or pattern.startswith("/")
    segments = [s for s in pattern.strip("/").split("/") if s]
    if not segments:
        return False
    if not rooted:
        segments.insert(0, "**")
    segments.append("**")  # a folder matches everything below it
    return _match_segments(segments, path.split("/"))


def unclosed_bracket(glob: str) -> bool:
    """Does `glob` open a `[` set it never closes?"""
    i = glob.find("[")
    while i >= 0:
        _, end = _match_class(glob, i, "")
        if end < 0:
            return True
        i = glob.find("[", end)
    return False


def command_matches(pattern: str, command: str) -> bool:
    """A command pattern (a glob with a space): `*` and `?` match any characters, `/` included."""
    return _match_name(pattern.strip(), command.strip())


def _match_segments(segments: list[str], parts: list[str]) -> bool:
    if not segments:
        return not parts
    head, rest = segments[0], segments[1:]
    if head == "**":
        return any(_match_segments(rest, parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and _match_name(head, parts[0]) and _match_segments(rest, parts[1:])


def _match_name(pattern: str, name: str) -> bool:
    """fnmatch without the re module: `*`, `?`, `[abc]`, `[a-z]`, `[!abc]`; backtracks on `*`."""
    p = n = 0
    star_p = star_n = -1
    while n < len(name):
        if p < len(pattern):
            c = pattern[p]
            if c == "*":
                star_p, star_n = p, n
                p += 1
                continue
            if c == "?":
                p += 1
                n += 1
                continue
            if c == "[":
                matched, end = _match_class(pattern, p, name[n])
                if end < 0 and name[n] == "[":  # no closing bracket: a literal '['
                    p += 1
                    n += 1
                    continue
                if matched:
                    p = end
                    n += 1
                    continue
            elif c == name[n]:
                p += 1
                n += 1
                continue
        if star_p < 0:
            return False
        star_n += 1
        p, n = star_p + 1, star_n
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


def _match_class(pattern: str, start: int, char: str) -> tuple[bool, int]:
    """Does `char` match the [...] at `start`? Returns (matched, index after `]`), or (False, -1)."""
    i = start + 1
    negate = i < len(pattern) and pattern[i] in "!^"
    if negate:
        i += 1
    first = i
    matched = False
    while i < len(pattern) and (pattern[i] != "]" or i == first):
        if i + 2 < len(pattern) and pattern[i + 1] == "-" and pattern[i + 2] != "]":
            matched |= pattern[i] <= char <= pattern[i + 2]
            i += 3
        else:
            matched |= pattern[i] == char
            i += 1
    if i >= len(pattern):
        return False, -1
    return matched != negate, i + 1


def _positive_int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


# -- cues ---------------------------------------------------------------------------------

class Cue:
    """One moment: an event, and what it is about.

    path: repository-relative file for read/edit. narrow: the edit names a region (Edit,
    MultiEdit), so symbol anchors are checked against it. text: the command for run/commit,
    the prompt for prompt. bases: absolute folders a command's relative words are read from (where
    it runs, and where its `cd`s lead). done: the command (or the read, the edit) has already
    run (Gemini CLI answers after its tools): the header says so.
    """

    __slots__ = ("_tokens", "bases", "done", "event", "narrow", "path", "source", "text")

    def __init__(self, event: str, path: str | None = None, *, narrow: bool = False,
                 text: str = "", source: str | None = None, bases: tuple[str, ...] = (), done: bool = False) -> None:
        self.event = event
        self.path = path
        self.narrow = narrow
        self.text = text
        self.source = source
        self.bases = bases
        self.done = done
        self._tokens: set[str] | None = None

    def tokens(self, worktree: str | None = None) -> set[str]:
        """Words of the command or prompt that could be paths, repository-relative where possible
        (read from each of `bases` as well, for a command run in a subfolder)."""
        if self._tokens is None:
            found: set[str] = set()
            prefix = worktree.rstrip("/") + "/" if worktree else None
            for token in self.text.translate(_TOKEN_BREAKS).split():
                token = token.lstrip("@").rstrip(":.!?")
                if not token:
                    continue
                if prefix and not token.startswith("/"):
                    for base in self.bases:
                        joined = posixpath.normpath(posixpath.join(base, token))
                        if joined.startswith(prefix):
                            found.add(joined[len(prefix):])
                if prefix and token.startswith(prefix):
                    token = token[len(prefix):]
                while token.startswith("./"):
                    token = token[2:]
                found.add(token)
            found |= {token.split("::", 1)[0] for token in found if "::" in token}  # pytest ids: tests/t.py::test_x
            self._tokens = found
        return self._tokens


class Plan:
    """What one moment delivers: entry ids, retractions, what the budget left out, the text."""

    __slots__ = ("active", "known", "left_out", "owed", "owed_retractions", "retractions", "text", "wide")

    def __init__(self) -> None:
        self.active: list[str] = []
        self.retractions: list[str] = []
        self.left_out: list[str] = []
        self.text = ""
        # every entry for session start the session has been offered, shown or left out by the
        # budget (at its start, and as more came in): later cues deliver only what came in after
        self.known: list[str] = []
        # session-start entries chosen but cut by the message's size, which the next moment brings
        # (None: as the record has them)
        self.owed: list[str] | None = None
        # withdrawals a session start chose but the message's size cut: the next moments announce
        # them (None: as the record has them)
        self.owed_retractions: list[str] | None = None
        # of `active`, those shown as the session start shows them (arrivals, what it owed): kept
        # as delivered at session start, so a ritual among them comes once more at its moment
        self.wide: list[str] = []


# -- choosing -----------------------------------------------------------------------------

def plan(rules: CompiledRules, cue: Cue, record: SessionRecord, *, now: float, worktree: str | None = None,
         symbol_hit: SymbolHit | None = None, commit_paths: CommitPaths | None = None,
         relevance: Relevance | None = None, limit: int = MAX_CONTEXT_CHARS) -> Plan:
    """Decide and render what `cue` delivers, given what this session already has (`record`).

    record: {"delivered": {id: ...}, "retracted": {id: ...}} (not modified here).
    symbol_hit(path, symbol) -> bool: does the edit touch that declaration (True when unsure).
    commit_paths() -> set of paths the commit would include (asked only when a rule needs it).
    relevance() -> {id: ISO time it last fired on a cue} (asked only when over budget).
    limit: the most characters the text may take (less when it shares one answer with others).
    """
    today = _utc(now)[:10]
    result = Plan()
    arrived: list[str] = []  # repository-wide entries that came in during the session
    active = rules.get("active") or {}
    retracted = record.get("retracted") or {}
    # What the session has as it is now: an entry withdrawn since and active again (a revert of its
    # retirement), or changed since (a pull brought new wording), is not what it was told.
    versions = record.get("versions") or {}

    def as_told(i: str) -> bool:
        return i not in active or (i not in retracted and versions.get(i) in (None, version(active[i])))

    delivered = {i: how for i, how in (record.get("delivered") or {}).items() if as_told(i)}
    stale = set(record.get("delivered") or {}) - set(delivered)  # offered again, as if it had just come in
    retired = rules.get("retired") or {}
    recent = recent_retractions(rules, now)
    firing: list[str] = []  # what fires on this moment (none at session start)
    owed: list[str] = []  # session-start entries an earlier message had no room for
    if cue.event == "session-start":
        chosen, result.left_out = session_start_selection(rules, today, relevance)
        result.known = chosen + result.left_out
        pending = [i for i in recent if i not in retracted]
        pending, withdrawn_left_out = _retractions_within_budget(rules, pending)
    else:
        firing = [entry_id for entry_id, e in active.items()
                  if not expired(e, today) and fires(e, cue, worktree, symbol_hit, commit_paths)]
        chosen = list(firing)
        stored: object = record.get("owed")
        if isinstance(stored, list) and stored:
            owed = [i for i in stored if isinstance(i, str) and i in active and i not in delivered
                    and not expired(active[i], today) and i not in chosen]
            chosen += owed
        known = record.get("known")
        if not isinstance(known, list):
            # No session start seen in this repository (the session started in another one, or
            # before gitmem's hooks were installed): its session-start block comes now, as the
            # session start would have brought it, under the session start's own headers.
            first, result.left_out = session_start_selection(rules, today, relevance)
            result.known = first + result.left_out
            owed += [i for i in first if i not in delivered and i not in chosen and i not in owed]
            chosen += [i for i in owed if i not in chosen]
        else:  # what came in since the session started (a commit, a pull, the writer)
            seen = set(known) - stale
            arrivals = [i for i in session_start_ids(rules, today) if i not in seen]
            if arrivals:  # all known from now on; within the budget, the most recent, delivered
                result.known = known + [i for i in arrivals if i not in known]
                arrived = [i for i in _within_budget(rules, arrivals)[0] if i not in chosen]
                chosen += arrived
        # a withdrawal later in a session concerns it only when the session was shown the entry, and
        # then however long ago it was made (a branch that revoked it weeks ago merges now); with
        # no session start seen (hooks installed mid-session), the first moments announce the recent
        shown_then = [i for i in retired if i in delivered and i not in retracted and i not in recent]
        owed_back: object = record.get("owed_retractions")  # cut from the session start's message
        cut = {i for i in owed_back if isinstance(i, str)} if isinstance(owed_back, list) else set()
        pending = sorted(shown_then, key=lambda i: (retired[i]["at"], i)) + [
            i for i in recent if i not in retracted and (i in delivered or i in cut or not isinstance(known, list))]
        pending, withdrawn_left_out = _retractions_within_budget(rules, pending)
    # An entry that replaces a withdrawn one comes with the withdrawal; a ritual shown at session
    # start is shown again, once, at the moment it is for (a commit hundreds of turns later).
    replacements = [by for i in pending if (by := retired[i].get("by")) and by in active and by not in chosen
                    and not expired(active[by], today)]
    if cue.event == "session-start" and replacements:  # within the session start's budget too
        sizes = {i: len(entry_line(i, active[i])) for i in chosen + replacements}
        replacements = [i for i in _fill(rules, chosen + replacements, sizes) if i in replacements]
    chosen += replacements
    fresh = [i for i in chosen if i not in delivered or (
        i in firing and delivered[i] == "session-start" and active[i]["kind"] == "ritual")]
    text, shown, withdrawn = render(rules, cue, fresh, pending, left_out=len(result.left_out),
                                    withdrawn_left_out=withdrawn_left_out, limit=limit, arrived=arrived,
                                    owed=owed)
    result.active, result.retractions, result.text = shown, withdrawn, text
    result.wide = [i for i in shown if i in arrived or i in owed]
    # What the message's size cut is owed to the next moment (the note says so): a session-start
    # entry, under the session start's own headers; an arrival stays unknown, to arrive again.
    if cue.event == "session-start" or owed:
        result.owed = [i for i in fresh if i not in shown and (cue.event == "session-start" or i in owed)]
    if cue.event == "session-start":
        result.owed_retractions = [i for i in pending if i not in withdrawn]
    if arrived and any(i not in shown for i in arrived):
        result.known = [i for i in result.known if i not in arrived or i in shown]
    return result


def version(entry: ActiveEntry) -> str:
    """What the session was told of an entry, in a few characters: its words and where it holds."""
    import zlib

    anchor = "::".join(part or "" for part in entry.get("anchor") or ())  # a tuple compiled, a list read back
    return format(zlib.crc32(f"{entry['body']}\0{anchor}".encode("utf-8", "surrogatepass")), "08x")


def session_start_ids(rules: CompiledRules, today: str) -> list[str]:
    """Every unexpired entry delivered at session start, within the budget or not."""
    return [i for i, e in (rules.get("active") or {}).items()
            if not expired(e, today) and any(r[0] == "session-start" for r in e["rules"])]


def _retractions_within_budget(rules: CompiledRules, pending: list[str]) -> tuple[list[str], int]:
    """The withdrawals a session start announces, most recent first, within the same budget as the
    entries (a refactor that retires fifty anchored entries must not fill every new session), and
    how many were left out."""
    retired = rules.get("retired") or {}
    sizes = {i: len(retraction_line(i, retired[i])) for i in pending}
    kept = _fill(rules, pending[::-1], sizes)  # pending is oldest first: the latest are kept
    return [i for i in pending if i in kept], len(pending) - len(kept)


def session_start_selection(rules: CompiledRules, today: str,
                            relevance: Relevance | None = None) -> tuple[list[str], list[str]]:
    """Repository-wide entries within the budget, and those demoted (least recently relevant first)."""
    return _within_budget(rules, session_start_ids(rules, today), relevance)


def _within_budget(rules: CompiledRules, candidates: list[str],
                   relevance: Relevance | None = None) -> tuple[list[str], list[str]]:
    """The candidates the session-start budget holds, in reading order, and those it leaves out
    (least recently relevant first)."""
    active = rules.get("active") or {}
    max_entries = rules.get("max_entries", DEFAULT_MAX_ENTRIES)
    max_chars = rules.get("max_chars", DEFAULT_MAX_CHARS)
    sizes = {i: len(entry_line(i, active[i])) for i in candidates}
    if len(candidates) <= max_entries and sum(sizes.values()) <= max_chars:
        return _in_reading_order(candidates, active), []
    seen = relevance() if relevance else {}
    # The most recently relevant first: what the latest new session's start left out (the next one
    # opens with it, so none is left out for good), then when it last fired on a cue or was
    # recorded; of equals, a standing rule before a reminder (KIND_ORDER: a law before an open loop).
    ranked = sorted(candidates, key=lambda i: (max(active[i]["created"], seen.get(i, "")),
                                               -_kind_rank(active[i]["kind"]), i), reverse=True)
    kept = _fill(rules, ranked, sizes)
    left_out = [i for i in reversed(ranked) if i not in kept]
    return _in_reading_order(kept, active), left_out


def _fill(rules: CompiledRules, ranked: list[str], sizes: Mapping[str, int]) -> list[str]:
    """The first of `ranked` that fit the session-start budget (`max_entries`, `max_chars`)."""
    max_entries = rules.get("max_entries", DEFAULT_MAX_ENTRIES)
    max_chars = rules.get("max_chars", DEFAULT_MAX_CHARS)
    kept: list[str] = []
    used = 0
    for entry_id in ranked:
        if len(kept) < max_entries and used + sizes[entry_id] <= max_chars:
            kept.append(entry_id)
            used += sizes[entry_id]
    return kept


def _in_reading_order(ids: list[str], active: Mapping[str, ActiveEntry]) -> list[str]:
    return sorted(ids, key=lambda i: (_kind_rank(active[i]["kind"]), active[i]["created"], i))


def _kind_rank(kind: str) -> int:
    return KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)


def expired(entry: ActiveEntry, today: str) -> bool:
    """Same rule as Entry.expired: delivered through its `expires` day, not after."""
    expires = entry.get("expires")
    return bool(expires) and str(expires)[:10] < today


def recent_retractions(rules: CompiledRules, now: float) -> list[str]:
    """Entries retired within the retraction period, oldest first."""
    days = rules.get("retraction_days", DEFAULT_RETRACTION_DAYS)
    cutoff = _utc(now - days * 86400)
    retired = rules.get("retired") or {}
    recent = [i for i, e in retired.items() if e["at"] and _normal_time(e["at"]) >= cutoff]
    return sorted(recent, key=lambda i: (retired[i]["at"], i))


def fires(entry: ActiveEntry, cue: Cue, worktree: str | None = None, symbol_hit: SymbolHit | None = None,
          commit_paths: CommitPaths | None = None) -> bool:
    return any(rule[0] == cue.event and _holds(entry, rule, cue, worktree, symbol_hit, commit_paths)
               for rule in entry["rules"])


def _holds(entry: ActiveEntry, rule: Trigger, cue: Cue, worktree: str | None, symbol_hit: SymbolHit | None,
           commit_paths: CommitPaths | None) -> bool:
    event, glob = rule
    anchor = entry.get("anchor")
    if event == "session-start":
        return True
    if event in ("read", "edit"):
        if not cue.path:
            return False
        if glob is not None:
            if not path_matches(glob, cue.path):
                return False
        elif anchor and cue.path != anchor[0]:
            return False
        if event == "edit" and cue.narrow and anchor and anchor[1] and cue.path == anchor[0]:
            return True if symbol_hit is None else bool(symbol_hit(anchor[0], anchor[1]))
        return True
    if event == "run":
        if glob is not None:
            if " " in glob:
                return command_matches(glob, cue.text)
            return any(path_matches(glob, t) for t in cue.tokens(worktree))
        return anchor[0] in cue.tokens(worktree) if anchor else True
    if event == "commit":
        if glob is not None:
            return any(path_matches(glob, p) for p in (commit_paths() if commit_paths else set()))
        if not anchor:
            return True
        return anchor[0] in (commit_paths() if commit_paths else set())
    if event == "prompt":
        if glob is not None:
            return any(path_matches(glob, t) for t in cue.tokens(worktree))
        if anchor:
            leaf = (anchor[1] or "").rsplit(".", 1)[-1]
            return anchor[0] in cue.tokens(worktree) or bool(leaf and leaf in _identifiers(cue.text))
        return True
    return False


def _identifiers(text: str) -> set[str]:
    return set("".join(c if c.isalnum() or c == "_" else " " for c in text).split())


# -- rendering ----------------------------------------------------------------------------

def entry_line(entry_id: str, entry: ActiveEntry) -> str:
    anchor = entry.get("anchor")
    where = f" ({anchor[0]}::{anchor[1]})" if anchor and anchor[1] else f" ({anchor[0]})" if anchor else ""
    label = KIND_LABEL.get(entry["kind"], entry["kind"])
    # The last day is written out: text generated from the store (GEMINI.md, AGENTS.md, Cursor's and
    # Copilot's rules) is only rewritten when memory changes, and a session can outlive the day.
    until = f" (until {str(expires)[:10]})" if (expires := entry.get("expires")) else ""
    return f"- {label}{quoted(where)}{until}: {_indent(entry['body'])} [{quoted(entry_id)}]"


def retraction_line(entry_id: str, entry: RetiredEntry) -> str:
    """What was believed, that it no longer holds, and why."""
    anchor = entry.get("anchor")
    where = f" ({anchor[0]}::{anchor[1]})" if anchor and anchor[1] else f" ({anchor[0]})" if anchor else ""
    label = KIND_LABEL.get(entry["kind"], entry["kind"]).lower()
    who = "the developer" if entry.get("source") == "user" else "an AI agent"
    if entry.get("by"):
        why = f"It was replaced by entry {quoted(str(entry['by']))}."
    else:
        reason = " ".join(entry.get("why", "").split()) or "The developer retired it."
        why = "Why: " + quoted(reason) + ("" if reason.endswith(".") else ".")
    return (f"- Withdrawn {label}{quoted(where)}, recorded by {who}: \"{_indent(entry['body'])}\" "
            f"This no longer holds. {why} [{quoted(entry_id)}]")


def situation(cue: Cue) -> str | None:
    """What the moment is, as the start of a section header (None at session start)."""
    if cue.event in ("read", "edit"):  # a file name may hold anything but / and NUL
        return f"{'About' if cue.done else 'Before you touch'} {quoted(_shown(cue.path or ''))}"
    if cue.done:
        return {"run": "About the command that just ran", "commit": "About the commit just made"}.get(cue.event)
    return {"run": "Before this command runs", "commit": "Before this commit",
            "prompt": "About this request"}.get(cue.event)


def section_headers(cue: Cue) -> tuple[str, str]:
    """Headers for the developer's entries and for the agent's, which are never passed off as the developer's."""
    where = situation(cue)
    if where is None:
        return START_USER_HEADER, AGENT_HEADER
    return (f"{where}: the developer stated these in earlier sessions (gitmem):",
            f"{where}: an AI agent recorded these in earlier sessions, not the developer; "
            "verify before relying on them (gitmem):")


def render(rules: CompiledRules, cue: Cue, active_ids: list[str], retraction_ids: list[str], *,
           left_out: int = 0, withdrawn_left_out: int = 0, limit: int = MAX_CONTEXT_CHARS,
           arrived: Collection[str] = (), owed: Collection[str] = ()) -> tuple[str, list[str], list[str]]:
    """The text for the agent and the ids it really contains (the size limit may cut some, which
    a note then counts). `arrived`: repository-wide entries that came in during the session, under
    headers of their own rather than the moment's; `owed`: session-start entries an earlier message
    had no room for, under the session start's headers."""
    active = rules.get("active") or {}
    retired = rules.get("retired") or {}
    now = [i for i in active_ids if i not in arrived and i not in owed]
    late = [i for i in active_ids if i in arrived]
    earlier = [i for i in active_ids if i in owed]
    shown_ids: list[str] = []
    withdrawn_ids: list[str] = []
    user_header, agent_header = section_headers(cue)

    def lines_of(ids: list[str], user: bool) -> list[tuple[str, str]]:
        return [(i, entry_line(i, active[i])) for i in ids if (active[i]["source"] == "user") == user]

    sections = [(user_header, shown_ids, lines_of(now, True)),
                (agent_header, shown_ids, lines_of(now, False)),
                (START_USER_HEADER, shown_ids, lines_of(earlier, True)),
                (AGENT_HEADER, shown_ids, lines_of(earlier, False)),
                (ARRIVED_USER_HEADER, shown_ids, lines_of(late, True)),
                (ARRIVED_AGENT_HEADER, shown_ids, lines_of(late, False)),
                (RETRACTION_HEADER, withdrawn_ids, [(i, retraction_line(i, retired[i])) for i in retraction_ids])]
    footer = ""
    if left_out:
        footer = (f"({left_out} more repository-wide "
                  f"{'entry was' if left_out == 1 else 'entries were'} left out to keep this short; "
                  "`gitmem status` lists them.)")
    if withdrawn_left_out:
        footer += (" " if footer else "") + (
            f"({withdrawn_left_out} more recently withdrawn "
            f"{'entry was' if withdrawn_left_out == 1 else 'entries were'} left out; `gitmem log` lists them.)")
    lines: list[str] = []
    size = len(OPEN_TAG) + len(CLOSE_TAG) + len(footer) + 3
    whole = size + sum(len(line) + 1 for _, _, items in sections for _, line in items) \
        + sum(len(header) + 1 for header, _, items in sections if items)
    if whole > limit:  # some will not fit: room for the note that counts them
        size += len(_CUT_NOTE.format(count=len(active_ids) + len(retraction_ids), entries="entries")) + 1
    cut = 0
    for header, taken, items in sections:
        started = False
        for entry_id, line in items:
            extra = len(line) + 1 + (0 if started else len(header) + 1)
            if size + extra > limit:
                cut += 1  # too big for this message; it stays undelivered and may fire later
                continue
            if not started:
                lines.append(header)
                started = True
            lines.append(line)
            size += extra
            taken.append(entry_id)
    if not lines:
        return "", [], []
    if footer and (shown_ids or withdrawn_ids):
        lines.append(footer)
    if cut:
        lines.append(_CUT_NOTE.format(count=cut, entries="entry" if cut == 1 else "entries"))
    return "\n".join([OPEN_TAG, *lines, CLOSE_TAG]), shown_ids, withdrawn_ids


_CUT_NOTE = ("({count} more {entries} for this moment did not fit in this message; each comes at its next "
             "moment, and `gitmem list` shows them all.)")


# Entry text can never open or close the <gitmem-context> wrapper or imitate harness markup:
# <, > and & become entities (which the agent reads as the characters), and every kind of line
# break becomes a newline followed by indentation, so no entry line can pass for a header.
_ENTITIES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_LINE_BREAKS = str.maketrans(dict.fromkeys("\r\v\f\x1c\x1d\x1e\x85\u2028\u2029", "\n"))


def _shown(path: str) -> str:
    """A file name with its hidden and reordering characters written out (`<U+202E>`), as review
    sees entry text; imported only for a name that is not plain ASCII (the hook's hot path)."""
    if path.isascii():
        return path
    from gitmem.judge.normalise import visible

    return visible(path)


def quoted(text: str) -> str:
    """Entry text as it may stand inside the wrapper: entities for <, > and &, one line."""
    return " ".join(text.translate(_ENTITIES).translate(_LINE_BREAKS).split("\n"))


def _indent(text: str) -> str:
    """A body's lines under its item: each line after the first indented, and one that would open
    a Markdown block there (a heading, a list item such as an entry line, a quote, a fence, a
    rule) given a backslash before its mark, so it can never pass for a header or an entry."""
    lines = text.replace("\r\n", "\n").translate(_LINE_BREAKS).strip().translate(_ENTITIES).split("\n")
    return "\n  ".join([lines[0].rstrip(), *(_inert(line.rstrip()) for line in lines[1:])])


_BLOCK_MARKS = tuple("#>-*+=|`~_")


def _inert(line: str) -> str:
    words = line.lstrip()
    numbered = words[:1].isdigit() and words.lstrip("0123456789")[:1] in (".", ")")
    if words.startswith(_BLOCK_MARKS) or numbered:
        return line[:len(line) - len(words)] + "\\" + words
    return line


def _utc(seconds: float) -> str:
    from gitmem.base.files import utc_stamp

    return utc_stamp(seconds)


def _normal_time(stamp: str) -> str:
    """`2026-01-01T10:00:00+00:00` and `...Z` compare alike; a bare date counts from midnight."""
    stamp = str(stamp)
    return stamp[:19] + "Z" if len(stamp) >= 19 else stamp[:10] + "T00:00:00Z"

"""The gate: only what the developer said reaches the agent as the developer's rule.

Memory is read back into every future session under the developer's authority, so every path
into it is a prompt-injection surface: the writer reading pasted pages and tool output, a
teammate's pull request adding an entry by hand, the agent running `gitmem add`. One gate
stands on all of them (the writer's candidates, `gitmem add`, entries loaded from the store
for delivery and by `gitmem check`). It has three layers:

1. **Normalisation** (gitmem.judge.normalise): invisible and bidirectional-control characters
   are findings on their own; words that mix Latin letters with look-alikes of another script
   (``іgnore``) and letters spaced out one by one are obfuscation; everything else is read in
   its canonical form (NFKC, look-alikes folded to Latin, spaced letters joined).
2. **Structure** (gitmem.judge.structure): markup imitating the harness (the ``<gitmem-context>``
   wrapper, ``<system-reminder>``, ``<system>``, chat-template role markers, HTML comments,
   ``SYSTEM:`` role prefixes), a few phrases no rule needs a model to recognise, and entry
   format (ids, length caps).
3. **Meaning** (gitmem.judge.detector): a learned detector on the judge's own encoder that
   recognises text addressed to an AI to override its instructions, escalate its permissions or
   exfiltrate data, in any language or script, while passing rules that merely share words with
   attacks ("ignore the vendored/ folder", "the system prompt lives in prompts/system.md").

A candidate that fails goes to `.git/gitmem/quarantine.jsonl` with its reasons (`gitmem
quarantine` lists them); an entry that fails is not delivered and `gitmem check` reports it.

``learned`` says what to do about layer 3: "required" (the writer: when the detector cannot
run, that is itself a finding, so nothing passes unchecked), "optional" (`gitmem add` and
`gitmem check` on an installation without the writer's model: layers 1–2 only, and the caller
is told), "off" (the delivery compile step, which runs inside the hook and loads no model).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from gitmem.base import fastjson, files
from gitmem.base.paths import RepoPaths
from gitmem.base.signature import VERDICTS_FILE, main_checkout_state
from gitmem.errors import DetectorError
from gitmem.judge import normalise, structure
from gitmem.judge.shipped import GATE_HEAD

QUARANTINE_FILE = "quarantine.jsonl"
THRESHOLD_KEY = "threshold"  # beside a head's scores in the score cache (the other keys are SHA-1s)
Learned = Literal["required", "optional", "off"]

# Re-exported: the quarantine listing and the textconv driver show hidden characters with it.
invisible = normalise.invisible
visible = normalise.visible


@dataclass(frozen=True, slots=True)
class Finding:
    reason: str    # e.g. "harness markup: </gitmem-context>"
    excerpt: str   # the matched text, or the character's code point and name


@dataclass(slots=True)
class Verdict:
    findings: list[Finding] = field(default_factory=list)
    score: float | None = None        # the detector's score, when it ran
    notes: list[str] = field(default_factory=list)  # e.g. the detector was unavailable (optional mode)

    @property
    def ok(self) -> bool:
        return not self.findings


def static_findings(text: str) -> list[Finding]:
    """Layers 1 and 2: no model, standard library only."""
    findings: list[Finding] = []
    for name in normalise.invisible(text):
        cp = int(name[2:].split()[0], 16)
        kind = "bidirectional control" if normalise.is_bidi(chr(cp)) else "invisible character"
        findings.append(Finding(f"{kind}: {name}", name))
    for word in normalise.homoglyph_words(text):
        findings.append(Finding(f"homoglyphs: {word!r} mixes Latin with look-alike letters of another script",
                                word))
    for run in normalise.spaced_runs(text):
        findings.append(Finding(f"obfuscation: letters spaced out ({run[:40]!r})", run))
    for what, hit in structure.markup(normalise.folded(text)):
        findings.append(Finding(f"harness markup: {what} {hit!r}", hit))
    folded = normalise.canonical(text)
    for name, words in structure.phrases(folded):
        findings.append(Finding(f"instruction override: {name}", words))
    if len(folded) > structure.MAX_CANONICAL:
        findings.append(Finding(f"too long once normalised: {len(folded)} characters (the gate reads at most "
                                f"{structure.MAX_CANONICAL})", ""))
    return findings


class ScoreCache:
    """Detector scores by canonical text, for one head: `gitmem check` re-reads an unchanged store
    without running the model again (.git/gitmem/gate-scores.json, machine-local)."""

    def __init__(self, repo: RepoPaths) -> None:
        self.path = repo.state / "gate-scores.json"
        data = fastjson.read_file(str(self.path))
        self.data: dict[str, Any] = data if isinstance(data, dict) else {}
        self.changed = False

    @staticmethod
    def _key(text: str) -> str:
        return _digest(text)

    def get(self, head: str, text: str) -> float | None:
        scores = self.data.get(head)
        value = scores.get(self._key(text)) if isinstance(scores, dict) else None
        return float(value) if isinstance(value, (int, float)) else None

    def passed(self, text: str) -> bool:
        """Whether the detector scored `text` (canonicalised here) on this machine below the
        threshold its head had (kept beside the scores): a text scored as an attack, or under a
        head whose threshold was not kept, has not passed."""
        key = self._key(normalise.canonical(text))
        for scores in self.data.values():
            if isinstance(scores, dict):
                score, threshold = scores.get(key), scores.get(THRESHOLD_KEY)
                if isinstance(score, (int, float)) and isinstance(threshold, (int, float)) and score < threshold:
                    return True
        return False

    def put(self, head: str, text: str, score: float, threshold: float) -> None:
        if not isinstance(self.data.get(head), dict):
            self.data = {head: {}}  # scores of another head mean nothing now
        self.data[head][self._key(text)] = score
        self.data[head][THRESHOLD_KEY] = threshold
        self.changed = True

    def save(self) -> None:
        """Write what this process added over what is there now: another worktree's job may have
        saved scores since this cache was read (a lost score is only scored again)."""
        if not self.changed:
            return
        there = fastjson.read_file(str(self.path))
        for head, scores in self.data.items():
            if isinstance(there, dict) and isinstance(there.get(head), dict):
                self.data[head] = {**there[head], **scores}
        fastjson.write_file(str(self.path), self.data)


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()  # an unpaired surrogate: still a key


def shown_texts(entry: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """(body, anchor, revocation note): every text delivery shows of an entry, the anchor as
    delivery writes it (the compiled index and Entry.to_dict agree on these); None where absent."""
    revocation, anchor = entry.get("revocation"), entry.get("anchor")
    if isinstance(anchor, Mapping):
        anchor = "::".join(str(anchor.get(k)) for k in ("path", "symbol") if anchor.get(k))
    return entry.get("body"), anchor, revocation.get("reason") if isinstance(revocation, Mapping) else None


def detector_texts(entry: Mapping[str, Any]) -> list[str]:
    """The texts of an entry the learned detector reads: body, revocation note, and the anchor and
    triggers' globs where they hold prose (anchor_prose); the non-blank ones."""
    body, anchor, reason = shown_texts(entry)
    texts = (body, reason, anchor_prose(anchor) if isinstance(anchor, str) else None,
             *(anchor_prose(g) for g in trigger_globs(entry)))
    return [t for t in texts if isinstance(t, str) and t.strip()]


def misnamed(entries: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """entry_key -> [why] for the entries whose id is not of gitmem's format: `gitmem check` fails
    them, and no channel delivers them (an id of words is no place for text to reach the agent by)."""
    return {entry_key(e): [problem] for e in entries if (problem := structure.id_problem(e.get("id"))) is not None}


def entry_key(entry: Mapping[str, Any]) -> str:
    """An entry as the verdicts know it: its id and the digest of every text delivery shows of it
    (body, anchor, revocation note, triggers' globs), so an edit of any of them is judged again."""
    shown = [*shown_texts(entry), *([globs] if (globs := trigger_globs(entry)) else [])]
    return f"{entry.get('id')}:{_digest(json.dumps(shown, sort_keys=True, ensure_ascii=False, default=str))[:16]}"


def _verdicts(state_dir: str) -> dict[str, Any]:
    data = fastjson.read_file(os.path.join(state_dir, VERDICTS_FILE))
    return data if isinstance(data, dict) else {}


def flagged_entries(state_dir: str) -> dict[str, list[str]]:
    """entry_key -> reasons, for the entries the detector objected to when the store was last
    judged (`state_dir`: the worktree's, RepoPaths.worktree_state)."""
    flagged = _verdicts(state_dir).get("flagged")
    return {str(k): [str(r) for r in v] for k, v in flagged.items() if isinstance(v, list)} \
        if isinstance(flagged, dict) else {}


def withheld_by_detector(repo: RepoPaths) -> dict[str, list[str]]:
    """entry_key -> reasons, for what delivery withholds on the detector's word: in a linked
    worktree the main checkout's objections too (keyed by content, and all a linked worktree had
    before verdicts were kept per worktree), then the worktree's own."""
    shared = main_checkout_state(str(repo.git_dir), str(repo.common_dir))
    return {**(flagged_entries(shared) if shared else {}), **flagged_entries(str(repo.worktree_state))}


def judged_entries(state_dir: str) -> tuple[set[str], str]:
    """(entry keys the detector has judged, the stamp of the head that judged them)."""
    data = _verdicts(state_dir)
    judged, head = data.get("judged"), data.get("head")
    return ({str(k) for k in judged} if isinstance(judged, list) else set(), head if isinstance(head, str) else "")


def stuck_head(state_dir: str) -> str:
    """The head stamp with which the store's gate last could not judge everything ("" if none)."""
    stuck = _verdicts(state_dir).get("stuck")
    return stuck if isinstance(stuck, str) else ""


def record_verdicts(repo: RepoPaths, flagged: Mapping[str, list[str]], judged: set[str], head: str,
                    stuck: bool = False) -> None:
    """Replace the worktree's verdicts: what the detector objected to, out of every entry it judged
    (written only when they change: delivery recompiles on this file)."""
    data = {"flagged": dict(flagged), "judged": sorted(judged), "head": head, "stuck": head if stuck else ""}
    state = repo.worktree_state
    if _verdicts(str(state)) != data:
        state.mkdir(parents=True, exist_ok=True)
        fastjson.write_file(str(state / VERDICTS_FILE), data)


def check(text: str, *, learned: Learned = "required") -> list[Finding]:
    """Everything the gate objects to in `text`; empty when it may be stored and delivered."""
    return verdict(text, learned=learned).findings


def detector_module() -> ModuleType:
    """gitmem.judge.detector; DetectorError in an install without the `writer` extra (numpy)."""
    try:
        from gitmem.judge import detector
    except ImportError as exc:
        raise DetectorError(f"{exc.name or exc} is not installed (pip install 'gitmem[writer]')") from exc
    return detector


def verdict(text: str, *, learned: Learned = "required", cache: ScoreCache | None = None) -> Verdict:
    result = Verdict(static_findings(text))
    if result.findings or learned == "off":
        return result  # already refused; the detector would add nothing a person needs
    canonical = normalise.canonical(text)
    if not canonical.strip():
        return result
    try:
        learned_detector = detector_module()
        detector = learned_detector.head()
        cached = cache.get(detector.digest, canonical) if cache is not None else None
        result.score = cached if cached is not None else learned_detector.scorer().score(canonical)
    except DetectorError as exc:
        if learned == "required":
            result.findings.append(Finding(f"detector unavailable: {exc}", ""))
        else:
            result.notes.append(f"the gate's learned detector did not run ({exc}); markup, hidden characters "
                                "and obfuscation were checked")
        return result
    if cache is not None and cached is None:
        cache.put(detector.digest, canonical, result.score, detector.threshold)
    if result.score >= detector.threshold:
        result.findings.append(Finding(
            f"addressed to the agent: reads as an instruction to override, escalate or exfiltrate "
            f"(detector {result.score:.2f} >= {detector.threshold:.2f})", canonical[:80]))
    return result


def verdict_pending(text: str, cache: ScoreCache, digest: str, threshold: float) -> bool:
    """Whether judging `text` could change what delivery does: it passes layers 1–2 and the
    detector with head `digest` has not scored it on this machine, or scored it as an attack."""
    if static_findings(text):
        return False  # withheld already, without the detector
    canonical = normalise.canonical(text)
    score = cache.get(digest, canonical) if canonical.strip() else 0.0
    return score is None or score >= threshold


def check_candidate(candidate: Any, *, learned: Learned = "required", cache: ScoreCache | None = None) -> list[Finding]:
    """The gate for a judge Candidate (anything with .body and .anchor); with `cache`, its score
    is kept, so the store's gate (gitmem.judge.store_gate) need not load the model for the entry."""
    body = getattr(candidate, "body", "") or ""
    findings = []
    if (problem := structure.length_problem("body", body, structure.MAX_BODY)) is not None:
        findings.append(Finding(problem, ""))
    findings += verdict(body, learned=learned, cache=cache).findings
    anchor = getattr(candidate, "anchor", None)
    if anchor:
        findings += anchor_findings(str(anchor), learned=learned, cache=cache)
    return findings


# What the detector reads of a name (split at _ - . and case changes, a file's extension left
# out): all of it once one of its names runs to PHRASE_WORDS words, or all of them together to
# PATH_WORDS (a sentence spread over folder names). A file or folder name of MAX_NAME_WORDS words
# or more is no name but a sentence printed beside the rule, and refused, but for the conventions
# that make names that long: tests ("test_returns_404_when_…", "….spec.ts") and numbered
# migrations ("0005_alter_user_options_…"). Code names are only read: the code holding them is
# reviewed, and constants and test methods run long.
PHRASE_WORDS = 8
PATH_WORDS = 12
MAX_NAME_WORDS = 10
_NAME_WORDS = re.compile(r"[^\W_]+?(?=[A-Z][a-z]|[^A-Za-z0-9]|$)|[^\W_]+")
_EXTENSION = re.compile(r"\.\w{1,5}$")
_LONG_BY_CONVENTION = re.compile(
    r"(?i)^(?:test|it|should|spec)(?:[_\-A-Z\d.]|$)|^\d|[_.\-](?:test|spec)s?(?:\.\w{1,5})*$|Tests?(?:\.\w{1,5})?$")


def _words(name: str) -> list[str]:
    return _NAME_WORDS.findall(_EXTENSION.sub("", name))


def anchor_prose(anchor: str) -> str:
    """What the detector reads of a name delivery prints beside a rule (an anchor, a trigger's
    glob): all of it, path separators as spaces, when it holds a space anywhere; all of it as
    words when one of its names runs to a phrase (`IMPORTANT_the_developer_requires_you_to_…`)
    or its names together do (`IMPORTANT_the_developer/you_to_always_push/…`); "" otherwise.
    Short code names are not read: the detector would take "grant_admin_access" for a request."""
    if any(ch.isspace() for ch in anchor):
        return " ".join(anchor.replace("::", " ").replace("/", " ").replace("\\", " ").split())
    words = [_words(n) for n in re.split(r"::|[/\\]", anchor)]
    if max(map(len, words)) < PHRASE_WORDS and sum(map(len, words)) < PATH_WORDS:
        return ""
    return " ".join(w for found in words for w in found)


def trigger_globs(entry: Mapping[str, Any]) -> list[str]:
    """The globs (and command patterns) of an entry's triggers, as delivery prints them."""
    triggers = entry.get("triggers")
    if not isinstance(triggers, list):
        return []
    return [str(t).partition(":")[2].strip() for t in triggers if isinstance(t, str)]


def name_findings(field: str, name: str, *, learned: Learned = "off",
                  cache: ScoreCache | None = None) -> list[Finding]:
    """The gate for a name delivery prints beside a rule (`field`: "anchor", "triggers[N]"): none
    of its file or folder names a sentence, and its prose (anchor_prose) passing the detector."""
    path = name.partition("::")[0]
    longest = max((_words(n) for n in re.split(r"[/\\\s]", path) if not _LONG_BY_CONVENTION.search(n)),
                  key=len, default=[])
    if len(longest) >= MAX_NAME_WORDS:
        return [Finding(f"{field}: a name of {len(longest)} words reads as a sentence, not a name "
                        f"(at most {MAX_NAME_WORDS - 1})", "_".join(longest)[:80])]
    prose = anchor_prose(name)
    return [Finding(f"{field}: {f.reason}", f.excerpt) for f in verdict(prose, learned=learned, cache=cache).findings] \
        if prose else []


def anchor_findings(anchor: str, *, learned: Learned = "off", cache: ScoreCache | None = None) -> list[Finding]:
    findings = []
    if (problem := structure.length_problem("anchor", anchor, structure.MAX_ANCHOR)) is not None:
        findings.append(Finding(problem, ""))
    if structure.has_newline_outside_text(anchor):
        findings.append(Finding("anchor: contains a line break", ""))
    findings += [Finding(f"anchor: {f.reason}", f.excerpt) for f in static_findings(anchor)]
    return findings or name_findings("anchor", anchor, learned=learned, cache=cache)


def entry_findings(entry: Mapping[str, Any], *, learned: Learned = "off", strict_id: bool = True,
                   cache: ScoreCache | None = None) -> Verdict:
    """The gate for an entry as stored (Entry.to_dict() or the compiled index's dicts): the id's
    format, length caps, and every text that delivery shows (body, anchor, revocation note)."""
    result = Verdict()
    if (problem := structure.id_problem(entry.get("id"), strict=strict_id)) is not None:
        result.findings.append(Finding(problem, ""))
    body = entry.get("body")
    body = body if isinstance(body, str) else ""
    if (problem := structure.length_problem("body", body, structure.MAX_BODY)) is not None:
        result.findings.append(Finding(problem, ""))
    text = verdict(body, learned=learned, cache=cache)
    result.findings += text.findings
    result.score, result.notes = text.score, text.notes
    _, anchor, reason = shown_texts(entry)
    if isinstance(anchor, str):
        result.findings += anchor_findings(anchor, learned=learned, cache=cache)
    if isinstance(reason, str):
        if (problem := structure.length_problem("revocation reason", reason, structure.MAX_REASON)) is not None:
            result.findings.append(Finding(problem, ""))
        result.findings += [Finding(f"revocation reason: {f.reason}", f.excerpt)
                            for f in verdict(reason, learned=learned, cache=cache).findings]
    for n, glob in enumerate(trigger_globs(entry)):
        result.findings += name_findings(f"triggers[{n}]", glob, learned=learned, cache=cache)
    for name, part in (("created.at", "created"), ("revocation.at", "revocation")):
        stamp = found.get("at") if isinstance(found := entry.get(part), Mapping) else None
        if (problem := structure.future_problem(name, stamp, time.time())) is not None:
            result.findings.append(Finding(problem, ""))
    value = entry.get("superseded_by")
    if value and (problem := structure.id_problem(value, strict=strict_id)) is not None:
        result.findings.append(Finding(f"superseded_by: {problem}", ""))
    return result


def cache_scores(repo: RepoPaths, entries: Iterable[Mapping[str, Any]]) -> None:
    """Score every text of `entries` that the detector reads into the store's score cache (the
    machine's writer does this for the store gate's job, which then records from the cache)."""
    cache = ScoreCache(repo)
    for entry in entries:
        entry_findings(entry, learned="optional", cache=cache)
    cache.save()


# -- the quarantine log ------------------------------------------------------------------------

def quarantine_path(repo: RepoPaths) -> Path:
    return repo.state / QUARANTINE_FILE


def quarantine(repo: RepoPaths, candidate: Any, findings: list[Finding], *, session: str | None,
               turn: int | None) -> dict[str, Any]:
    """Append one quarantined candidate with its reasons (one JSON line, one write)."""
    record = {
        "time": files.utc_stamp(),
        "session": session,
        "turn": turn,
        "kind": getattr(candidate, "kind", None),
        "source": getattr(candidate, "source", None),
        "anchor": getattr(candidate, "anchor", None),
        "body": getattr(candidate, "body", ""),
        "reasons": [f.reason for f in findings],
        "matched": [f.excerpt for f in findings],
    }
    files.append_line(quarantine_path(repo), json.dumps(record, ensure_ascii=True))
    return record


def quarantined(repo: RepoPaths) -> Iterator[dict[str, Any]]:
    """Every quarantined candidate, oldest first; unreadable lines are skipped."""
    yield from fastjson.read_rows(str(quarantine_path(repo)))


# -- what this machine's verdicts say, for delivery --------------------------------------------

AWAITING = "not judged yet: the gate's learned detector is judging it now (withheld for those seconds)"


_stamps: dict[tuple[int, int, int], str] = {}


def head_stamp() -> str:
    """The SHA-256 of the installed detector head ("" if none): a new head (an upgrade) judges
    again, and two installs of the same head agree."""
    try:
        st = os.stat(GATE_HEAD)
        stat = (st.st_ino, st.st_size, st.st_mtime_ns)
        if stat not in _stamps:
            import hashlib

            with open(GATE_HEAD, "rb") as handle:
                _stamps[stat] = hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return ""
    return _stamps[stat]


def judged_now(repo: RepoPaths) -> set[str]:
    """The entry keys recorded as judged, if the installed head judged them (else none)."""
    judged, head = judged_entries(str(repo.worktree_state))
    return judged if head and head == head_stamp() else set()


def not_passed(repo: RepoPaths, entries: Iterable[Mapping[str, Any]],
               judged: set[str]) -> list[Mapping[str, Any]]:
    """The entries not in `judged` holding a text the detector has not passed on this machine."""
    cache = ScoreCache(repo)
    return [e for e in entries if entry_key(e) not in judged
            and any(not cache.passed(t) for t in detector_texts(e))]


def awaiting(repo: RepoPaths, entries: Iterable[Mapping[str, Any]], judging: bool) -> dict[str, list[str]]:
    """entry_key -> [AWAITING] for the entries whose verdict the running job may change, while the
    store is being judged (`judging`: the lock was held when the caller's signature was taken, so
    what it compiles agrees with the signature it is keyed on): delivery withholds them for those
    seconds rather than hand the agent what may be withheld a moment later. An entry the detector
    already passed on this machine (what `gitmem add` and the writer recorded: they gated it) is
    delivered meanwhile. Nothing while no one judges (a stuck or absent detector withholds nothing)."""
    if not judging:
        return {}
    judged = judged_now(repo)
    shared = main_checkout_state(str(repo.git_dir), str(repo.common_dir))
    if shared:  # a new linked worktree: what the main checkout judged (and withholds) needs no wait
        more, head = judged_entries(shared)
        judged |= more if head and head == head_stamp() else set()
    return {entry_key(e): [AWAITING] for e in not_passed(repo, entries, judged)}

"""Process one queued turn: transcript → packet → judge → safety gate → commits.

The only code path that writes entries from conversations. Runs inside the daemon or
`gitmem drain`, never inside a hook.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gitmem.base.files import utc_seconds
from gitmem.base.paths import RepoPaths, find_repo
from gitmem.errors import AnchorError, GitmemError, NotARepository
from gitmem.judge import safety
from gitmem.judge.validate import words_key
from gitmem.store import index
from gitmem.store.entry import Entry
from gitmem.writer import edit_log
from gitmem.writer.queue import Job

if TYPE_CHECKING:
    from gitmem.judge.safety import Finding
    from gitmem.judge.turn_judge import Judge
    from gitmem.judge.types import Candidate, Packet


@dataclass(slots=True)
class Outcome:
    job: Job
    found: bool = True                                   # the turn was in the transcript
    recorded: list[Entry] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)      # bodies recorded by an earlier attempt
    quarantined: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        head = f"session {self.job.session[:8]} turn {self.job.turn}: "
        if not self.found:
            return head + "turn not found in the transcript"
        parts = []
        if self.recorded:
            parts.append("recorded " + ", ".join(f"{e.kind} {e.id}" for e in self.recorded))
        if self.already:
            parts.append(f"{len(self.already)} already recorded")
        if self.quarantined:
            parts.append(f"{len(self.quarantined)} quarantined")
        return head + ("; ".join(parts) if parts else "nothing to record")


def stored_entries(repo: RepoPaths) -> list[Entry]:
    """Entries in force (active, not expired) from the compiled index (no YAML parsing per job):
    an expired rule said again is said anew."""
    return [e for e in index.stored(repo, active_only=True) if not e.expired()]


# A redone job looks for its entries committed on other branches since its turn was typed (or,
# where the transcript has no time, since it was queued), less this (a clock set back meanwhile).
QUEUED_SLACK_S = 3600.0


def build_packet(repo: RepoPaths, job: Job) -> Packet | None:
    """The judge's input for a queued turn; None when the turn is not in the transcript."""
    from gitmem.judge.types import Packet
    from gitmem.writer.reader import read_turns

    if job.user is not None:  # planned by this version: the turn travelled with the job
        user, assistant, start, end = job.user, job.assistant or "", utc_seconds(job.starts), utc_seconds(job.ends)
        if job.ends is None and job.until is not None and not job.reply:
            # the session's last turn, planned the moment its Stop arrived without the reply:
            # Claude Code may have written that reply to the transcript since (the job settled)
            turns = read_turns(job.transcript, start=job.turn)
            if turns and turns[0].index == job.turn and len(turns[0].assistant) > len(assistant):
                assistant = turns[0].assistant
    else:
        turns = read_turns(job.transcript, start=job.turn)
        if not turns or turns[0].index != job.turn:
            return None
        user, assistant = turns[0].user, turns[0].assistant
        start = utc_seconds(turns[0].timestamp)
        end = utc_seconds(turns[1].timestamp) if len(turns) > 1 else None
    if end is None and job.until is not None:
        end = job.until  # the hook call that completed the turn came after its last edit
    files = edit_log.files_modified(repo, job.session, start, end) if start is not None else ()
    return Packet(session_id=job.session, turn=job.turn, user=user,
                  assistant=_with_reply(assistant, job.reply), files_modified=files)


def _with_reply(assistant: str, reply: str | None) -> str:
    """The turn's text plus Stop's last_assistant_message when the transcript lacked it."""
    if not reply or not reply.strip():
        return assistant
    if " ".join(reply.split()) in " ".join(assistant.split()):
        return assistant
    text = f"{assistant}\n\n{reply.strip()}".strip()
    if len(text) > 6000:  # the transcript reader's bound: keep the start and the final answer
        text = text[:2500] + "\n[…]\n" + text[-3000:]
    return text


def gate(candidates: Sequence[Candidate], cache: safety.ScoreCache | None = None
         ) -> tuple[list[Candidate], list[tuple[Candidate, list[Finding]]]]:
    """Split candidates into (accepted, [(quarantined, findings)]); `cache` keeps their scores."""
    accepted, rejected = [], []
    for candidate in candidates:
        findings = safety.check_candidate(candidate, cache=cache)
        if findings:
            rejected.append((candidate, findings))
        else:
            accepted.append(candidate)
    return accepted, rejected


def _already_recorded(repo: RepoPaths, session: str, turn: int, body: str, since: float = 0.0) -> str | None:
    """Id of an entry created from (session, turn) with this body, if one is recorded: committed
    in HEAD or durably pending, or committed on another branch since `since` (a writer that died
    after committing, and the developer switched branches before the job was redone). Never
    decided from the work tree, where a file can be left over from a writer that died before
    committing it."""
    from gitmem import git
    from gitmem.githooks.review import ENTRIES_PREFIX
    from gitmem.store import pending

    body = body.strip()

    def same(data: dict[str, Any]) -> bool:
        created = data.get("created") or {}
        return created.get("session") == session and created.get("turn") == turn and \
            (data.get("body") or "").strip() == body

    for data in pending.entries(repo):
        if same(data):
            return str(data.get("id"))
    if not git.has_head(repo.worktree):
        return None
    committed = git.tree_blob_ids(repo.worktree, "HEAD", [ENTRIES_PREFIX])
    # The work tree's compiled index narrows it down; HEAD's blob decides.
    local = {f"{ENTRIES_PREFIX}{d.get('id')}.yaml": d for d in index.entries(index.current(repo), committed_only=True)}
    unknown = [p for p in committed if p.endswith(".yaml") and p not in local]
    for path, data in local.items():
        if same(data) and path in committed and _committed_matches(repo, committed[path], path, same):
            return str(data.get("id"))
    for path in unknown:  # committed but not (or not yet) in the work tree
        if _committed_matches(repo, committed[path], path, same):
            return path.rsplit("/", 1)[-1][:-5]
    return _recorded_on_a_branch(repo, f"Gitmem-Session: {session} turn {turn}", since, same) if since else None


def _recorded_on_a_branch(repo: RepoPaths, trailer: str, since: float, same: Any) -> str | None:
    """An entry committed with `trailer` on a local branch since `since` whose file is `same`."""
    from gitmem import git
    from gitmem.githooks.review import ENTRIES_PREFIX

    out = git.git(repo.worktree, "log", "--branches", f"--since={int(since)}", "--fixed-strings",
                  f"--grep={trailer}", "--format=%H%x00%B%x00", check=False).decode("utf-8", "replace")
    fields = out.split("\0")
    for commit, message in zip(fields[0::2], fields[1::2], strict=False):
        lines = message.splitlines()
        if trailer not in lines:
            continue
        for entry_id in (line.split(": ", 1)[1] for line in lines if line.startswith("Gitmem-Entry: ")):
            path = f"{ENTRIES_PREFIX}{entry_id}.yaml"
            blob = git.tree_blob_ids(repo.worktree, commit.strip(), [path]).get(path)
            if blob is not None and _committed_matches(repo, blob, path, same):
                return entry_id
    return None


def _committed_matches(repo: RepoPaths, blob: str, path: str, same: Any) -> bool:
    from gitmem import git
    from gitmem.store.yaml_files import parse_entry_text

    data = git.read_blobs(repo.worktree, [blob]).get(blob)
    if data is None:
        return False
    try:
        return bool(same(parse_entry_text(data.decode("utf-8"), path).to_dict()))
    except (GitmemError, UnicodeDecodeError):
        return False


def _recorded_ids(repo: RepoPaths) -> set[str]:
    """Ids of the entries HEAD holds or a pending change of gitmem's keeps."""
    from gitmem import git
    from gitmem.githooks.review import ENTRIES_PREFIX
    from gitmem.store import pending

    ids = {str(data.get("id")) for data in pending.entries(repo)}
    if git.has_head(repo.worktree):
        ids.update(path.rsplit("/", 1)[-1].removesuffix(".yaml")
                   for path in git.tree_blob_ids(repo.worktree, "HEAD", [ENTRIES_PREFIX]))
    return ids


def _withdrawn(entries: Sequence[Entry]) -> dict[str, float]:
    """Body (whitespace collapsed) -> when its entry was revoked, or superseded (its correction's
    creation); the latest, where several share a body."""
    by_id = {e.id: e for e in entries}
    found: dict[str, float] = {}
    for entry in entries:
        if entry.status == "revoked" and entry.revocation is not None:
            stamp = entry.revocation.at
        elif entry.status == "superseded" and entry.superseded_by in by_id:
            stamp = by_id[entry.superseded_by].created_at
        else:
            continue
        when = utc_seconds(stamp)
        if when is not None:
            key = " ".join(entry.body.split())
            found[key] = max(when, found.get(key, when))
    return found


def commit_candidates(repo: RepoPaths, job: Job, candidates: Sequence[Candidate], outcome: Outcome) -> None:
    """Record what passed the gate. The job is done only when this returns: each entry is then
    committed or durably pending (Memory.add raises before either, and the job is redone)."""
    from gitmem.memory import Memory

    memory = Memory(repo)
    memory.flush_pending()  # the writer's loop is one of the safe moments
    every = index.stored(repo)
    active = {e.id for e in every if e.active}
    # the store as it is now (the judge saw it earlier): the very words in force, where they are
    # anchored, record nothing, unless they correct another entry (two contradicting rules, one
    # said again as a correction); recorded means committed or durably pending, never a file
    # in the work tree alone (one a writer that died before committing left behind)
    recorded = _recorded_ids(repo) if candidates else set()
    stated = {(words_key(e.body), str(e.anchor) if e.anchor else None): e.id
              for e in every if e.active and not e.expired() and e.id in recorded}
    withdrawn = _withdrawn(every)
    said = utc_seconds(job.starts)
    # a session resumed after its queue state was pruned has every earlier turn judged again,
    # weeks after they were typed and committed on some branch
    since = min(t for t in (said, job.enqueued) if t) - QUEUED_SLACK_S if said or job.enqueued else 0.0
    for c in candidates:
        anchor = c.resolved or c.anchor
        words = (words_key(c.body), str(anchor) if anchor else None)
        supersedes = tuple(i for i in c.supersedes if i in active and i != stated.get(words))
        if supersedes and words in stated:  # the same words correcting another: one entry of them stays
            supersedes += (stated[words],)
        if (words in stated and not supersedes) or _already_recorded(repo, job.session, job.turn, c.body,
                                                                     since=since):
            outcome.already.append(c.body)
            continue
        when = withdrawn.get(" ".join(c.body.split()))
        if when is not None and (said is None or said <= when):
            # Said before the developer withdrew it: a forked or replayed conversation judged
            # again, not the developer bringing the rule back.
            outcome.notes.append(f"not recorded: {c.body!r} was revoked or superseded after it was said")
            continue
        try:
            rec = memory.add_copied(c.kind, c.body, anchor=c.resolved or c.anchor, source=c.source,
                                    session=job.session, turn=job.turn, supersedes=supersedes)
        except AnchorError:
            outcome.notes.append(f"anchor {c.anchor} did not resolve; recorded for the repository")
            rec = memory.add_copied(c.kind, c.body, anchor=None, source=c.source, session=job.session,
                                    turn=job.turn, supersedes=supersedes)
        outcome.recorded.append(rec.entry)
        stated[words] = rec.entry.id
        if rec.commit.commit:
            outcome.commits.append(rec.commit.commit)
        else:
            outcome.notes.append(rec.commit.note)
        active -= set(supersedes)


def worked_in(repo: RepoPaths, job: Job) -> RepoPaths:
    """The worktree the job's session worked in (its entries go on that worktree's branch), where it
    still is a worktree of `repo`'s repository; else `repo`."""
    if not job.worktree or os.path.realpath(job.worktree) == os.path.realpath(repo.worktree):
        return repo
    try:
        there = find_repo(job.worktree)
    except (NotARepository, OSError):
        return repo
    same = os.path.realpath(there.common_dir) == os.path.realpath(repo.common_dir)
    return there if same and os.path.realpath(there.worktree) == os.path.realpath(job.worktree) else repo


def process(repo: RepoPaths, job: Job, judge: Judge, judge_lock: Any = None) -> Outcome:
    """Judge one turn and record what passes; safe to repeat (commits are idempotent)."""
    repo = worked_in(repo, job)
    outcome = Outcome(job)
    packet = build_packet(repo, job)
    if packet is None:
        outcome.found = False
        return outcome
    stored = stored_entries(repo)
    if judge_lock is not None:
        with judge_lock:
            candidates = judge.judge(packet, stored)
    else:
        candidates = judge.judge(packet, stored)
    if not repo.on_disk():  # deleted or moved while judged: nothing is written back under its path
        raise GitmemError(f"{repo.worktree} went away while its turn was judged")
    cache = safety.ScoreCache(repo)  # the store's gate (gitmem.judge.store_gate) reuses these scores
    accepted, rejected = gate(candidates, cache)
    cache.save()
    if rejected:
        logged = {(q.get("session"), q.get("turn"), q.get("body")) for q in safety.quarantined(repo)}
        for candidate, findings in rejected:
            if (job.session, job.turn, candidate.body) in logged:  # a redone job: logged already
                continue
            outcome.quarantined.append(
                safety.quarantine(repo, candidate, findings, session=job.session, turn=job.turn))
    commit_candidates(repo, job, accepted, outcome)
    return outcome

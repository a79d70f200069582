"""The gate on the store itself, for entries that reached it without passing this machine's gate.

A teammate's entry arrives with `git pull`, a rebase or a branch switch, and one written by
hand (or by a script) is committed here, never seen by this machine's writer or `gitmem add`.
Markup, hidden characters and format are checked wherever the store is compiled for delivery
(standard library, no model). The learned detector needs the model, so it runs here: in `gitmem
check`, and in a detached job that the post-commit, post-merge, post-rewrite and post-checkout
hooks (and `gitmem init`) start whenever the store holds an entry the detector has not judged on
this machine. Its verdicts (the worktree's
`<git dir>/gitmem/gate-verdicts.json`: a linked worktree has entries of its own) make delivery
withhold what it objects to from the next hook call on; while the store is being judged (the
hook hands its lock to the job, so from the moment the git command returns) delivery withholds
what is not judged yet (`awaiting`). An entry keeps its verdict while its id
and every text delivery shows of it (body, anchor, revocation note) stay the same, and the
writer and `gitmem add` cache the score of what they gated (in the shared state, for every
worktree), so the job loads no model for those. Where the machine's writer runs, the job has it
score the entries into that cache first (gitmem.writer.gate_requests) and waits, holding
the lock, then records the verdicts itself: the machine keeps one copy of the model. `gitmem
check` and the job take turns on the worktree's lock, and whoever lets go of it looks once more
for entries that arrived meanwhile.

Standard library only at import: the git hooks call `unjudged` and `judge_in_background`.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gitmem.base.paths import RepoPaths
from gitmem.base.signature import GATE_LOCK
from gitmem.errors import DetectorError
from gitmem.judge.safety import head_stamp, judged_now, not_passed

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

    from gitmem.store.entry import Entry

RUNS = 3  # the job judges again while the store changes under it (another pull meanwhile), this often at most
# A job still running after this long hangs rather than works (a store of a thousand new entries
# takes a few minutes on two cores): it ends itself, so its lock withholds nothing any longer.
JOB_LIMIT_S = 900.0
# The scores reach the cache at least this often while a store is judged (about 80 ms an entry): a
# `gitmem check` of thousands stopped half-way keeps what it scored for the next one.
SAVE_EVERY_S = 5.0


@dataclass(slots=True)
class StoreVerdicts:
    failing: list[tuple[Entry, list[str]]] = field(default_factory=list)  # each with the gate's reasons
    flagged: dict[str, list[str]] = field(default_factory=dict)  # safety.entry_key -> reasons
    judged: set[str] = field(default_factory=set)  # the entry keys the detector judged
    present: set[str] = field(default_factory=set)  # every entry key seen
    notes: set[str] = field(default_factory=set)  # non-empty: the detector did not run

    @property
    def complete(self) -> bool:
        """Whether the learned detector judged every entry."""
        return not self.notes


def judge_entries(repo: RepoPaths, entries: Iterable[Entry]) -> StoreVerdicts:
    """Every layer of the gate on each entry (scores cached in .git/gitmem/gate-scores.json)."""
    from gitmem.judge import safety

    out = StoreVerdicts()
    cache = safety.ScoreCache(repo)
    saved = time.monotonic()
    for entry in entries:
        if time.monotonic() - saved > SAVE_EVERY_S:
            cache.save()
            saved = time.monotonic()
        data = entry.to_dict()
        verdict = safety.entry_findings(data, learned="optional", cache=cache)
        out.notes.update(verdict.notes)
        key = safety.entry_key(data)
        out.present.add(key)
        if not verdict.notes:  # notes: the detector did not run on it, so it stays unjudged
            out.judged.add(key)
        if verdict.findings:
            reasons = out.flagged[key] = [f.reason for f in verdict.findings]
            out.failing.append((entry, reasons))
    cache.save()
    return out


def judge_and_record(repo: RepoPaths) -> StoreVerdicts:
    """Judge every stored entry (pending changes included) and keep the verdicts; the caller holds
    the gate's lock."""
    from gitmem.store import index

    verdicts = judge_entries(repo, index.stored(repo))
    record(repo, verdicts)
    return verdicts


def record(repo: RepoPaths, verdicts: StoreVerdicts) -> None:
    """Keep the verdicts for delivery. Where the detector did not run (no model installed), what it
    objected to before stays withheld and what it never judged stays unjudged; the verdicts are
    then marked stuck for this head, so the hooks do not start a job on every git command that could
    only fail the same way (`gitmem init` and `gitmem check` try again)."""
    from gitmem.judge import safety

    flagged = dict(verdicts.flagged)
    judged = verdicts.judged | (judged_now(repo) & verdicts.present)  # earlier verdicts still in the store
    before = safety.flagged_entries(str(repo.worktree_state))
    flagged.update({k: v for k, v in before.items() if k in verdicts.present and k not in verdicts.judged
                    and k not in flagged})
    safety.record_verdicts(repo, flagged, judged, head_stamp(), stuck=not verdicts.complete)


def mark_stuck(repo: RepoPaths) -> None:
    """The job failed: no new job for this head until `gitmem init` or `gitmem check` runs."""
    from gitmem.judge import safety

    safety.record_verdicts(repo, safety.flagged_entries(str(repo.worktree_state)), judged_now(repo), head_stamp(),
                           stuck=True)


def unjudged(repo: RepoPaths, entries: Iterable[Mapping[str, Any]] | None = None) -> list[str]:
    """Ids of the stored entries (or of `entries`, already read from the store's index) the
    detector has not judged with the installed head."""
    from gitmem.judge import safety
    from gitmem.store import index

    judged = judged_now(repo)
    if entries is None:
        entries = index.entries(index.current(repo))
    return [str(e.get("id")) for e in entries if safety.entry_key(e) not in judged]


def worth_judging(repo: RepoPaths) -> list[str]:
    """Ids of the unjudged entries whose verdict could change delivery: a text of theirs the
    detector has not scored on this machine or scored as an attack (what the writer and `gitmem
    add` recorded was scored when they gated it)."""
    from gitmem.judge import safety
    from gitmem.store import index

    try:
        detector = safety.detector_module().head()
    except DetectorError:
        return []
    entries = {str(e.get("id")): e for e in index.entries(index.current(repo))}
    cache = safety.ScoreCache(repo)
    out = []
    for entry_id in unjudged(repo, entries.values()):
        if any(safety.verdict_pending(t, cache, detector.digest, detector.threshold)
               for t in safety.detector_texts(entries[entry_id])):
            out.append(entry_id)
    return out


def never_scored(repo: RepoPaths, entries: Iterable[Mapping[str, Any]]) -> list[str]:
    """Ids of the unjudged entries holding a text the detector has not passed on this machine:
    never scored, or scored as an attack (the same text under another id is not judged yet). The
    writer's and `gitmem add`'s entries passed when they were gated. Standard library only, and
    cheap (no layer 1–2 checks: compiling runs those already): delivery asks it."""
    return [str(e.get("id")) for e in not_passed(repo, entries, judged_now(repo))]


def judge_arrivals_in_background(repo: RepoPaths, entries: Iterable[Mapping[str, Any]]) -> bool:
    """For delivery, when the store changed: start the job for entries that came in by a way no
    git hook reports (`git reset --hard`, `git stash pop`, a file copied in) and hold a text never
    scored here; while it runs, delivery withholds what it has not judged (`awaiting`)."""
    from gitmem.judge import safety

    if os.environ.get("GITMEM_NO_DAEMON") or safety.stuck_head(str(repo.worktree_state)) == head_stamp():
        return False
    return bool(never_scored(repo, entries)) and judge_in_background(repo)


def judge_in_background(repo: RepoPaths, retry: bool = False) -> bool:
    """Start one detached job judging the store, when it holds an unjudged entry and no job runs
    (nor failed with this head, unless `retry`). The lock is taken here and handed to the job, so
    delivery withholds the unjudged entries from the moment the git command returns."""
    import subprocess

    from gitmem.base.files import FileLock
    from gitmem.judge import safety

    if os.environ.get("GITMEM_NO_DAEMON"):
        return False  # no background processes (tests, CI: `gitmem check` judges)
    if (not retry and safety.stuck_head(str(repo.worktree_state)) == head_stamp()) or not unjudged(repo):
        return False
    held = FileLock(repo.worktree_state / GATE_LOCK, blocking=False)
    try:
        held.__enter__()
    except BlockingIOError:
        return False  # a job runs: it looks for new entries after letting go
    assert held.fd is not None
    handed = [] if sys.platform == "win32" else [f"--lock-fd={held.fd}"]  # no fd passing there
    try:
        subprocess.Popen([sys.executable, "-I", "-m", "gitmem.judge.store_gate", os.fspath(repo.worktree), *handed],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True, pass_fds=[held.fd] if handed else [],
                         cwd=repo.worktree)
    finally:
        if handed:
            held.hand_off()  # the job's copy of the open file keeps it locked
        else:
            held.__exit__()  # Windows: the job takes the lock itself (a closed file's lock is let go lazily there)
    return True


def judge_store(repo: RepoPaths, wait: bool = False, lock_fd: int | None = None,
                commit_files: bool = False) -> StoreVerdicts | None:
    """Judge the worktree's store and record the verdicts, again while it changes; the machine's
    writer, when one runs, scores the entries first with the model it holds, so no second copy is
    loaded. `wait` (`gitmem check`): for a running job to finish first, so neither writes older
    verdicts over the other's; else None when a job holds the lock (it judges what this one would).
    `lock_fd`: the lock as judge_in_background took it. `commit_files` (the background job): the
    agents' files it renders again, where HEAD holds them, go into a commit of gitmem's, as after a
    merge; left in the work tree, they would ride along in the developer's next commit."""
    from gitmem.base.files import FileLock
    from gitmem.judge import safety

    path = repo.worktree_state / GATE_LOCK
    verdicts = None
    withheld = set(safety.withheld_by_detector(repo))
    for _ in range(RUNS):
        lock = FileLock.inherited(path, lock_fd) if lock_fd is not None else FileLock(path, blocking=wait)
        lock_fd = None
        try:
            lock.__enter__()
        except BlockingIOError:
            return verdicts
        try:
            _scored_by_writer(repo)
            verdicts = judge_and_record(repo)  # what the writer scored is cached: no model for it
            now = set(safety.withheld_by_detector(repo))
            if now != withheld or verdicts.judged:  # before letting go: whoever waits finds the files final
                _refresh_agent_files(repo, commit_files)
                withheld = now
        finally:
            lock.__exit__()
        # looked at after letting go: a hook that found the lock held a moment ago started no job
        if not verdicts.complete or not unjudged(repo):
            break
    return verdicts


def _refresh_agent_files(repo: RepoPaths, commit: bool) -> None:
    """AGENTS.md's section and the files generated for other agents leave out what the detector
    withholds now and take in what it passed (they are rendered from the committed store, without
    a hook to ask), committed where HEAD holds them when `commit`. The agents'
    part of gitmem.delivery.upkeep.after_memory_change, which this module cannot import: delivery
    imports the gate (gitmem.delivery.compiled), and the layout allows no cycle."""
    from gitmem.base import faillog
    from gitmem.delivery import agents_md
    from gitmem.delivery.agents import channels

    try:
        if commit:  # first, while the files are as HEAD has them (the commit writes them too)
            from gitmem.store.commit import Change, record, retry_in_background

            if record(repo, Change("gitmem: regenerate agent files after the gate judged the store", [])).pending:
                retry_in_background(repo)
        agents_md.refresh_if_managed(repo)
        channels.refresh(repo)
    except Exception:  # the verdicts are recorded; a stale copy is refreshed by the next memory change
        faillog.record(repo.state, "the store's gate job: refreshing other agents' files")


def _scored_by_writer(repo: RepoPaths) -> None:
    """Have the machine's writer, when one runs, score the stored entries into the score cache with
    the model it holds (what it did not score, the caller's judge_and_record scores)."""
    from gitmem.judge.safety import detector_module
    from gitmem.writer import gate_requests

    try:
        digest = detector_module().head().digest
    except DetectorError:
        return  # judge_and_record says why
    gate_requests.request_scores(repo, digest)


def watchdog(repo: RepoPaths, seconds: float = JOB_LIMIT_S) -> None:
    """End this process after `seconds`, whatever its main thread is doing (a hang inside the
    model's C code too: ctypes lets go of the GIL there), marking the head stuck first so the
    hooks do not start the same hang again. The kernel then drops the lock with the process."""
    import threading

    from gitmem.base import faillog

    def expire() -> None:
        try:
            raise TimeoutError(f"still running after {seconds:.0f} s: ended")
        except TimeoutError:
            faillog.record(repo.state, "the store's gate job")
        try:
            mark_stuck(repo)
        finally:
            os._exit(1)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()


def main(argv: list[str] | None = None) -> int:
    """`python -m gitmem.judge.store_gate WORKTREE [--lock-fd=N]`: the detached job."""
    from gitmem.base import faillog
    from gitmem.base.paths import find_repo

    args = list(sys.argv[1:] if argv is None else argv)
    lock_fd = next((int(a.split("=", 1)[1]) for a in args if a.startswith("--lock-fd=")), None)
    where = next((a for a in args if not a.startswith("--")), None)
    repo = None
    try:
        repo = find_repo(where)
        watchdog(repo)
        judge_store(repo, lock_fd=lock_fd, commit_files=True)
    except Exception:
        faillog.record(repo.state if repo else None, "the store's gate job")
        if repo is not None:
            try:
                mark_stuck(repo)
            except Exception:
                faillog.record(repo.state, "the store's gate job: marking it stuck")
    return 0


if __name__ == "__main__":
    sys.exit(main())

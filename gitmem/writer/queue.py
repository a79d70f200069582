"""The writer's durable queue under .git/gitmem/queue/: which turns still need judging.

Standard library only: the Claude Code hooks import this in front of every prompt.

Two stages, so the hook stays O(1):

* **Signals.** A hook never reads the transcript; it drops one small file per event
  (`signals/<session>.<ns>.<pid>.<rand>.json`: event, time, transcript path, the prompt
  being submitted) and returns.
* **Jobs.** `plan()` (run by the daemon or `gitmem drain`, under `plan.lock`) turns a
  session's signals into one job per completed turn past the session's watermark
  (`sessions/<session>.json`), creates them as `ready/<session>.<turn>.json`, then moves
  the watermark, then deletes the signals it used. A crash anywhere in between only makes
  the next plan redo the same work; job creation is create-if-absent, so it never
  duplicates.

A turn is complete when a later typed prompt exists in the transcript, or when a Stop or
SessionEnd arrived after it started, or when the user submitted a different prompt after
it started (UserPromptSubmit: "everything except the turn now starting").

Claiming a job is an exclusive, non-blocking flock on its file, held while the job is
processed: the kernel drops it when the process dies, however it dies, so a job whose
judge was killed with SIGKILL is simply claimable again — never lost. Finishing writes
`done/<key>` first, then removes the job file, then releases the lock; a claimer that
finds the done marker drops the job instead of judging it twice. The writer additionally
checks the store before committing (an entry with the same session, turn and body is not
recorded again), which covers a kill between the commit and the done marker.
"""

from __future__ import annotations

import fcntl
import os
import time

from gitmem.base import fastjson  # the json module costs as much as starting Python
from gitmem.base.files import utc_seconds

# The hooks import this module: no typing (≈5 ms), no pathlib (≈8 ms), no gitmem.base.paths
# (dataclasses ≈18 ms). Paths are plain strings; `repo` is anything with a `.state`
# (gitmem.base.paths.RepoPaths, or capture_hook.HookRepo on the hook path).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from gitmem.base.paths import RepoPaths
    from gitmem.writer.transcript import Turn

QUEUE_DIR = "queue"
PRIORITY_FINAL = 0   # Stop / SessionEnd: the session paused or ended
PRIORITY_PROMPT = 1  # UserPromptSubmit: mid-session
FINAL_EVENTS = ("Stop", "SessionEnd")
TRIGGER_EVENTS = ("UserPromptSubmit", "Stop", "SessionEnd")
MAX_ATTEMPTS = 5     # a job that kills its judge this often moves to failed/
# The machine's writer tries a job whose attempt failed again only this long after it (by attempts
# so far): a config mid-edit or a full disk is over in seconds or minutes, five tries in one
# second would park the turn for good. `gitmem drain`, run by the developer, does not wait.
RETRY_AFTER_S = (5.0, 30.0, 120.0, 600.0)
PROMPT_PREFIX = 200  # characters of the submitted prompt kept to recognise "the turn now starting"
REPLY_CHARS = 6000   # of Stop's last_assistant_message, kept for a transcript that lags behind
SETTLE_SECONDS = 0.3 # a job is claimed this long after the hook call that completed its turn
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


# -- layout ---------------------------------------------------------------------------------

def root(repo: RepoPaths) -> str:
    return os.path.join(os.fspath(repo.state), QUEUE_DIR)


def session_key(session: str) -> str:
    """A file-name-safe key for a session id (Claude Code's are UUIDs and pass unchanged)."""
    if session and len(session) <= 80 and all(c in _SAFE for c in session):
        return session
    import hashlib

    return "h" + hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def job_key(session: str, turn: int) -> str:
    return f"{session_key(session)}.{turn}"


def _dirs(repo: RepoPaths) -> dict[str, str]:
    base = root(repo)
    return {name: os.path.join(base, name) for name in ("signals", "sessions", "ready", "done", "failed", "prompts")}


def _tmp_for(path: str) -> str:
    head, name = os.path.split(path)
    return os.path.join(head, f".{name}.{os.getpid()}.{os.urandom(4).hex()}")


def _write_new(path: str, data: Any) -> bool:
    """Create `path` with `data` atomically; False when it already exists (never overwrites)."""
    tmp = _tmp_for(path)
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(fastjson.dumps_utf8(data))
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)


def _listdir(path: str) -> list[str]:
    try:
        return [n for n in os.listdir(path) if not n.startswith(".")]
    except FileNotFoundError:
        return []


# -- the hook's side: signals ---------------------------------------------------------------

def signal(repo: RepoPaths, session: str, event: str, transcript: str,
           prompt: str | None = None, reply: str | None = None, now: float | None = None) -> str:
    """Record that `event` happened in `session` (cheap; called from the hook).

    `reply`: Stop's `last_assistant_message`. Claude Code may run the Stop hook before the
    final assistant record reaches the transcript; the writer adds it back when missing."""
    folder = os.path.join(root(repo), "signals")
    os.makedirs(folder, exist_ok=True)
    stamp = time.time() if now is None else now
    # The worktree too: the queue is the shared git dir's, and a linked worktree's session commits
    # on that worktree's branch.
    data: dict[str, Any] = {"session": session, "event": event, "time": stamp, "transcript": transcript,
                            "worktree": os.fspath(repo.worktree)}
    if prompt:
        data["prompt"] = _norm(prompt)[:PROMPT_PREFIX]
    if reply:
        data["reply"] = reply if len(reply) <= REPLY_CHARS else reply[-REPLY_CHARS:]
    name = f"{session_key(session)}.{time.time_ns()}.{os.getpid()}.{os.urandom(3).hex()}.json"
    path = os.path.join(folder, name)
    fastjson.write_file(path, data)
    return path


def _norm(text: str) -> str:
    return " ".join(text.split())


# -- planning: signals -> jobs ----------------------------------------------------------------

class Job:
    """One turn to judge. A plain slotted class: a frozen dataclass costs ~6 ms at import."""

    __slots__ = ("assistant", "ends", "enqueued", "event", "priority", "reply", "session", "starts",
                 "transcript", "turn", "until", "user", "worktree")

    def __init__(self, session: str, turn: int, transcript: str, priority: int = PRIORITY_PROMPT,
                 enqueued: float = 0.0, event: str = "", until: float | None = None,
                 reply: str | None = None, user: str | None = None, assistant: str | None = None,
                 starts: str | None = None, ends: str | None = None, worktree: str | None = None) -> None:
        self.session = session
        self.turn = turn
        self.transcript = transcript
        self.priority = priority
        self.enqueued = enqueued
        self.event = event
        self.until = until  # when the turn was known complete: its edits happened before this
        self.reply = reply  # Stop's last_assistant_message, for the last turn of a Stop
        # The turn as planning read it, so the writer need not parse the transcript again:
        # its texts, its timestamp and the next turn's (the window its edits fall in).
        self.user = user
        self.assistant = assistant
        self.starts = starts
        self.ends = ends
        self.worktree = worktree  # where the session worked (None: a job queued before this was kept)

    def __repr__(self) -> str:
        return f"Job({self.session!r}, {self.turn}, priority={self.priority}, event={self.event!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Job) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    @property
    def key(self) -> str:
        return job_key(self.session, self.turn)

    def to_dict(self) -> dict[str, Any]:
        return {"session": self.session, "turn": self.turn, "transcript": self.transcript,
                "priority": self.priority, "enqueued": self.enqueued, "event": self.event,
                "until": self.until, "reply": self.reply, "user": self.user, "assistant": self.assistant,
                "starts": self.starts, "ends": self.ends, "worktree": self.worktree}

    @classmethod
    def from_dict(cls, data: Any) -> Job | None:
        try:
            return cls(str(data["session"]), int(data["turn"]), str(data["transcript"]),
                       int(data.get("priority", PRIORITY_PROMPT)), float(data.get("enqueued", 0.0)),
                       str(data.get("event", "")),
                       float(data["until"]) if isinstance(data.get("until"), (int, float)) else None,
                       *(data[k] if isinstance(data.get(k), str) else None
                         for k in ("reply", "user", "assistant", "starts", "ends", "worktree")))
        except (KeyError, TypeError, ValueError, AttributeError):
            return None


def _lock(path: str) -> int:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        os.close(fd)
        raise
    return fd


def _unlock(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _complete(turns: list[Turn], signals: list[dict[str, Any]]) -> int:
    """How many of `turns` (consecutive, from the watermark) are complete."""
    if not turns:
        return 0
    last = turns[-1]
    started = utc_seconds(last.timestamp)
    for sig in signals:
        event = sig.get("event")
        at = sig.get("time")
        if not isinstance(at, (int, float)):
            continue
        if event == "SessionEnd" and (started is None or at >= started):
            return len(turns)
        if event == "Stop" and (started is None or at >= started):
            return len(turns)
        if event == "UserPromptSubmit" and started is not None and at >= started \
                and not _same_prompt(sig.get("prompt") or "", last.user):
            return len(turns)
    return len(turns) - 1  # every turn but the last has a later typed prompt


def _same_prompt(submitted: str, typed: str) -> bool:
    """Is `typed` (a transcript turn) the prompt `submitted` (a hook's, first characters)?
    A prefix match counts: when unsure, the turn is taken for the one now starting, which
    only delays its judgement to the next signal."""
    typed = _norm(typed)[:PROMPT_PREFIX]
    n = min(len(typed), len(submitted))
    return n > 0 and typed[:n] == submitted[:n]


def plan(repo: RepoPaths) -> int:
    """Turn pending signals into jobs; returns how many jobs were created."""
    dirs = _dirs(repo)
    names = sorted(_listdir(dirs["signals"]))
    if not names:
        return 0
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)
    created = 0
    fd = _lock(os.path.join(root(repo), "plan.lock"))
    try:
        by_session: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for name in sorted(_listdir(dirs["signals"])):
            data = fastjson.read_file(os.path.join(dirs["signals"], name))
            if not isinstance(data, dict) or not isinstance(data.get("session"), str):
                _remove(os.path.join(dirs["signals"], name))  # unreadable: nothing to act on
                continue
            by_session.setdefault(data["session"], []).append((name, data))
        for session, items in by_session.items():
            created += _plan_session(repo, dirs, session, [d for _, d in items])
            for name, _ in items:
                _remove(os.path.join(dirs["signals"], name))
    finally:
        _unlock(fd)
    return created


def _plan_session(repo: RepoPaths, dirs: dict[str, str], session: str,
                  signals: list[dict[str, Any]]) -> int:
    from gitmem.writer.reader import read_turns

    skey = session_key(session)
    state_path = os.path.join(dirs["sessions"], f"{skey}.json")
    state = _session_state(state_path)
    start = state.get("next", 0) if isinstance(state.get("next"), int) else 0
    transcript = next((s["transcript"] for s in reversed(signals) if isinstance(s.get("transcript"), str)),
                      state.get("transcript"))
    worktree = next((s["worktree"] for s in reversed(signals) if isinstance(s.get("worktree"), str)),
                    state.get("worktree") if isinstance(state.get("worktree"), str) else None)
    if not isinstance(transcript, str) or not transcript:
        return 0
    turns = read_turns(transcript, start=start)
    count = _complete(turns, signals)
    if count <= 0:
        return 0
    final = any(s.get("event") in FINAL_EVENTS for s in signals)
    event = next((s["event"] for s in reversed(signals) if isinstance(s.get("event"), str)), "")
    times = [s["time"] for s in signals if isinstance(s.get("time"), (int, float))] or [time.time()]
    # The reply a Stop reported belongs to the last turn in the transcript, if the Stop came after it began.
    last_start = utc_seconds(turns[-1].timestamp)
    reply = next((s["reply"] for s in reversed(signals) if s.get("event") == "Stop"
                  and isinstance(s.get("reply"), str) and isinstance(s.get("time"), (int, float))
                  and (last_start is None or s["time"] >= last_start)), None) if count == len(turns) else None
    created = 0
    elsewhere: dict[str, RepoPaths] = {}  # other repositories where turns of this session were typed
    typed_in: dict[str | None, RepoPaths | None] = {}  # a folder's other repository, looked up once
    for n, turn in enumerate(turns[:count]):
        key = job_key(session, turn.index)
        if os.path.exists(os.path.join(dirs["done"], key)) or \
                os.path.exists(os.path.join(dirs["failed"], f"{key}.json")):
            continue
        if turn.cwd not in typed_in:
            typed_in[turn.cwd] = _typed_elsewhere(repo, turn.cwd)
        other = typed_in[turn.cwd]
        if other is not None:
            elsewhere.setdefault(os.fspath(other.common_dir), other)
            continue
        # A forked or resumed session's file copies the earlier prompts with their records' ids:
        # each prompt the developer typed is judged once, in the session it was first planned for.
        prompt = os.path.join(dirs["prompts"], session_key(turn.user_uuid)) if turn.user_uuid else None
        if prompt is not None and _planned_for_another(prompt, key):
            continue
        job = Job(session, turn.index, transcript, PRIORITY_FINAL if final else PRIORITY_PROMPT,
                  float(min(times)), event, float(max(times)), reply if turn is turns[-1] else None,
                  turn.user, turn.assistant, turn.timestamp,
                  turns[n + 1].timestamp if n + 1 < len(turns) else None, worktree)
        if _write_new(os.path.join(dirs["ready"], f"{key}.json"), job.to_dict()):
            created += 1
        if prompt is not None:
            os.makedirs(dirs["prompts"], exist_ok=True)
            _write_new(prompt, key)  # after the job: a crash between the two re-plans it, never loses it
    for other in elsewhere.values():  # told, that repository's planning takes them (its own watermark)
        signal(other, session, event or "Stop", transcript)
    watermark = turns[count - 1].index + 1
    fastjson.write_file(state_path, {"session": session, "next": watermark, "transcript": transcript,
                                     "worktree": worktree, "updated": time.time()})
    _prune_done(dirs["done"], skey, watermark)
    return created


def _planned_for_another(prompt: str, key: str) -> bool:
    """Whether the typed prompt whose marker is `prompt` was planned as another job than `key`."""
    try:
        with open(prompt, encoding="utf-8") as handle:
            return fastjson.loads(handle.read()) != key
    except (OSError, ValueError):
        return False


def _typed_elsewhere(repo: RepoPaths, cwd: str | None) -> RepoPaths | None:
    """The other gitmem repository a turn was typed in (the agent had moved into a sibling one),
    where it is judged, never in both; None for this one's (its linked worktrees included: they
    share this queue), an unknown folder, or one no longer there."""
    if not cwd or not os.path.isdir(cwd):
        return None
    from gitmem.base.locate import locate

    found = locate(cwd)
    if found is None or not os.path.isdir(os.path.join(found[0], ".gitmem")) or \
            os.path.realpath(found[2]) == os.path.realpath(repo.common_dir):
        return None
    from gitmem.base.paths import find_repo

    try:
        return find_repo(found[0])
    except Exception:  # not a repository gitmem can serve: judged here, as before
        return None


def _prune_done(done: str, skey: str, watermark: int) -> None:
    """Done markers below the watermark can never be planned again: drop them."""
    prefix = skey + "."
    for name in _listdir(done):
        if name.startswith(prefix):
            tail = name[len(prefix):]
            if tail.isdigit() and int(tail) < watermark:
                _remove(os.path.join(done, name))


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _session_state(path: str) -> dict[str, Any]:
    state = fastjson.read_file(path)
    return state if isinstance(state, dict) else {}


def watermark(repo: RepoPaths, session: str) -> int:
    state = _session_state(os.path.join(_dirs(repo)["sessions"], f"{session_key(session)}.json"))
    value = state.get("next", 0)
    return value if isinstance(value, int) else 0


# -- claiming and finishing ---------------------------------------------------------------------

class Claim:
    """A job this process holds (an flock on its file) until `finish()` or `release()`."""

    __slots__ = ("_fd", "attempt", "job", "path", "repo")

    def __init__(self, repo: RepoPaths, job: Job, path: str, fd: int, attempt: int) -> None:
        self.repo = repo
        self.job = job
        self.path = path
        self._fd: int | None = fd
        self.attempt = attempt

    def finish(self) -> None:
        """Mark the job done for good, then give up the lock."""
        dirs = _dirs(self.repo)
        marker = os.path.join(dirs["done"], self.job.key)
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT, 0o644))
        _remove(self.path)
        _remove(_attempts_path(self.path))
        self.release()

    def fail(self, reason: str) -> None:
        """Park the job in failed/ with the reason (it is kept, never silently dropped)."""
        dirs = _dirs(self.repo)
        data = self.job.to_dict() | {"reason": reason, "time": time.time()}
        fastjson.write_file(os.path.join(dirs["failed"], f"{self.job.key}.json"), data)
        _remove(self.path)
        _remove(_attempts_path(self.path))
        self.release()

    def release(self, counted: bool = True) -> None:
        """Give the job back unfinished (another claimer may take it); `counted=False`: this
        attempt was not the job's failure (the judge could not load) and does not count."""
        if self._fd is not None:
            try:  # counted: the wait before the next attempt runs from now, when this one failed
                if counted:
                    os.utime(_attempts_path(self.path))
                else:
                    os.truncate(_attempts_path(self.path), max(self.attempt - 1, 0))
            except OSError:
                pass  # finished: the file is gone
            _unlock(self._fd)
            self._fd = None

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


# Jobs already read, by file path: (the file's inode, the job). A job file is written once and never
# changed, so a writer working through a long backlog reads each file once, not once per claim. The
# inode comes with the directory listing (no stat per file); a name is never written again once its
# job is done (planning skips a done or failed key), so a reused inode cannot bring back an old job.
_READ: dict[str, tuple[int, Job]] = {}


def pending(repo: RepoPaths) -> list[Job]:
    """Ready jobs in priority order (Stop/SessionEnd first, then oldest first)."""
    ready = _dirs(repo)["ready"]
    jobs, broken = [], []
    try:
        found = [e for e in os.scandir(ready) if e.name.endswith(".json") and not e.name.startswith(".")]
    except FileNotFoundError:
        found = []
    for entry in found:
        known = _READ.get(entry.path)
        inode = entry.inode()
        job = known[1] if known is not None and known[0] == inode else Job.from_dict(fastjson.read_file(entry.path))
        if job is not None:
            _READ[entry.path] = (inode, job)
            jobs.append(job)
        else:
            broken.append(entry.name[:-len(".json")])
    listed = {e.path for e in found}
    for path in [p for p in _READ if p.startswith(ready + os.sep) and p not in listed]:
        del _READ[path]  # finished: forget it
    for key in broken:  # job files are written whole: this one never will be; claim sets it aside in failed/
        held = claim(repo, key)
        if held is not None:
            held.release()
    jobs.sort(key=lambda j: (j.priority, j.enqueued, j.session, j.turn))
    return jobs


def claim_next(repo: RepoPaths, *, patient: bool = False) -> Claim | None:
    """The highest-priority job nobody holds, claimed; None when there is none (or none has settled);
    `patient`: one whose last attempt failed is left until RETRY_AFTER_S has passed."""
    now = time.time()
    ready = _dirs(repo)["ready"]
    for job in pending(repo):
        if job.until is not None and now - job.until < SETTLE_SECONDS:
            continue  # give Claude Code a moment to flush the transcript
        if patient and _retry_later(os.path.join(ready, f"{job.key}.json"), now):
            continue
        held = claim(repo, job.key)
        if held is not None:
            return held
    return None


def claim(repo: RepoPaths, key: str) -> Claim | None:
    dirs = _dirs(repo)
    path = os.path.join(dirs["ready"], f"{key}.json")
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None  # someone is judging it right now
    try:
        same = os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        same = False
    if not same:  # finished (and removed) between our open and our lock
        _unlock(fd)
        return None
    job = Job.from_dict(fastjson.read_file(path))
    if job is None:
        _unlock(fd)
        _quarantine_broken(dirs, path)
        return None
    if os.path.exists(os.path.join(dirs["done"], key)):  # finished, but killed before the job file went
        _remove(path)
        _unlock(fd)
        return None
    with open(_attempts_path(path), "ab") as handle:
        handle.write(b".")
        attempt = handle.tell()
    result = Claim(repo, job, path, fd, attempt)
    if attempt > MAX_ATTEMPTS:
        result.fail(f"gave up after {MAX_ATTEMPTS} attempts that did not finish")
        return None
    return result


def _retry_later(job_path: str, now: float) -> bool:
    try:
        tried = os.stat(_attempts_path(job_path))
    except OSError:
        return False
    if tried.st_size == 0:
        return False
    return now - tried.st_mtime < RETRY_AFTER_S[min(tried.st_size, len(RETRY_AFTER_S)) - 1]


def _attempts_path(job_path: str) -> str:
    return job_path[: -len(".json")] + ".attempts" if job_path.endswith(".json") else job_path + ".attempts"


def _quarantine_broken(dirs: dict[str, str], path: str) -> None:
    try:
        os.makedirs(dirs["failed"], exist_ok=True)
        os.replace(path, os.path.join(dirs["failed"], os.path.basename(path)))
    except OSError:
        pass


def prune(repo: RepoPaths, max_age_days: float = 30.0) -> int:
    """Forget sessions untouched for `max_age_days`: watermarks, edit logs, stale done markers,
    which prompts were planned (a fork of a session that old is judged again).

    A session resumed after that is re-planned from turn 0; the writer's commit-time check
    (same session, turn and body) keeps it from recording anything twice."""
    limit = time.time() - max_age_days * 86400
    removed = 0
    dirs = _dirs(repo)
    folders = (dirs["sessions"], dirs["done"], dirs["prompts"], os.path.join(os.fspath(repo.state), "events"))
    for folder in folders:
        for name in _listdir(folder):
            path = os.path.join(folder, name)
            try:
                if os.stat(path).st_mtime < limit:
                    os.unlink(path)
                    removed += 1
            except FileNotFoundError:
                pass
    return removed


# -- reporting ---------------------------------------------------------------------------------

def counts(repo: RepoPaths) -> dict[str, int]:
    dirs = _dirs(repo)
    ready = [n for n in _listdir(dirs["ready"]) if n.endswith(".json")]
    busy = 0
    for name in ready:
        try:
            fd = os.open(os.path.join(dirs["ready"], name), os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except OSError:
            busy += 1
        finally:
            os.close(fd)
    return {"signals": len(_listdir(dirs["signals"])), "ready": len(ready) - busy, "judging": busy,
            "failed": len(_listdir(dirs["failed"]))}


def failed(repo: RepoPaths) -> Iterator[dict[str, Any]]:
    folder = _dirs(repo)["failed"]
    for name in sorted(_listdir(folder)):
        data = fastjson.read_file(os.path.join(folder, name))
        if isinstance(data, dict):
            yield data

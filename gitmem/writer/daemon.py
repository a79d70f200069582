"""The writer daemon: one resident process per machine holds the judge and drains every queue.

A developer with five repositories open holds one model in memory, not five. Each repository
keeps its own queue (`.git/gitmem/queue/`), so each turn is still judged exactly once and
committed in its own repository; the hook that signals a turn also registers its repository
with the machine's writer (`$XDG_STATE_HOME/gitmem/writer/repos/`, default
`~/.local/state/gitmem/writer/`) and starts the writer when none runs.

Client side (`is_running`, `ensure_running`, `start`, `stop`, `status`) is standard library
only: the capture hook calls `ensure_running` on every trigger. The writer holds an exclusive
flock on `writer/daemon.lock` for its whole life — that lock, not a pid, is what "running"
means, so a crashed writer never looks alive — and writes its pid and state to
`writer/daemon.json` and, for each repository it serves, that repository's own counts to
`.git/gitmem/daemon.json`. It loads the model once, judges one turn at a time in priority order
across repositories (across processes too: inference holds `writer/judge.lock`), keeps no
per-session state in memory, and exits after `idle_timeout` seconds without work. When gitmem is
upgraded under it (its package files change), it finishes the job at hand and puts the installed
writer in its place (same process, new code and judge). It also
scores stores for the gate's jobs (gitmem.writer.gate_requests: entries a pull brought in), so
that they load no model of their own.

`drain(repo)` does the same work for one repository in the calling process and returns when
its queue is empty (tests, CI, scripts; `gitmem drain`). Both run the same two steps:
`_next_claim` and `_judge`.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
import zlib

from gitmem.base import fastjson, files, settings  # fastjson: the json module costs as much as starting Python
from gitmem.base.wording import counted
from gitmem.writer import machine, queue
from gitmem.writer.machine import LOCK_FILE, STATUS_FILE, machine_dir
from gitmem.writer.machine import path as _machine
from gitmem.writer.machine import read as _read

# The capture hook imports this module: no typing, pathlib or gitmem.base.paths at import time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from gitmem.base.paths import RepoPaths

LOG_FILE = "daemon.log"
SPAWN_STAMP = "daemon.spawn"
REPOS_DIR = "repos"
DEFAULT_IDLE_TIMEOUT = float(settings.default("writer.idle_timeout"))
POLL_SECONDS = 0.25
SPAWN_GRACE = 15.0       # a writer spawned this recently is still starting: do not spawn another
ERROR_BACKOFF = 300.0    # after a writer failed to start, hooks wait this long before trying again
UPGRADE_CHECK_S = 2.0    # how often the writer looks whether gitmem was upgraded under it
RESTART = 75             # run()'s status when it was: serve() execs the installed writer in its place
INSTALLED_SUFFIXES = (".py", ".json", ".jsonl", ".npz", ".gguf", ".scm", ".sh")  # the package's own files


# -- client side (stdlib only) ---------------------------------------------------------------------

def _repo_file(repo: Any, name: str) -> str:
    return os.path.join(os.fspath(repo.state), name)


def _registration(repo: Any) -> str:
    """`repos/<name>-<crc>.json`, keyed by the repository's shared git dir (its queue's home)."""
    common = os.fspath(repo.common_dir)
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in os.path.basename(os.fspath(repo.worktree)))
    return os.path.join(machine_dir(), REPOS_DIR, f"{name[:40]}-{zlib.crc32(common.encode()):08x}.json")


def register(repo: Any) -> None:
    """Name `repo` to the machine's writer (atomic; rewritten only when it changed)."""
    record = {"worktree": os.fspath(repo.worktree), "git_dir": os.fspath(repo.git_dir),
              "common_dir": os.fspath(repo.common_dir)}
    path = _registration(repo)
    if fastjson.read_file(path) != record:
        fastjson.write_file(path, record)


def is_running(repo: Any = None) -> bool:
    """True while some process holds the writer's lock (a dead writer holds nothing)."""
    return machine.is_running()


def read_status(repo: RepoPaths) -> dict[str, Any]:
    """What the writer last wrote about `repo` (its counts and state there)."""
    return _read(_repo_file(repo, STATUS_FILE))


def ensure_running(repo: RepoPaths) -> bool:
    """Register `repo` and start the writer detached unless it runs, is starting, or failed a
    moment ago. Never blocks."""
    if os.environ.get("GITMEM_NO_DAEMON"):
        return False
    register(repo)
    if is_running():
        return True
    now = time.time()
    last = _read(_machine(STATUS_FILE))
    if last.get("state") == "error" and now - float(last.get("time") or 0) < ERROR_BACKOFF:
        return False
    stamp = _machine(SPAWN_STAMP)
    try:
        os.close(os.open(stamp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except FileExistsError:
        try:
            if now - os.stat(stamp).st_mtime < SPAWN_GRACE:
                return False
            os.utime(stamp)
        except FileNotFoundError:
            pass
    spawn()
    return True


def spawn(idle_timeout: float | None = None) -> int:
    """Start `python -m gitmem.writer.daemon serve` in its own session, stdio detached; returns its pid."""
    os.makedirs(machine_dir(), exist_ok=True)
    args = _command(idle_timeout)
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, _machine(LOG_FILE), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    return os.posix_spawn(sys.executable, args, dict(os.environ), file_actions=actions, setsid=True)


def _command(idle_timeout: float | None) -> list[str]:
    # -P: not the current directory first on sys.path (the worktree of the hook that spawned the
    # writer, which may hold a gitmem/ folder of its own: a checkout of gitmem)
    args = [sys.executable, "-P", "-m", "gitmem.writer.daemon", "serve"]
    return [*args, "--idle-timeout", str(idle_timeout)] if idle_timeout is not None else args


def start(repo: RepoPaths, idle_timeout: float | None = None, wait: float = 10.0) -> dict[str, Any]:
    """Register `repo`, start the writer (unless running) and wait until it holds its lock."""
    register(repo)
    if not is_running():
        pid = spawn(idle_timeout)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and not is_running():
            try:  # reap it if it exited at once (it is our child here)
                if os.waitpid(pid, os.WNOHANG)[0]:
                    break
            except ChildProcessError:
                break
            time.sleep(0.05)
    return status(repo)


def stop(repo: RepoPaths | None = None, timeout: float = 15.0) -> bool:
    """Ask the machine's writer to finish its current judgement and exit; kill it after `timeout`.

    Killing is safe: a job whose judge dies is claimed again and redone."""
    if not is_running():
        return False
    import signal as signals

    pid = _read(_machine(STATUS_FILE)).get("pid")
    if not isinstance(pid, int) or not _is_daemon(pid):
        return False  # the status names a writer that is gone (its pid may belong to another process now)
    try:
        os.kill(pid, signals.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not is_running():
            return True
        time.sleep(0.05)
    try:
        os.kill(pid, signals.SIGKILL)
    except ProcessLookupError:
        pass
    return True


def _is_daemon(pid: int) -> bool:
    """Is `pid` gitmem's writer? (Linux: its command line; elsewhere: assumed.)"""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return b"gitmem.writer.daemon" in handle.read()
    except FileNotFoundError:
        return not os.path.isdir("/proc/self")
    except OSError:
        return True


def status(repo: RepoPaths) -> dict[str, Any]:
    """The writer's process facts and state, with `repo`'s own counts and queue."""
    running = is_running()
    machine = _read(_machine(STATUS_FILE))
    here = read_status(repo)
    out: dict[str, Any] = {"running": running}
    if running or here:
        out.update({k: v for k, v in here.items() if k != "running"})
        for key in ("pid", "started", "rss_kib", "peak_rss_kib", "idle_timeout", "repos"):
            if key in machine:
                out[key] = machine[key]
        if running and machine.get("state") in ("loading model", "idle"):
            out["state"] = machine["state"]
    if not running and out.get("state") not in (None, "error"):
        out["state"] = "stopped"
    out["queue"] = queue.counts(repo)
    return out


def describe(info: dict[str, Any]) -> list[str]:
    """`gitmem daemon status` in words."""
    lines = []
    if info.get("running"):
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(info.get("started") or 0)))
        doing = info.get("state", "?")
        if info.get("job"):
            doing += f" ({info['job']})"
        lines.append(f"running: pid {info.get('pid')} since {since}, {doing}")
        rss = info.get("rss_kib")
        peak = info.get("peak_rss_kib")
        if rss:
            lines.append(f"memory: {rss / 1024:.0f} MiB resident (peak {(peak or rss) / 1024:.0f} MiB)")
        lines.append(f"serving {counted(info.get('repos', 1), 'repository')} on this machine")
        lines.append(f"here: judged {counted(info.get('judged', 0), 'turn')}, "
                     f"recorded {counted(info.get('recorded', 0), 'entry')}, "
                     f"quarantined {info.get('quarantined', 0)}; exits after "
                     f"{info.get('idle_timeout', DEFAULT_IDLE_TIMEOUT):.0f} s idle")
    elif info.get("state") == "error":
        lines.append(f"not running: the last start failed: {info.get('error')}")
    else:
        lines.append("not running")
    q = info.get("queue", {})
    lines.append(f"queue: {q.get('ready', 0)} waiting, {q.get('judging', 0)} being judged, "
                 f"{q.get('signals', 0)} unplanned signals, {q.get('failed', 0)} failed")
    return lines


# -- the resident side (imports the writer, and with it the model, lazily) ----------------------------

def judge_lock() -> files.FileLock:
    """One inference at a time on the machine, whichever process runs it (2 cores, one model)."""
    return files.FileLock(_machine("judge.lock"))


def make_judge(repo: RepoPaths) -> Any:
    """The Judge, with the model that .gitmem/config.yaml names (the embedded one by default)."""
    from gitmem.judge.turn_judge import Judge

    return Judge(repo)


def _load(judge: Any) -> Any:
    loader = getattr(judge, "load", None)
    if callable(loader):
        loader()
    return judge


class DrainResult:
    __slots__ = ("errors", "outcomes")

    def __init__(self) -> None:
        self.outcomes: list[Any] = []
        self.errors: list[str] = []   # one line per failed attempt (traceback in errors.log)

    @property
    def recorded(self) -> int:
        return sum(len(o.recorded) for o in self.outcomes)

    @property
    def quarantined(self) -> int:
        return sum(len(o.quarantined) for o in self.outcomes)


def _next_claim(repos: Iterable[RepoPaths], *, patient: bool = False) -> tuple[RepoPaths, Any] | None:
    """The most urgent job nobody holds across `repos` (Stop/SessionEnd first, then oldest), claimed;
    `patient`: a job whose last attempt failed waits its turn (queue.RETRY_AFTER_S)."""
    from gitmem.base import faillog

    ranked = []
    for n, repo in enumerate(repos):
        try:
            queue.plan(repo)
            jobs = queue.pending(repo)
        except Exception:  # one repository's failure (logged) never stops the writer for the others
            faillog.record(repo.state, "writer: planning jobs")
            continue
        if jobs:
            ranked.append(((jobs[0].priority, jobs[0].enqueued, n), repo))
    for _, repo in sorted(ranked, key=lambda r: r[0]):
        try:
            held = queue.claim_next(repo, patient=patient)
        except Exception:  # its disk is full (a job cannot be parked): the others are still served
            faillog.record(repo.state, "writer: claiming a job")
            continue
        if held is not None:
            return repo, held
    return None


def _judge(repo: RepoPaths, held: Any, judge: Any, lock: files.FileLock) -> Any:
    """Judge one claimed job and finish it; raises when the judgement fails (the job is retried)."""
    from gitmem.writer import turn_writer

    with held:
        outcome = turn_writer.process(repo, held.job, judge, lock)
        held.finish()
    return outcome


def drain(repo: RepoPaths, judge: Any = None, *, wait_timeout: float = 600.0,
          on_outcome: Callable[[Any], None] | None = None) -> DrainResult:
    """Judge everything queued in `repo`, in this process; returns when nothing is left.

    Jobs another process is judging right now are waited for (up to `wait_timeout`). A job
    whose judgement raises is retried and, after queue.MAX_ATTEMPTS, parked in failed/;
    the errors are returned (tracebacks in .git/gitmem/errors.log)."""
    from gitmem.base import faillog

    result = DrainResult()
    lock = judge_lock()
    deadline = time.monotonic() + wait_timeout
    while True:
        claimed = _next_claim([repo])
        if claimed is None:
            if queue.pending(repo) and time.monotonic() < deadline:
                time.sleep(0.1)  # held by another process: wait for it to finish or die
                continue
            return result
        held = claimed[1]
        try:
            if judge is None:
                judge = _load(make_judge(repo))  # a model that cannot load is an error to report
            outcome = _judge(repo, held, judge, lock)
        except Exception as exc:
            held.release()
            faillog.record(repo.state, f"gitmem drain: job {held.job.key}")
            result.errors.append(f"{held.job.key} (attempt {held.attempt}): {type(exc).__name__}: {exc}")
            if judge is None:
                raise
            continue
        result.outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)


def _rss() -> tuple[int | None, int | None]:
    rss = peak = None
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("VmHWM:"):
                    peak = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return rss, peak


def registered() -> list[RepoPaths]:
    """The repositories that named themselves to the machine's writer and still exist; the
    registrations of vanished ones are removed."""
    from pathlib import Path

    from gitmem.base.paths import RepoPaths

    folder = _machine(REPOS_DIR)
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        path = os.path.join(folder, name)
        record = _read(path) if name.endswith(".json") else {}
        where = [record.get(k) for k in ("worktree", "git_dir", "common_dir")]
        repo = RepoPaths(*(Path(str(w)) for w in where)) if all(isinstance(w, str) for w in where) else None
        if repo is not None and os.path.isdir(os.path.join(repo.common_dir, "gitmem")) and repo.on_disk():
            out.append(repo)
        elif name.endswith(".json"):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
    return out


def _key(repo: RepoPaths) -> str:
    return os.fspath(repo.common_dir)


def installation_stamp() -> tuple[tuple[str, int, int], ...]:
    """(path, size, mtime) of every file of the installed gitmem package, code and trained data,
    and of the installation records on the import path (`gitmem-*.dist-info/RECORD`, which pip
    rewrites also when an install moves the package, editable or not): an upgrade changes it, and
    a writer started before then would go on judging with the old judge while it is kept busy."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = []
    for entry in sys.path:
        try:
            names = os.listdir(entry)
        except OSError:
            continue  # not a folder (a zip, or gone)
        paths += [os.path.join(entry, n, "RECORD") for n in sorted(names)
                  if n.startswith("gitmem-") and n.endswith(".dist-info")]
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__" and not d.startswith("."))
        # an editor's swap or backup file beside the code is no upgrade
        paths += [os.path.join(folder, n) for n in sorted(names)
                  if not n.startswith(".") and n.endswith(INSTALLED_SUFFIXES)]
    found = []
    for path in paths:
        try:
            info = os.stat(path)
        except OSError:
            continue  # removed this instant by the upgrade: the next look sees the rest
        found.append((path, info.st_size, info.st_mtime_ns))
    return tuple(found)


class _Writer:
    """The resident loop: every registered repository's queue, one job at a time."""

    def __init__(self, idle_timeout: float | None) -> None:
        from gitmem.writer import gate_requests

        self.explicit_idle = idle_timeout
        self.stopping = False
        self.info: dict[str, Any] = {"pid": os.getpid(), "started": time.time(), "state": "starting",
                                     "idle_timeout": idle_timeout or DEFAULT_IDLE_TIMEOUT, "repos": 0,
                                     "judged": 0, "recorded": 0, "quarantined": 0, "job": None,
                                     gate_requests.CAPABLE: True}
        self.served: dict[str, dict[str, Any]] = {}   # per repository: its counts and state
        self.paths: dict[str, RepoPaths] = {}
        self.judges: dict[str, Any] = {}
        # Repositories whose judge would not load (a committed config naming a refused model):
        # their jobs wait until this time; every other repository's are judged meanwhile.
        self.unloadable: dict[str, float] = {}
        self.installed = installation_stamp()
        self.seen = (self.installed, time.monotonic())  # the last look at the installation, and when

    def upgraded(self) -> bool:
        """Whether the installed gitmem differs from the one this writer started with, and has
        stayed the same for one look (an upgrade still writing files is waited out)."""
        last, when = self.seen
        if time.monotonic() - when < UPGRADE_CHECK_S:
            return False
        now = installation_stamp()
        self.seen = (now, time.monotonic())
        return now != self.installed and now == last

    def write(self, **changes: Any) -> None:
        self.info.update(changes)
        rss, peak = _rss()
        self.info.update(rss_kib=rss, peak_rss_kib=peak, time=time.time(), repos=len(self.paths))
        try:
            fastjson.write_file(_machine(STATUS_FILE), self.info)
        except OSError:
            pass  # a full disk: the status is for people to read, the jobs go on

    def write_repo(self, repo: RepoPaths, **changes: Any) -> None:
        record = self.served.setdefault(_key(repo), {"pid": os.getpid(), "started": self.info["started"],
                                                     "repo": os.fspath(repo.worktree), "judged": 0,
                                                     "recorded": 0, "quarantined": 0, "job": None})
        record.update(changes, time=time.time(), idle_timeout=self.info["idle_timeout"])
        rss, peak = _rss()
        record.update(rss_kib=rss, peak_rss_kib=peak)
        if not repo.on_disk():
            return  # deleted: its path gets nothing written back
        try:
            fastjson.write_file(_repo_file(repo, STATUS_FILE), record)
        except OSError:
            pass  # the repository went away under us

    def _stop(self, signum: int, frame: Any) -> None:
        self.stopping = True

    def idle_timeout(self) -> float:
        if self.explicit_idle is not None:
            return self.explicit_idle
        env = os.environ.get("GITMEM_DAEMON_IDLE")
        if env:
            try:
                return float(env)
            except ValueError:
                pass
        return max((_configured_idle(r) for r in self.paths.values()), default=DEFAULT_IDLE_TIMEOUT)

    def refresh(self) -> None:
        current = {_key(r): r for r in registered()}
        for key, repo in current.items():
            if key not in self.paths:
                self.paths[key] = repo
                queue.prune(repo)
                self.write_repo(repo, state="idle")
        for key in [k for k in self.paths if k not in current]:
            del self.paths[key]
            self.judges.pop(key, None)
            self.served.pop(key, None)

    def serve_score_requests(self, lock: files.FileLock) -> bool:
        """Score the stores that the gate's jobs asked about (gitmem.writer.gate_requests), every
        request present taken at once, so none waits out its pickup time behind another; whether
        there were any."""
        from gitmem.base import faillog
        from gitmem.writer import gate_requests

        if not gate_requests.pending():
            return False
        try:
            with gate_requests.serving() as taken:
                for base in taken:
                    if self.stopping:  # set by the signal handler meanwhile
                        break  # the jobs see the serving lock let go, and score themselves
                    self._score_store(base, lock)
        except Exception:
            faillog.record(None, "writer daemon: serving the gate's requests")
        return True

    def _score_store(self, base: str, lock: files.FileLock) -> None:
        from gitmem.base import faillog
        from gitmem.base.paths import find_repo
        from gitmem.judge import detector, safety
        from gitmem.store import index
        from gitmem.writer import gate_requests

        repo = None
        try:
            request = gate_requests.read(base)
            repo = find_repo(str(request["worktree"]))
            if (os.fspath(repo.git_dir), os.fspath(repo.common_dir)) != (request["git_dir"], request["common_dir"]):
                raise ValueError(f"{request['worktree']} is another repository from here")
            if detector.head().digest != request["head"]:
                raise ValueError("this writer's detector is not the installed one (started before an upgrade)")
            self.write(state="judging", job=f"the gate: {repo.worktree}")
            with lock:
                safety.cache_scores(repo, (e.to_dict() for e in index.stored(repo)))
            mine = self.served.get(_key(repo))
            if mine is not None:
                self.write_repo(repo, gate_requests=int(mine.get("gate_requests", 0)) + 1)
            self.write(gate_requests=int(self.info.get("gate_requests", 0)) + 1)
        except Exception:
            faillog.record(repo.state if repo else None, "writer daemon: scoring a store for the gate")
        gate_requests.answer(base)

    def judge_store_soon(self, repo: RepoPaths) -> None:
        """After a turn, have the store's gate judge what appeared in the store meanwhile without
        the writer or `gitmem add` (an entry file written into the work tree during the session):
        a detached job, which asks this writer for the scores, so no model is loaded twice."""
        from gitmem.base import faillog
        from gitmem.judge import store_gate

        try:
            if store_gate.worth_judging(repo):
                store_gate.judge_in_background(repo)
        except Exception:
            faillog.record(repo.state, "writer daemon: starting the store's gate job")

    def judge_for(self, repo: RepoPaths) -> Any:
        key = _key(repo)
        if key not in self.judges:
            if not any(self.judges.values()):
                self.write(state="loading model")
            self.judges[key] = _load(make_judge(repo))  # encoders are shared by model file
        return self.judges[key]

    def run(self) -> int:
        import signal as signals

        from gitmem.base import faillog

        for sig in (signals.SIGTERM, signals.SIGINT, signals.SIGHUP):
            signals.signal(sig, self._stop)
        self.refresh()
        self.write(state="idle", idle_timeout=self.idle_timeout())
        lock = judge_lock()
        last_work = time.monotonic()
        while not self.stopping:
            if self.upgraded():
                self.write(state="restarting: gitmem was upgraded", job=None)
                # between jobs: none is half judged; serve() execs the new writer (unless told to stop)
                return 0 if self.stopping else RESTART
            self.refresh()
            if self.serve_score_requests(lock):
                last_work = time.monotonic()
            now = time.monotonic()
            claimed = _next_claim([r for k, r in self.paths.items() if self.unloadable.get(k, 0.0) <= now],
                                  patient=True)
            if claimed is None:
                if time.monotonic() - last_work > self.idle_timeout():
                    break
                if self.info["state"] != "idle":
                    self.write(state="idle", job=None)
                time.sleep(POLL_SECONDS)
                continue
            repo, held = claimed
            try:
                judge = self.judge_for(repo)
            except Exception as exc:
                # That repository's setting, not the writer: its jobs wait (tried again later: the
                # setting may be fixed), the others go on; the job itself did not fail.
                held.release(counted=False)
                faillog.record(repo.state, "writer daemon: loading the judge")
                self.unloadable[_key(repo)] = time.monotonic() + ERROR_BACKOFF
                self.write_repo(repo, state="error", error=f"{type(exc).__name__}: {exc}")
                continue
            self.write(state="judging", job=held.job.key)
            self.write_repo(repo, state="judging", job=held.job.key)
            try:
                outcome = _judge(repo, held, judge, lock)
            except Exception:
                if repo.on_disk():  # else it was deleted while judged: nothing to tell it
                    faillog.record(repo.state, f"writer daemon: job {held.job.key}")
                continue  # released unfinished: retried, then parked in failed/
            last_work = time.monotonic()
            self.judge_store_soon(repo)
            mine = self.served[_key(repo)]
            self.write_repo(repo, state="judged", job=None, judged=mine["judged"] + 1,
                            recorded=mine["recorded"] + len(outcome.recorded),
                            quarantined=mine["quarantined"] + len(outcome.quarantined))
            self.write(state="judged", job=None, judged=self.info["judged"] + 1,
                       recorded=self.info["recorded"] + len(outcome.recorded),
                       quarantined=self.info["quarantined"] + len(outcome.quarantined))
        for repo in self.paths.values():
            self.write_repo(repo, state="stopped", job=None)
        self.write(state="stopped", job=None)
        return 0


def _configured_idle(repo: RepoPaths) -> float:
    try:
        from gitmem.store.index import current

        value = (current(repo).get("config", {}).get("writer") or {}).get("idle_timeout")
        if isinstance(value, (int, float)) and value > 0:
            return float(value)
    except Exception:
        pass
    return DEFAULT_IDLE_TIMEOUT


def serve(repo: RepoPaths | None = None, idle_timeout: float | None = None, lock_fd: int | None = None) -> int:
    """Run the machine's writer in this process until idle or stopped (registering `repo` first);
    0 at once if one already runs. When gitmem was upgraded meanwhile, the installed writer takes
    this process's place (exec), handed the writer's lock as `lock_fd`, still held, so no other
    writer starts between the two."""
    if repo is not None:
        register(repo)
    os.makedirs(machine_dir(), exist_ok=True)
    fd = lock_fd
    if fd is None:
        fd = os.open(_machine(LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
        for _ in range(40):  # a hook probing the lock holds it for microseconds
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                time.sleep(0.05)
        else:
            os.close(fd)
            return 0
    os.set_inheritable(fd, False)  # what the writer starts (git, the gate's jobs) must not hold it
    code = 1
    try:
        try:
            os.unlink(_machine(SPAWN_STAMP))
        except FileNotFoundError:
            pass
        code = _Writer(idle_timeout).run()
        if code == RESTART:
            _exec_installed(fd, idle_timeout)  # returns only when the exec failed
            code = 1
        return code
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _exec_installed(fd: int, idle_timeout: float | None) -> None:
    """Exec the installed writer in this process, handing it the writer's lock `fd` (still held)
    and no other descriptor; when that fails, say why (the caller lets go of the lock, and the
    next hook starts a writer)."""
    from gitmem.base import faillog

    try:
        os.closerange(3, fd)  # descriptors the hook that spawned this writer left open
        os.closerange(fd + 1, os.sysconf("SC_OPEN_MAX"))
        os.set_inheritable(fd, True)
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, [*_command(idle_timeout), "--lock-fd", str(fd)])
    except OSError:
        faillog.record(None, "writer daemon: starting the upgraded writer")


def main(argv: list[str] | None = None) -> int:
    import argparse

    from gitmem.base.paths import find_repo

    parser = argparse.ArgumentParser(prog="python -m gitmem.writer.daemon")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("serve", help="run the machine's writer in the foreground")
    run.add_argument("--repo", default=None, help="register this repository first")
    run.add_argument("--idle-timeout", type=float, default=None)
    run.add_argument("--lock-fd", type=int, default=None, help=argparse.SUPPRESS)  # across an upgrade's exec
    args = parser.parse_args(argv)
    return serve(find_repo(args.repo) if args.repo else None, args.idle_timeout, args.lock_fd)


if __name__ == "__main__":
    # Run the imported module's main, not this __main__ copy: one module object holds the state.
    from gitmem.writer import daemon

    sys.exit(daemon.main())

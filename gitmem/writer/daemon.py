"""The writer daemon: one resident process per repository holds the judge and drains the queue.

Client side (`is_running`, `ensure_running`, `start`, `stop`, `status`) is standard library
only: the capture hook calls `ensure_running` on every trigger. The daemon holds an
exclusive flock on `.git/gitmem/daemon.lock` for its whole life — that lock, not a pid, is
what "running" means, so a crashed daemon never looks alive — and writes its pid and
state to `.git/gitmem/daemon.json`. It loads the model once, judges one turn at a time in
priority order (across processes too: inference holds `queue/judge.lock`), keeps no
per-session state in memory, and exits after `idle_timeout` seconds without work.

`drain(repo)` does the same work in the calling process and returns when the queue is
empty (tests, CI, scripts; `gitmem drain`).
"""

from __future__ import annotations

import fcntl
import os
import sys
import time

from gitmem.base import fastjson, files, settings  # fastjson: the json module costs as much as starting Python
from gitmem.writer import queue

# The capture hook imports this module: no typing, pathlib or gitmem.base.paths at import time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from gitmem.base.paths import RepoPaths

LOCK_FILE = "daemon.lock"
STATUS_FILE = "daemon.json"
LOG_FILE = "daemon.log"
SPAWN_STAMP = "daemon.spawn"
DEFAULT_IDLE_TIMEOUT = float(settings.default("writer.idle_timeout"))
POLL_SECONDS = 0.25
SPAWN_GRACE = 15.0       # a daemon spawned this recently is still starting: do not spawn another
ERROR_BACKOFF = 300.0    # after a daemon failed to start, hooks wait this long before trying again


# -- client side (stdlib only) ---------------------------------------------------------------------

def _state(repo: Any, name: str) -> str:
    return os.path.join(os.fspath(repo.state), name)


def is_running(repo: RepoPaths) -> bool:
    """True while some process holds the daemon lock (a dead daemon holds nothing)."""
    return files.is_locked(_state(repo, LOCK_FILE))


def read_status(repo: RepoPaths) -> dict[str, Any]:
    try:
        with open(_state(repo, STATUS_FILE), encoding="utf-8") as handle:
            data = fastjson.loads(handle.read())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def ensure_running(repo: RepoPaths) -> bool:
    """Start the daemon detached unless it runs, is starting, or failed a moment ago. Never blocks."""
    if os.environ.get("GITMEM_NO_DAEMON"):
        return False
    if is_running(repo):
        return True
    now = time.time()
    last = read_status(repo)
    if last.get("state") == "error" and now - float(last.get("time") or 0) < ERROR_BACKOFF:
        return False
    stamp = _state(repo, SPAWN_STAMP)
    try:
        os.close(os.open(stamp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except FileExistsError:
        try:
            if now - os.stat(stamp).st_mtime < SPAWN_GRACE:
                return False
            os.utime(stamp)
        except FileNotFoundError:
            pass
    spawn(repo)
    return True


def spawn(repo: RepoPaths, idle_timeout: float | None = None) -> int:
    """Start `python -m gitmem.writer.daemon serve` in its own session, stdio detached; returns its pid."""
    os.makedirs(os.fspath(repo.state), exist_ok=True)
    args = [sys.executable, "-m", "gitmem.writer.daemon", "serve", "--repo", str(repo.worktree)]
    if idle_timeout is not None:
        args += ["--idle-timeout", str(idle_timeout)]
    log = _state(repo, LOG_FILE)
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    return os.posix_spawn(sys.executable, args, dict(os.environ), file_actions=actions, setsid=True)


def start(repo: RepoPaths, idle_timeout: float | None = None, wait: float = 10.0) -> dict[str, Any]:
    """Start the daemon (unless running) and wait until it holds its lock."""
    if not is_running(repo):
        pid = spawn(repo, idle_timeout)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and not is_running(repo):
            try:  # reap it if it exited at once (it is our child here)
                if os.waitpid(pid, os.WNOHANG)[0]:
                    break
            except ChildProcessError:
                break
            time.sleep(0.05)
    return status(repo)


def stop(repo: RepoPaths, timeout: float = 15.0) -> bool:
    """Ask the daemon to finish its current judgement and exit; kill it after `timeout`.

    Killing is safe: a job whose judge dies is claimed again and redone."""
    if not is_running(repo):
        return False
    import signal as signals

    pid = read_status(repo).get("pid")
    if not isinstance(pid, int) or not _is_daemon(pid):
        return False  # the status names a daemon that is gone (its pid may belong to another process now)
    try:
        os.kill(pid, signals.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not is_running(repo):
            return True
        time.sleep(0.05)
    try:
        os.kill(pid, signals.SIGKILL)
    except ProcessLookupError:
        pass
    return True


def _is_daemon(pid: int) -> bool:
    """Is `pid` a gitmem daemon? (Linux: its command line; elsewhere: assumed.)"""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return b"gitmem.writer.daemon" in handle.read()
    except FileNotFoundError:
        return not os.path.isdir("/proc/self")
    except OSError:
        return True


def status(repo: RepoPaths) -> dict[str, Any]:
    data = read_status(repo)
    running = is_running(repo)
    out: dict[str, Any] = {"running": running}
    if running or data:
        out.update({k: v for k, v in data.items() if k != "running"})
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
        lines.append(f"judged {info.get('judged', 0)} turns, recorded {info.get('recorded', 0)} entries, "
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

def judge_lock(repo: RepoPaths) -> files.FileLock:
    """One inference at a time in the repository, whichever process runs it."""
    return files.FileLock(os.path.join(queue.root(repo), "judge.lock"))


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


def drain(repo: RepoPaths, judge: Any = None, *, wait_timeout: float = 600.0,
          on_outcome: Callable[[Any], None] | None = None) -> DrainResult:
    """Judge everything queued, in this process; returns when nothing is left.

    Jobs another process is judging right now are waited for (up to `wait_timeout`). A job
    whose judgement raises is retried and, after queue.MAX_ATTEMPTS, parked in failed/;
    the errors are returned (tracebacks in .git/gitmem/errors.log)."""
    from gitmem.base import faillog
    from gitmem.writer import turn_writer

    result = DrainResult()
    lock = judge_lock(repo)
    deadline = time.monotonic() + wait_timeout
    while True:
        queue.plan(repo)
        held = queue.claim_next(repo)
        if held is None:
            if queue.pending(repo) and time.monotonic() < deadline:
                time.sleep(0.1)  # held by another process: wait for it to finish or die
                continue
            return result
        with held:
            if judge is None:
                judge = _load(make_judge(repo))  # a model that cannot load is an error to report
            try:
                outcome = turn_writer.process(repo, held.job, judge, lock)
            except Exception as exc:
                faillog.record(repo.state, f"gitmem drain: job {held.job.key}")
                result.errors.append(f"{held.job.key} (attempt {held.attempt}): {type(exc).__name__}: {exc}")
                continue
            held.finish()
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


class _Daemon:
    def __init__(self, repo: RepoPaths, idle_timeout: float) -> None:
        self.repo = repo
        self.idle_timeout = idle_timeout
        self.stopping = False
        self.info: dict[str, Any] = {"pid": os.getpid(), "started": time.time(), "state": "starting",
                                     "repo": str(repo.worktree), "idle_timeout": idle_timeout,
                                     "judged": 0, "recorded": 0, "quarantined": 0, "job": None}

    def write(self, **changes: Any) -> None:

        self.info.update(changes)
        rss, peak = _rss()
        self.info.update(rss_kib=rss, peak_rss_kib=peak, time=time.time())
        fastjson.write_file(str(self.repo.state / STATUS_FILE), self.info)

    def _stop(self, signum: int, frame: Any) -> None:
        self.stopping = True

    def run(self) -> int:
        import signal as signals

        from gitmem.base import faillog
        from gitmem.writer import turn_writer

        for sig in (signals.SIGTERM, signals.SIGINT, signals.SIGHUP):
            signals.signal(sig, self._stop)
        self.write()
        judge = None
        lock = judge_lock(self.repo)
        last_work = time.monotonic()
        while not self.stopping:
            if not os.path.isdir(os.fspath(self.repo.state)):
                return 0  # the repository is gone (a deleted scratch or test repository)
            queue.plan(self.repo)
            if not queue.pending(self.repo):
                if time.monotonic() - last_work > self.idle_timeout:
                    break
                if self.info["state"] != "idle":
                    self.write(state="idle", job=None)
                time.sleep(POLL_SECONDS)
                continue
            if judge is None:
                self.write(state="loading model")
                try:
                    judge = _load(make_judge(self.repo))
                except Exception as exc:
                    faillog.record(self.repo.state, "writer daemon: loading the judge")
                    self.write(state="error", error=f"{type(exc).__name__}: {exc}")
                    return 1
            held = queue.claim_next(self.repo)
            if held is None:
                time.sleep(POLL_SECONDS)
                continue
            with held:
                self.write(state="judging", job=held.job.key)
                try:
                    outcome = turn_writer.process(self.repo, held.job, judge, lock)
                except Exception:
                    faillog.record(self.repo.state, f"writer daemon: job {held.job.key}")
                    continue  # released unfinished: retried, then parked in failed/
                held.finish()
            last_work = time.monotonic()
            self.write(state="judged", job=None, judged=self.info["judged"] + 1,
                       recorded=self.info["recorded"] + len(outcome.recorded),
                       quarantined=self.info["quarantined"] + len(outcome.quarantined))
        self.write(state="stopped", job=None)
        return 0


def _idle_timeout(repo: RepoPaths, explicit: float | None) -> float:
    if explicit is not None:
        return explicit
    env = os.environ.get("GITMEM_DAEMON_IDLE")
    if env:
        try:
            return float(env)
        except ValueError:
            pass
    try:
        from gitmem.store.index import current

        value = (current(repo).get("config", {}).get("writer") or {}).get("idle_timeout")
        if isinstance(value, (int, float)) and value > 0:
            return float(value)
    except Exception:
        pass
    return DEFAULT_IDLE_TIMEOUT


def serve(repo: RepoPaths, idle_timeout: float | None = None) -> int:
    """Run the daemon in this process until idle or stopped; 0 at once if one already runs."""
    repo.state.mkdir(parents=True, exist_ok=True)
    fd = os.open(_state(repo, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
    for _ in range(40):  # a hook probing the lock holds it for microseconds
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError:
            time.sleep(0.05)
    else:
        os.close(fd)
        return 0
    try:
        try:
            os.unlink(_state(repo, SPAWN_STAMP))
        except FileNotFoundError:
            pass
        queue.prune(repo)
        return _Daemon(repo, _idle_timeout(repo, idle_timeout)).run()
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def main(argv: list[str] | None = None) -> int:
    import argparse

    from gitmem.base.paths import find_repo

    parser = argparse.ArgumentParser(prog="python -m gitmem.writer.daemon")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("serve", help="run the writer daemon in the foreground")
    run.add_argument("--repo", default=None)
    run.add_argument("--idle-timeout", type=float, default=None)
    args = parser.parse_args(argv)
    return serve(find_repo(args.repo), args.idle_timeout)


if __name__ == "__main__":
    # Run the imported module's main, not this __main__ copy: one module object holds the state.
    from gitmem.writer import daemon

    sys.exit(daemon.main())

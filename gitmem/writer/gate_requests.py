"""The store gate's job asks the machine's writer to score a store with the model it holds.

Entries a pull brings in are judged by a detached job (gitmem.judge.store_gate) that holds the
gate's lock while it runs. Where a writer runs, the job writes a request into the writer's state
folder (`gate/<pid>-<nonce>.json`) and waits; the writer takes every request present at once
(renaming each to `.taken`) while holding `gate/serving.lock`, scores each store's entries into
that store's score cache, and answers (`.done`). The writer only scores, so an answer that comes
late changes no verdict: the job, under its lock, then records the verdicts from the cache and
loads no model for what the writer scored. The job stops waiting, and scores what is missing
itself, when no writer runs, none takes the request in time, the one that took it is gone (its
serving lock let go without an answer) or it does not answer in time. Each side removes what is
its own; the writer prunes what jobs that died left.

Standard library only: the job asks this before deciding whether to load a model.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from gitmem.base import fastjson, files
from gitmem.writer import machine

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gitmem.base.paths import RepoPaths

FOLDER = "gate"
SERVING = "serving.lock"
PICKUP_S = 30.0  # a request the writer has not taken by then is withdrawn
ANSWER_S = 300.0  # nor answered by then, once taken (a store of ~2,000 new entries)
PRUNE_S = 3600.0  # request files this old were left by jobs that died (a job ends itself after 900 s)
POLL_S = 0.05
CAPABLE = "scores_for_gate"  # in the writer's status: it serves these requests (an older writer never answers)


def folder() -> str:
    return machine.path(FOLDER)


def request_scores(repo: RepoPaths, head: str, pickup: float | None = None, answer: float | None = None) -> bool:
    """Have the running writer score `repo`'s stored entries into the store's score cache, if its
    detector is `head` (by digest: a writer started before an upgrade scores nothing). Whether it
    answered; False when none runs that serves requests, none took the request within `pickup`
    seconds, or the one that took it is gone or did not answer within `answer` seconds."""
    if not machine.is_running() or not machine.writer_status().get(CAPABLE):
        return False
    here = folder()
    base = os.path.join(here, f"{os.getpid()}-{os.urandom(4).hex()}")
    request, done = base + ".json", base + ".done"
    try:
        os.makedirs(here, exist_ok=True)
        fastjson.write_file(request, {"worktree": os.fspath(repo.worktree), "git_dir": os.fspath(repo.git_dir),
                                      "common_dir": os.fspath(repo.common_dir), "head": head})
        pickup_by = time.monotonic() + (PICKUP_S if pickup is None else pickup)
        answer_by: float | None = None
        while not os.path.exists(done):
            now = time.monotonic()
            if os.path.exists(request):  # not taken yet
                if not machine.is_running() or now > pickup_by:
                    try:
                        os.unlink(request)  # withdrawn, unless the writer takes it this instant
                        return False
                    except FileNotFoundError:
                        continue
            else:
                answer_by = answer_by or now + (ANSWER_S if answer is None else answer)
                if not files.is_locked(os.path.join(here, SERVING)):
                    return os.path.exists(done)  # the writer that took it is gone (or has just answered)
                if now > answer_by:
                    return False
            time.sleep(POLL_S)
        return True
    except OSError:
        return False  # no state folder to ask through: the job scores itself
    finally:
        for leftover in (request, base + ".taken", done):
            _discard(leftover)


# -- the writer's side -----------------------------------------------------------------------------

def pending() -> bool:
    try:
        return any(n.endswith(".json") for n in os.listdir(folder()))
    except OSError:
        return False


@contextmanager
def serving() -> Iterator[list[str]]:
    """Take every request present, holding the serving lock (the jobs' sign that the writer that
    took theirs lives) until the block ends; yields their names for `read` and `answer`."""
    here = folder()
    with files.FileLock(os.path.join(here, SERVING)):
        taken = []
        for name in sorted(os.listdir(here)):
            if name.endswith(".json"):
                base = os.path.join(here, name[: -len(".json")])
                try:
                    os.rename(base + ".json", base + ".taken")
                    taken.append(base)
                except OSError:
                    continue  # withdrawn
        yield taken
    _prune(here)


def read(base: str) -> dict[str, Any]:
    return machine.read(base + ".taken")


def answer(base: str) -> None:
    if os.path.exists(base + ".taken"):  # the job still waits
        fastjson.write_file(base + ".done", {})
        _discard(base + ".taken")


def _prune(here: str) -> None:
    cutoff = time.time() - PRUNE_S
    for name in os.listdir(here):
        try:
            if name != SERVING and os.stat(os.path.join(here, name)).st_mtime < cutoff:
                os.unlink(os.path.join(here, name))
        except OSError:
            pass


def _discard(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass

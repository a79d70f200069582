"""The writer working through a long backlog: what finding the next job costs per claim.

The writer looks at its queue before every claim (a Stop that arrives mid-backlog is judged
first). Each look lists the ready jobs and orders them; a job file is written once and never
changed, so a look reads only the files it has not read before. This builds a queue of N ready
jobs (turns of realistic length) in a scratch repository, times the first look (every file read,
which is what each look cost before) against the looks after it, and claims and finishes jobs
the way the writer does, to show the per-claim cost once the backlog is known.

    python bench/queue_backlog.py [--jobs 2000,10000] [--rounds 5]

Target: a look at a known backlog costs at most a fifth of reading it (ratio <= 0.2).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitmem.base.paths import RepoPaths
from gitmem.writer import queue


def backlog(root: Path, jobs: int) -> RepoPaths:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    repo = RepoPaths(root, root / ".git", root / ".git")
    dirs = queue._dirs(repo)
    for folder in dirs.values():
        os.makedirs(folder, exist_ok=True)
    now = time.time()
    for turn in range(jobs):
        job = queue.Job(f"session-{turn % 7}", turn, str(root / "t.jsonl"), enqueued=now + turn,
                        user="Please refactor the billing module. " * 12, assistant="Done: " + "x" * 900)
        queue._write_new(os.path.join(dirs["ready"], f"{job.key}.json"), job.to_dict())
    return repo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", default="2000,10000")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    for jobs in (int(n) for n in args.jobs.split(",")):
        with tempfile.TemporaryDirectory() as folder:
            repo = backlog(Path(folder) / "repo", jobs)
            queue._READ.clear()
            t0 = time.perf_counter()
            queue.pending(repo)
            cold = time.perf_counter() - t0
            looks, claims = [], []
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                queue.pending(repo)
                looks.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                held = queue.claim_next(repo)
                assert held is not None
                held.finish()
                held.release()
                claims.append(time.perf_counter() - t0)
            look = statistics.median(looks)
            ratio = look / cold
            print(f"{jobs} ready jobs: reading them all {1000 * cold:.1f} ms (before: every look), a later look "
                  f"{1000 * look:.1f} ms, a claim {1000 * statistics.median(claims):.1f} ms; ratio {ratio:.2f} "
                  f"({'met' if ratio <= 0.2 else 'NOT met'}: <= 0.2)")


if __name__ == "__main__":
    main()

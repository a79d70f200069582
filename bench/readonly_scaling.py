"""How the agent's read-only gate scales with the length of a shell command.

The gate (gitmem.hook.readonly) reads every command the agent runs, within the PreToolUse hook's
timeout: its time must grow linearly with the command. Times `denial()` on commands of N words
(`rm f0 … fN` and `echo a … a; rm -rf .gitmem`, in a real repository holding .gitmem/) and prints
the time per word at each size as a ratio to the smallest size, measured in the same run.
Target: ratio <= 2 at 16x the words (a quadratic reading would be about 16).

    python bench/readonly_scaling.py [--base 1000] [--steps 3]
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

from gitmem.hook.readonly import denial

TARGET = 2.0


def best_of(runs: int, command: str, repo: str) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        denial("Bash", {"command": command}, repo, repo, (f"{repo}/.git",))
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=3, help="sizes: base, 4*base, 16*base, ...")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        subprocess.run(["git", "init", "-q", work], check=True)
        (Path(work) / ".gitmem" / "entries").mkdir(parents=True)
        shapes = {"rm f0 … fN": lambda n: "rm " + " ".join(f"f{k}" for k in range(n)),
                  "echo a … a; rm -rf .gitmem": lambda n: "echo " + " ".join(["a"] * n) + "; rm -rf .gitmem"}
        worst = 0.0
        for name, make in shapes.items():
            base_per_word = None
            for step in range(args.steps):
                n = args.base * 4 ** step
                seconds = best_of(3, make(n), work)
                per_word = seconds / n
                base_per_word = base_per_word or per_word
                ratio = per_word / base_per_word
                worst = max(worst, ratio)
                print(f"{name:<28} {n:>7} words  {seconds * 1000:8.1f} ms  per word x{ratio:.2f}")
        print(f"worst ratio {worst:.2f} (target <= {TARGET}): {'met' if worst <= TARGET else 'NOT MET'}")
        return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Commit overhead of gitmem's git hooks on a real codebase, beside the pre-commit framework.

Builds three identical repositories from Django's source (fetched with `pip download` at run
time; nothing of it is committed here): one plain, one with `gitmem init` and a store of
anchored entries, one with the pre-commit framework (`pip install pre-commit`, the `bench`
extra) running a single no-op hook. Replays the same series of realistic commits (10 files
each) in all three, interleaved so machine noise hits them alike, and prints the median commit
time of each, overall and for the commits that touch a file an entry is anchored to. Then it
switches branches in the plain and the gitmem repository: to a branch that changes code only,
and to one that adds two hand-written entries (the gate judges those in the background once).
Targets: ratio <= 1.3 and < 100 ms added per 10-file commit; a commit touching an anchored
file costs less than half of what the framework's one no-op hook costs.

    python bench/commit_overhead.py [--commits 30] [--entries 60]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

PACKAGE = "django<5.3"


def sh(*args: str, cwd: Path, env: dict[str, str]) -> str:
    return subprocess.run(args, cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def fetch_source(work: Path, env: dict[str, str]) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                    "-d", str(work / "dl"), PACKAGE], check=True, env=env)
    archive = next((work / "dl").glob("*.tar.gz"))
    with tarfile.open(archive) as tar:
        tar.extractall(work / "src", filter="data")
    return next((work / "src").iterdir())


def make_repo(source: Path, dest: Path, env: dict[str, str]) -> None:
    shutil.copytree(source, dest)
    sh("git", "init", "-q", "-b", "main", cwd=dest, env=env)
    sh("git", "add", "-A", cwd=dest, env=env)
    sh("git", "commit", "-q", "-m", "import", cwd=dest, env=env)


def seed_entries(repo: Path, files: list[str], count: int, env: dict[str, str], rng: random.Random) -> list[str]:
    """Anchor `count` entries to real declarations; returns the anchored files."""
    from gitmem.code.anchors import declarations

    anchored: list[str] = []
    gitmem = [sys.executable, "-m", "gitmem.cli"]
    for path in rng.sample(files, len(files)):
        if len(anchored) >= count:
            break
        decls = [d for d in declarations((repo / path).read_bytes(), "python") if d.kind in ("function", "method")]
        if not decls:
            continue
        decl = rng.choice(decls)
        subprocess.run([*gitmem, "add", "hazard", f"careful with {decl.name}", "--anchor", f"{path}::{decl.name}"],
                       cwd=repo, env=env, check=True, capture_output=True)
        anchored.append(path)
    for i in range(10):
        subprocess.run([*gitmem, "add", "law", f"repository rule {i}"], cwd=repo, env=env, check=True,
                       capture_output=True)
    return anchored


PRE_COMMIT_CONFIG = """\
repos:
  - repo: local
    hooks:
      - id: noop
        name: no-op
        entry: "true"
        language: system
        pass_filenames: false
"""


def pre_commit_framework(env: dict[str, str]) -> list[str] | None:
    """The pre-commit framework's command line, or None when it is not installed."""
    import shutil

    here = Path(sys.executable).parent / "pre-commit"
    found = str(here) if here.exists() else shutil.which("pre-commit", path=env.get("PATH"))
    return [found] if found else None


def install_framework(repo: Path, command: list[str], env: dict[str, str]) -> None:
    (repo / ".pre-commit-config.yaml").write_text(PRE_COMMIT_CONFIG, encoding="utf-8")
    sh("git", "add", ".pre-commit-config.yaml", cwd=repo, env=env)
    sh("git", "commit", "-q", "--no-verify", "-m", "pre-commit framework", cwd=repo, env=env)
    subprocess.run([*command, "install"], cwd=repo, env=env, check=True, capture_output=True)


def edit(repo: Path, path: str, n: int) -> None:
    """A realistic small edit: a comment line appended inside the file."""
    with open(repo / path, "a", encoding="utf-8") as handle:
        handle.write(f"\n# bench edit {n}\n")


def timed_commit(repo: Path, files: list[str], n: int, env: dict[str, str]) -> float:
    for path in files:
        edit(repo, path, n)
    sh("git", "add", "--", *files, cwd=repo, env=env)
    start = time.perf_counter()
    sh("git", "commit", "-q", "-m", f"change {n}", cwd=repo, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=30)
    parser.add_argument("--entries", type=int, default=60)
    parser.add_argument("--checkouts", type=int, default=10, help="rounds of switching to a branch and back")
    parser.add_argument("--anchored-share", type=float, default=0.2,
                        help="share of commits that touch a file an entry is anchored to")
    args = parser.parse_args()
    rng = random.Random(7)

    with tempfile.TemporaryDirectory(prefix="gitmem-bench-") as tmp:
        work = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(HOME=str(work), GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="b@x",
                   GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="b@x")
        env["PRE_COMMIT_HOME"] = str(work / "pre-commit-cache")
        source = fetch_source(work, env)
        plain, with_hooks, framework = work / "plain", work / "gitmem", work / "framework"
        make_repo(source, plain, env)
        make_repo(source, with_hooks, env)
        files = sorted(sh("git", "ls-files", "*.py", cwd=plain, env=env).split())
        print(f"codebase: {source.name}, {len(files)} Python files "
              f"({len(sh('git', 'ls-files', cwd=plain, env=env).split())} files in all)")
        repos = [("plain", plain), ("gitmem", with_hooks)]
        command = pre_commit_framework(env)
        if command is None:
            print("pre-commit framework: not installed (pip install pre-commit, or the bench extra): "
                  "its column is left out")
        else:
            make_repo(source, framework, env)
            install_framework(framework, command, env)
            repos.append(("pre-commit", framework))

        subprocess.run([sys.executable, "-m", "gitmem.cli", "init"], cwd=with_hooks, env=env, check=True,
                       capture_output=True)
        sh("git", "add", "-A", cwd=with_hooks, env=env)
        sh("git", "commit", "-q", "-m", "gitmem init", cwd=with_hooks, env=env)
        anchored = seed_entries(with_hooks, files, args.entries, env, rng)
        unanchored = [f for f in files if f not in set(anchored)]
        print(f"store: {args.entries + 10} entries, {len(set(anchored))} anchored files")

        times: dict[str, list[float]] = {name: [] for name, _ in repos}
        slow: dict[str, list[float]] = {name: [] for name, _ in repos}
        for n in range(args.commits):
            touches_anchor = n < args.commits * args.anchored_share
            batch = rng.sample(unanchored, 10 - touches_anchor)
            if touches_anchor:
                batch.append(rng.choice(anchored))
            order = list(repos)
            rng.shuffle(order)
            for name, repo in order:
                took = timed_commit(repo, batch, n, env)
                times[name].append(took)
                if touches_anchor:
                    slow[name].append(took)

        med = {name: statistics.median(t) for name, t in times.items()}
        base = med["plain"]
        print(f"commits: {args.commits} x 10 files, {len(slow['plain'])} of them touching an anchored file")
        print(f"median commit, no hooks:            {base * 1000:7.1f} ms")
        print(f"median commit, gitmem hooks:        {med['gitmem'] * 1000:7.1f} ms  "
              f"(+{(med['gitmem'] - base) * 1000:.1f} ms, ratio {med['gitmem'] / base:.2f}; "
              f"targets <= 1.3 and < 100 ms)")
        if "pre-commit" in med:
            print(f"median commit, pre-commit (no-op):  {med['pre-commit'] * 1000:7.1f} ms  "
                  f"(+{(med['pre-commit'] - base) * 1000:.1f} ms)")
        if slow["plain"]:
            slow_med = {name: statistics.median(t) for name, t in slow.items()}
            added = slow_med["gitmem"] - slow_med["plain"]
            print(f"commits touching an anchored file: no hooks {slow_med['plain'] * 1000:.1f} ms, "
                  f"gitmem {slow_med['gitmem'] * 1000:.1f} ms (+{added * 1000:.1f} ms)", end="")
            if "pre-commit" in slow_med:
                framework_added = slow_med["pre-commit"] - slow_med["plain"]
                print(f", pre-commit {slow_med['pre-commit'] * 1000:.1f} ms (+{framework_added * 1000:.1f} ms); "
                      f"gitmem's cost is {added / framework_added:.2f}x the framework's (target < 0.5)")
            else:
                print()
        checkout_overhead([(name, repo) for name, repo in repos if name != "pre-commit"], unanchored,
                          args.checkouts, env, rng)


TEAMMATE_ENTRY = """id: {id}
kind: law
status: active
source: user
body: "{body}"
anchor:
triggers: []
created:
  at: '2026-01-01T00:00:00Z'
  session:
  turn:
supersedes: []
superseded_by:
expires:
"""


def gate_settled(repo: Path) -> None:
    """Wait (untimed) until the gate's background job has judged what the checkout brought in; a job
    that never finishes stops the benchmark rather than being timed as a fast switch."""
    from gitmem.base.files import is_locked
    from gitmem.base.paths import find_repo
    from gitmem.judge import store_gate

    paths = find_repo(str(repo))
    deadline = time.monotonic() + 300
    while store_gate.unjudged(paths) or is_locked(paths.worktree_state / store_gate.GATE_LOCK):
        if time.monotonic() > deadline:
            raise SystemExit(f"the gate's background job did not judge {repo}'s entries in 300 s "
                             f"(its log: {paths.state / 'errors.log'})")
        time.sleep(0.2)


def checkout_overhead(repos: list[tuple[str, Path]], files: list[str], rounds: int, env: dict[str, str],
                      rng: random.Random) -> None:
    """Switching branches: post-checkout exits in shell unless the entries differ; then Python
    starts and, for entries not judged on this machine, the gate's detached job."""
    code_change = rng.sample(files, 10)
    for _, repo in repos:
        sh("git", "checkout", "-q", "-b", "code", "main", cwd=repo, env=env)
        for path in code_change:
            edit(repo, path, -1)
        sh("git", "commit", "-qam", "a code change", cwd=repo, env=env)
        sh("git", "checkout", "-q", "-b", "teammate", "main", cwd=repo, env=env)
        for i, body in enumerate(("Run make fmt before pushing.", "Keep migrations reversible.")):
            entry_id = f"20260103-0000000{i}"
            (repo / ".gitmem" / "entries").mkdir(parents=True, exist_ok=True)
            (repo / ".gitmem" / "entries" / f"{entry_id}.yaml").write_text(
                TEAMMATE_ENTRY.format(id=entry_id, body=body), encoding="utf-8")
        sh("git", "add", "-A", cwd=repo, env=env)
        sh("git", "commit", "-q", "--no-verify", "-m", "two rules by hand", cwd=repo, env=env)
        sh("git", "checkout", "-q", "main", cwd=repo, env=env)
    for branch, what in (("code", "10 code files differ"), ("teammate", "two hand-written entries differ")):
        times: dict[str, list[float]] = {name: [] for name, _ in repos}
        for _ in range(rounds):
            order = list(repos)
            rng.shuffle(order)
            for name, repo in order:
                for target in (branch, "main"):
                    start = time.perf_counter()
                    sh("git", "checkout", "-q", target, cwd=repo, env=env)
                    times[name].append(time.perf_counter() - start)
                    if name == "gitmem":
                        gate_settled(repo)
        med = {name: statistics.median(t) for name, t in times.items()}
        print(f"checkout ({what}), median of {2 * rounds}: no hooks {med['plain'] * 1000:.1f} ms, gitmem "
              f"{med['gitmem'] * 1000:.1f} ms (+{(med['gitmem'] - med['plain']) * 1000:.1f} ms, "
              f"ratio {med['gitmem'] / med['plain']:.2f})")


if __name__ == "__main__":
    main()

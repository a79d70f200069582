"""Many sessions at once, the daemon killed twice: every turn judged, every entry committed once.

20 sessions × 10 turns are played by 20 parallel processes through the capture hook (which
starts the daemon on demand); the test kills the daemon with SIGKILL twice while it is
judging. The stand-in judge is used: what is under test is the queue, not the judgement.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

from test_capture_helpers import judged, subprocess_env

from gitmem.base.paths import find_repo
from gitmem.writer import daemon, queue

SESSIONS = 20
TURNS = 10

PLAYER = r"""
import json, os, random, sys, time
from pathlib import Path
from gitmem.hook.capture import handle
from gitmem.base.paths import find_repo
from test_capture_helpers import Transcript, edit_payload, payload

root, index, turns, folder = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
repo = find_repo(root)
session = f"c0ffee00-0000-4000-8000-{index:012d}"
tp = folder / f"{session}.jsonl"
t = Transcript(tp, session, root)
rng = random.Random(index)
for turn in range(turns):
    text = f"Session {index} turn {turn}: please tidy module_{index}_{turn}"
    if turn % 2 == 0:
        text += f". Always keep module_{index}_{turn} free of global state."
    if rng.random() < 0.5:   # both orders of "prompt written" and "hook fired" occur
        t.prompt(text); handle(repo, payload("UserPromptSubmit", session, tp, root, prompt=text))
    else:
        handle(repo, payload("UserPromptSubmit", session, tp, root, prompt=text)); t.prompt(text)
    time.sleep(0.005)
    t.tool("Edit", {"file_path": str(root / "src" / f"m{index}.py")}, "ok")
    handle(repo, edit_payload(session, tp, root, root / "src" / f"m{index}.py"))
    t.say(f"Tidied module_{index}_{turn}.")
    if rng.random() < 0.7:   # an interrupted turn gets no Stop
        handle(repo, payload("Stop", session, tp, root))
    time.sleep(rng.random() * 0.05)
handle(repo, payload("SessionEnd", session, tp, root))
"""


def _kill_while_judging(paths, timeout: float = 120.0) -> int:
    """SIGKILL the running daemon at a moment its status says it is judging; returns its pid."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = daemon.read_status(paths)
        if daemon.is_running(paths) and info.get("state") == "judging" and isinstance(info.get("pid"), int):
            os.kill(info["pid"], signal.SIGKILL)
            return info["pid"]
        time.sleep(0.01)
    raise AssertionError("the daemon was never seen judging")


def test_twenty_sessions_daemon_killed_twice(repo, tmp_path, monkeypatch):
    for i in range(SESSIONS):
        repo.write(f"src/m{i}.py", f"def f{i}():\n    return {i}\n")
    repo.commit_all("initial")
    repo.gitmem("init")
    repo.commit_all("gitmem init")
    paths = find_repo(repo.path)
    log = tmp_path / "judged.jsonl"
    env = subprocess_env(GITMEM_TEST_JUDGE="keyword", KEYWORD_JUDGE_LOG=str(log),
                         KEYWORD_JUDGE_DELAY="0.03", GITMEM_DAEMON_IDLE="5")
    env.pop("GITMEM_NO_DAEMON", None)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("GITMEM_NO_DAEMON", raising=False)
    folder = tmp_path / "transcripts"
    folder.mkdir()

    players = [subprocess.Popen([sys.executable, "-c", PLAYER, str(repo.path), str(i), str(TURNS), str(folder)],
                                env=env) for i in range(SESSIONS)]
    killed = []
    try:
        killed.append(_kill_while_judging(paths))
        # The next hook call notices the daemon is gone and starts another; kill that one too.
        deadline = time.monotonic() + 60
        while not (daemon.is_running(paths) and daemon.read_status(paths).get("pid") not in killed):
            if all(p.poll() is not None for p in players) and not daemon.is_running(paths):
                daemon.start(paths)  # every player finished before restarting it: restart by hand
            assert time.monotonic() < deadline, "no daemon came back after the first kill"
            time.sleep(0.02)
        killed.append(_kill_while_judging(paths))
    finally:
        codes = [p.wait(timeout=300) for p in players]
    assert codes == [0] * SESSIONS
    assert len(set(killed)) == 2

    # Restart and let the queue empty; `gitmem drain` works alongside any daemon the hooks started.
    daemon.start(paths)
    out = repo.gitmem("drain").stdout
    deadline = time.monotonic() + 300
    while any(queue.counts(paths)[k] for k in ("signals", "ready", "judging")):
        assert time.monotonic() < deadline, queue.counts(paths)
        time.sleep(0.1)
    daemon.stop(paths)

    # Every turn judged; a turn is judged again only when a kill interrupted it after judgement.
    seen = Counter((r["session"], r["turn"]) for r in judged(log))
    expected = {(f"c0ffee00-0000-4000-8000-{i:012d}", t) for i in range(SESSIONS) for t in range(TURNS)}
    assert set(seen) == expected, out
    assert sum(seen.values()) - len(expected) <= len(killed)

    # Every rule recorded exactly once, each in its own commit, attributed to its turn.
    entries = list(repo.entries().values())
    made = Counter(e["body"] for e in entries)
    want = {f"Always keep module_{i}_{t} free of global state." for i in range(SESSIONS) for t in range(0, TURNS, 2)}
    assert set(made) == want
    assert max(made.values()) == 1
    trailers = repo.git("log", "--format=%(trailers:key=Gitmem-Session,valueonly)", "--", ".gitmem/entries")
    sessions = Counter(line for line in trailers.splitlines() if line.strip())
    assert len(sessions) == len(want) and max(sessions.values()) == 1
    for entry in entries:
        raw = (repo.path / ".gitmem" / "entries" / f"{entry['id']}.yaml").read_text()
        index, turn = json.loads("[" + entry["body"].split("module_")[1].split(" ")[0].replace("_", ",") + "]")
        assert f"turn: {turn}" in raw and f"{index:012d}" in raw
    assert repo.git("fsck", "--no-progress", "--strict").strip() == ""
    assert repo.git("status", "--porcelain").strip() == ""
    assert queue.counts(paths) == {"signals": 0, "ready": 0, "judging": 0, "failed": 0}

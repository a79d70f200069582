"""The capture path: hooks → durable queue → writer, with a stand-in judge.

The judge here is tests/test_capture_helpers.KeywordJudge (every "always"/"never" sentence is
a law): these tests are about what reaches the judge, when, how often, and what happens to
its output — not about the judgement. The real model runs in test_capture_e2e.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_capture_helpers import (
    KeywordJudge,
    Transcript,
    dispatcher_available,
    edit_payload,
    judged,
    payload,
    run_hook,
    subprocess_env,
    wait_until,
)

from gitmem.base.paths import find_repo
from gitmem.errors import GitmemError
from gitmem.hook import capture as capture_hook
from gitmem.writer import daemon, edit_log, queue

SESSION = "8a1c2f00-5b1e-4c3d-9e7f-0123456789ab"
OTHER = "f00dcafe-0000-4000-8000-000000000001"


@pytest.fixture(autouse=True)
def no_daemon(monkeypatch, tmp_path):
    """Hooks must not start background daemons unless a test asks for one."""
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    monkeypatch.setenv("GITMEM_TEST_JUDGE", "keyword")  # subprocesses: see tests/sitecustomize.py
    monkeypatch.setattr(daemon, "make_judge", KeywordJudge)
    monkeypatch.setenv("KEYWORD_JUDGE_LOG", str(tmp_path / "judged.jsonl"))
    monkeypatch.setenv("PYTHONPATH", subprocess_env()["PYTHONPATH"])  # subprocesses find the stand-in


@pytest.fixture
def project(repo):
    return repo.with_gitmem({"src/billing.py": "def charge(amount):\n    return amount\n",
                             "src/util.py": "def helper():\n    return 1\n",
                             "notebooks/explore.ipynb": "{}\n"})


@pytest.fixture
def paths(project):
    return find_repo(project.path)


def _log(tmp_path: Path) -> list[dict]:
    return judged(tmp_path / "judged.jsonl")


def _hook(paths, data) -> None:
    capture_hook.handle(paths, data)


def _ready_keys(paths) -> list[str]:
    return [j.key for j in queue.pending(paths)]


def test_prompt_enqueues_the_previous_turn_not_the_one_starting(paths, project, tmp_path):
    tp = tmp_path / "s.jsonl"
    t = Transcript(tp, SESSION, project.path)
    t.snapshot()
    first = "Rename helper() to make_helper(). Also never import from src.legacy."
    t.prompt(first)
    _hook(paths, payload("UserPromptSubmit", SESSION, tp, project.path, prompt=first))
    assert queue.plan(paths) == 0 and queue.watermark(paths, SESSION) == 0  # turn 0 is just starting
    t.say("Renamed it in two places.")
    # The next prompt: the hook may fire before the prompt is in the transcript...
    second = "thanks, looks good"
    _hook(paths, payload("UserPromptSubmit", SESSION, tp, project.path, prompt=second))
    assert queue.plan(paths) == 1
    assert _ready_keys(paths) == [f"{SESSION}.0"]
    assert queue.watermark(paths, SESSION) == 1
    # ...or after it (both orders happen): turn 1 is the one starting either way.
    t.prompt(second)
    _hook(paths, payload("UserPromptSubmit", SESSION, tp, project.path, prompt=second))
    assert queue.plan(paths) == 0
    assert queue.watermark(paths, SESSION) == 1
    assert [j.priority for j in queue.pending(paths)] == [queue.PRIORITY_PROMPT]


def test_stop_enqueues_the_final_turn(paths, project, tmp_path):
    tp = tmp_path / "s.jsonl"
    t = Transcript(tp, SESSION, project.path)
    t.prompt("Always run the linter before committing.")
    t.say("OK.")
    _hook(paths, payload("Stop", SESSION, tp, project.path))
    assert queue.plan(paths) == 1
    job = queue.pending(paths)[0]
    assert (job.turn, job.priority, job.event, job.transcript) == (0, queue.PRIORITY_FINAL, "Stop", str(tp))
    # SessionEnd later: nothing new to judge, nothing enqueued twice.
    _hook(paths, payload("SessionEnd", SESSION, tp, project.path))
    assert queue.plan(paths) == 0
    assert len(queue.pending(paths)) == 1


def test_interrupted_turn_is_judged_when_the_next_prompt_arrives(paths, project, tmp_path):
    tp = tmp_path / "s.jsonl"
    t = Transcript(tp, SESSION, project.path)
    t.prompt("Start the dev server. Never bind it to 0.0.0.0.")
    t.tool("Bash", {"command": "npm run dev"}, "listening on :3000")
    t.record(t._envelope("user", message={"role": "user", "content": [
        {"type": "text", "text": "[Request interrupted by user for tool use]"}]}))
    # No Stop fires after an interrupt; the next prompt completes turn 0.
    time.sleep(0.01)
    nxt = "use port 4000 instead"
    _hook(paths, payload("UserPromptSubmit", SESSION, tp, project.path, prompt=nxt))
    assert queue.plan(paths) == 1 and _ready_keys(paths) == [f"{SESSION}.0"]


def test_each_turn_is_judged_once_however_often_it_is_signalled(paths, project, tmp_path):
    tp = tmp_path / "s.jsonl"
    t = Transcript(tp, SESSION, project.path)
    for i in range(3):
        t.prompt(f"step {i}: always keep the changelog sorted (rule {i}).")
        t.say(f"done {i}")
        for _ in range(3):
            _hook(paths, payload("Stop", SESSION, tp, project.path))
        queue.plan(paths)
        queue.plan(paths)
    _hook(paths, payload("SessionEnd", SESSION, tp, project.path))
    first = daemon.drain(paths)
    second = daemon.drain(paths)
    assert [(o.job.turn, len(o.recorded)) for o in first.outcomes] == [(0, 1), (1, 1), (2, 1)]
    assert second.outcomes == []
    assert sorted(r["turn"] for r in _log(tmp_path)) == [0, 1, 2]
    assert queue.counts(paths) == {"signals": 0, "ready": 0, "judging": 0, "failed": 0}


def test_the_judge_sees_only_the_visible_text_of_the_turn(paths, project, tmp_path):
    """Every row type of a real transcript; only the typed prompt and the reply text reach the judge."""
    tp = tmp_path / "s.jsonl"
    t = Transcript(tp, SESSION, project.path)
    t.summary("Billing refactor")
    t.snapshot()
    t.hook_context("[gitmem] law: never deploy on Fridays (20260101-aaaaaaaa)", event="SessionStart")
    t.slash_command("model", "sonnet", "Set model to sonnet")
    typed = "Can you add retries to charge()? Always pass an idempotency key to the payments API."
    t.prompt(typed)
    t.hook_context("[gitmem] hazard: never call charge() twice for one order (20260101-bbbbbbbb)")
    t.meta("<system-reminder>\nThe user always wants short answers; never mention this.\n</system-reminder>")
    t.thinking("The user always wants retries; never forget the key.")
    t.say("I'll look at the billing module first.")
    t.tool("Read", {"file_path": str(project.path / "src/billing.py")},
           "def charge(amount):\n    # never retry without a key\n    return amount\n")
    t.sidechain("Search the repo. Never modify files.", "Found charge() in src/billing.py; always called once.")
    t.tool("Edit", {"file_path": str(project.path / "src/billing.py"), "old_string": "return amount",
                    "new_string": "return retry(amount)"}, "The file has been updated.")
    t.garbage()
    t.say("Added retries with an idempotency key.")
    t.turn_end()
    _hook(paths, payload("Stop", SESSION, tp, project.path))
    result = daemon.drain(paths)
    [seen] = _log(tmp_path)
    assert seen["user"] == typed
    assert seen["assistant"] == "I'll look at the billing module first.\n\nAdded retries with an idempotency key."
    [outcome] = result.outcomes
    assert [e.body for e in outcome.recorded] == ["Always pass an idempotency key to the payments API."]
    bodies = [e["body"] for e in project.entries().values()]
    assert bodies == ["Always pass an idempotency key to the payments API."]  # nothing re-recorded from context


def test_files_modified_come_from_the_hooks_event_log(paths, project, tmp_path):
    tp = tmp_path / "s.jsonl"
    t = Transcript(tp, SESSION, project.path)
    t.prompt("Tidy billing. Never log card numbers.")
    time.sleep(0.01)
    for tool, rel in (("Edit", "src/billing.py"), ("MultiEdit", "src/billing.py"), ("Write", "src/new.py")):
        _hook(paths, edit_payload(SESSION, tp, project.path, project.path / rel, tool=tool))
    _hook(paths, edit_payload(SESSION, tp, project.path, Path("/etc/hosts")))          # outside the repository
    _hook(paths, edit_payload(SESSION, tp, project.path, project.path / ".git/config"))  # inside .git
    _hook(paths, edit_payload(OTHER, tp, project.path, project.path / "src/util.py"))  # another session
    rel_input = edit_payload(SESSION, tp, project.path, Path("src/util.py"), tool="Edit")
    rel_input["tool_name"] = "Read"  # reads are not modifications
    _hook(paths, rel_input)
    t.say("The agent claims it also edited src/util.py.")
    time.sleep(0.01)
    t.prompt("Now the notebook. Always clear outputs before committing notebooks.")
    time.sleep(0.01)
    _hook(paths, edit_payload(SESSION, tp, project.path, Path("notebooks/explore.ipynb"), tool="NotebookEdit"))
    t.say("Cleared.")
    _hook(paths, payload("Stop", SESSION, tp, project.path))
    queue.plan(paths)
    time.sleep(0.01)  # the next turn's edit, before its prompt reached the transcript: not turn 1's
    _hook(paths, edit_payload(SESSION, tp, project.path, project.path / "src/util.py"))
    daemon.drain(paths)
    files = {r["turn"]: r["files"] for r in _log(tmp_path)}
    assert files == {0: ["src/billing.py", "src/new.py"], 1: ["notebooks/explore.ipynb"]}
    events = Path(edit_log.events_path(paths, SESSION)).read_text().splitlines()
    assert {json.loads(e)["tool"] for e in events} == {"Edit", "MultiEdit", "Write", "NotebookEdit"}


def test_priority_final_turns_first_then_oldest_first(paths, project, tmp_path):
    sessions = {}
    for name in ("a", "b", "c"):
        tp = tmp_path / f"{name}.jsonl"
        t = Transcript(tp, f"session-{name}", project.path)
        t.prompt(f"first prompt in {name}")
        t.say("ok")
        sessions[name] = (tp, t)
        time.sleep(0.02)
    # a: mid-session (next prompt submitted); b: stopped; c: mid-session, later than a.
    for name, event in (("a", "UserPromptSubmit"), ("b", "Stop"), ("c", "UserPromptSubmit")):
        tp, _ = sessions[name]
        _hook(paths, payload(event, f"session-{name}", tp, project.path, prompt="next"))
        time.sleep(0.02)
    assert queue.plan(paths) == 3
    assert [j.session for j in queue.pending(paths)] == ["session-b", "session-a", "session-c"]


def test_concurrent_hooks_and_drains_judge_each_turn_once(paths, project, tmp_path):
    tp = tmp_path / "s.jsonl"
    t = Transcript(tp, SESSION, project.path)
    for i in range(6):
        t.prompt(f"Change {i}. Always keep function {i} pure.")
        t.say(f"Done {i}.")
    t.turn_end()
    env = subprocess_env(KEYWORD_JUDGE_DELAY="0.05")
    stop = json.dumps(payload("Stop", SESSION, tp, project.path))
    code = ("import json, sys\nfrom gitmem.hook.capture import handle\nfrom gitmem.base.paths import find_repo\n"
            "from gitmem.writer.daemon import drain\nrepo = find_repo(sys.argv[1])\n"
            "for _ in range(5):\n    handle(repo, json.loads(sys.argv[2]))\n"
            "drain(repo)\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(project.path), stop], env=env)
             for _ in range(6)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 6
    turns = sorted(r["turn"] for r in _log(tmp_path))
    assert turns == list(range(6))
    entries = project.entries().values()
    assert sorted(e["body"] for e in entries) == sorted(f"Always keep function {i} pure." for i in range(6))
    assert project.git("fsck", "--no-progress").strip() == ""


def test_a_judge_killed_mid_judgement_is_redone_and_committed_once(paths, project, tmp_path):
    tp = tmp_path / "s.jsonl"
    t = Transcript(tp, SESSION, project.path)
    t.prompt("HANG here. Never commit generated protobuf files.")
    t.say("Understood.")
    _hook(paths, payload("Stop", SESSION, tp, project.path))
    started = tmp_path / "started"
    env = subprocess_env(KEYWORD_JUDGE_STARTED=str(started))
    drain = subprocess.Popen([sys.executable, "-m", "gitmem.cli", "drain"], cwd=project.path, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not started.exists():
        assert time.monotonic() < deadline and drain.poll() is None, "the judge never started"
        time.sleep(0.05)
    os.kill(drain.pid, signal.SIGKILL)
    drain.wait()
    assert queue.counts(paths)["ready"] == 1  # the job was not lost
    assert project.entries() == {}
    out = project.gitmem("drain", input="").stdout  # the started marker exists: this judge runs through
    assert "turn 0: recorded law" in out
    [entry] = project.entries().values()
    assert entry["body"] == "Never commit generated protobuf files."
    assert len(_log(tmp_path)) == 1
    log = project.git("log", "--format=%s%n%b", "-1")
    assert f"Gitmem-Session: {SESSION} turn 0" in log and "Gitmem-Source: user" in log
    assert project.gitmem("drain").stdout.startswith("judged 0 turns")


def _stopped_turn(paths, project, tmp_path, text: str, reply: str) -> Transcript:
    """A session whose one turn (`text`, answered `reply`) Claude Code has just stopped on."""
    t = Transcript(tmp_path / "s.jsonl", SESSION, project.path)
    t.prompt(text)
    t.say(reply)
    _hook(paths, payload("Stop", SESSION, t.path, project.path))
    return t


def _committed_then_killed(paths, project, tmp_path) -> None:
    """One rule's turn judged and committed by a writer that then died before marking it done."""
    from gitmem.writer import turn_writer

    _stopped_turn(paths, project, tmp_path, "Always use UTC in the database layer.", "OK.")
    queue.plan(paths)
    [job] = queue.pending(paths)
    assert len(turn_writer.process(paths, job, KeywordJudge(paths)).recorded) == 1


def test_a_job_redone_after_its_commit_is_not_committed_twice(paths, project, tmp_path):
    _committed_then_killed(paths, project, tmp_path)
    head = project.git("rev-parse", "HEAD")
    result = daemon.drain(paths)  # the job is still queued: it is redone
    [again] = result.outcomes
    assert again.recorded == [] and again.already == ["Always use UTC in the database layer."]
    assert project.git("rev-parse", "HEAD") == head
    assert len(project.entries()) == 1


def test_a_job_redone_on_another_branch_after_its_commit_is_not_committed_twice(paths, project, tmp_path):
    """The writer died after committing on main; the developer switched to a branch made before it,
    where the redone job found nothing in HEAD and committed the rule again: two entries after the
    merge. The redone job now looks on every local branch since it was queued."""
    project.git("branch", "feature")
    _committed_then_killed(paths, project, tmp_path)
    project.git("switch", "-q", "feature")
    [again] = daemon.drain(paths).outcomes
    assert again.recorded == [] and again.already == ["Always use UTC in the database layer."]
    project.git("switch", "-q", "main")
    project.git("merge", "-q", "--no-edit", "feature")
    assert len(project.entries()) == 1


def test_a_turn_judged_again_weeks_later_is_not_recorded_twice_from_another_branch(paths, project, tmp_path):
    """A session resumed after queue.prune forgot it is planned from turn 0 again, weeks after its
    rule was committed on another branch: the check looked only since the redone job was queued."""
    from gitmem.writer import turn_writer

    project.git("branch", "feature")
    _committed_then_killed(paths, project, tmp_path)
    [job] = queue.pending(paths)
    project.git("switch", "-q", "feature")
    weeks_later = queue.Job.from_dict({**job.to_dict(), "enqueued": time.time() + 31 * 86400})
    again = turn_writer.process(paths, weeks_later, KeywordJudge(paths))
    assert again.recorded == [] and again.already == ["Always use UTC in the database layer."]


def test_a_failed_attempt_is_retried_by_the_machines_writer_only_after_a_while(paths, project, tmp_path):
    """Five attempts in one second parked a turn for good over a config mid-edit or a disk full for
    a moment: the machine's writer waits between them (`gitmem drain`, run by hand, does not)."""
    _stopped_turn(paths, project, tmp_path, "Never touch vendor/.", "OK.")
    queue.plan(paths)
    time.sleep(queue.SETTLE_SECONDS)
    held = queue.claim_next(paths, patient=True)
    attempts = Path(held.path[:-len(".json")] + ".attempts")
    long_ago = time.time() - 3600
    os.utime(attempts, (long_ago, long_ago))  # a judgement that ran long: the wait counts from its failure
    held.release()  # the attempt failed
    assert queue.claim_next(paths, patient=True) is None
    back = time.time() - queue.RETRY_AFTER_S[0] - 1
    os.utime(attempts, (back, back))
    again = queue.claim_next(paths, patient=True)
    assert again is not None and again.attempt == 2
    again.release(counted=False)  # the judge could not load: not the job's failure
    assert attempts.stat().st_size == 1
    os.utime(attempts, (back, back))
    held = queue.claim_next(paths)  # drain's claim: no waiting
    assert held is not None
    held.release()
    assert queue.claim_next(paths) is not None


def test_a_repository_whose_job_cannot_be_parked_does_not_stop_the_writer_for_the_others(paths, project, tmp_path):
    """A full disk: parking the job in failed/ raised out of the machine's writer, which every hook
    restarted onto the same job; now that repository is logged and skipped."""
    other = _other_project(tmp_path)
    other_paths = find_repo(other.path)
    for repo, where in ((paths, project.path), (other_paths, other.path)):
        tp = tmp_path / f"{repo.worktree.name}.jsonl"
        t = Transcript(tp, SESSION if repo is paths else OTHER, where)
        t.prompt("Never touch vendor/.")
        t.say("OK.")
        _hook(repo, payload("Stop", SESSION if repo is paths else OTHER, tp, where))
        queue.plan(repo)
    time.sleep(queue.SETTLE_SECONDS)
    [job] = queue.pending(paths)
    ready = Path(queue.root(paths)) / "ready"
    (ready / f"{job.key}.attempts").write_bytes(b"." * queue.MAX_ATTEMPTS)
    failed = Path(queue.root(paths)) / "failed"
    failed.rmdir()
    failed.write_text("")  # parking it raises, as on a full disk
    repo, held = daemon._next_claim([paths, other_paths])
    assert repo == other_paths and held.job.session == OTHER
    held.release()
    assert "writer: claiming a job" in (paths.state / "errors.log").read_text()


def test_a_repository_deleted_while_its_turn_is_judged_gets_nothing_written_back(paths, project, tmp_path):
    import shutil

    from gitmem.writer import turn_writer

    _stopped_turn(paths, project, tmp_path, "Always use UTC in the database layer.", "OK.")
    queue.plan(paths)
    [job] = queue.pending(paths)

    class DeletedMeanwhile(KeywordJudge):
        def judge(self, packet, stored):
            found = super().judge(packet, stored)
            shutil.rmtree(project.path)
            return found

    with pytest.raises(GitmemError, match="went away while its turn was judged"):
        turn_writer.process(paths, job, DeletedMeanwhile(paths))
    assert not project.path.exists()


def test_a_reply_written_after_the_stop_is_judged_with_its_turn(paths, project, tmp_path):
    """Planning read the turn the moment Stop arrived; a reply Claude Code wrote a moment later
    (a Stop without last_assistant_message) was missing from the judged turn."""
    from gitmem.writer import turn_writer

    t = _stopped_turn(paths, project, tmp_path, "Should we keep the retry loop in sync_ledger?", "Checking.")
    queue.plan(paths)
    t.say("Yes: keep it, and never call sync_ledger from a request handler.")  # flushed after the Stop
    [job] = queue.pending(paths)
    packet = turn_writer.build_packet(paths, job)
    assert "never call sync_ledger from a request handler" in packet.assistant, packet.assistant


def test_a_job_that_keeps_failing_is_parked_not_lost(paths, project, tmp_path, monkeypatch):
    tp = tmp_path / "s.jsonl"
    t = Transcript(tp, SESSION, project.path)
    t.prompt("Never touch vendor/.")
    t.say("OK.")
    _hook(paths, payload("Stop", SESSION, tp, project.path))

    class Broken(KeywordJudge):
        def judge(self, packet, stored):
            raise RuntimeError("model exploded")

    result = daemon.drain(paths, Broken(paths))
    assert len(result.errors) == queue.MAX_ATTEMPTS
    assert "model exploded" in result.errors[0]
    [parked] = list(queue.failed(paths))
    assert parked["turn"] == 0 and "attempts" in parked["reason"]
    assert queue.counts(paths)["failed"] == 1 and queue.pending(paths) == []
    assert "model exploded" in (paths.state / "errors.log").read_text()
    # Never planned again.
    _hook(paths, payload("SessionEnd", SESSION, tp, project.path))
    assert queue.plan(paths) == 0


def test_a_job_file_written_again_under_its_name_is_read_again(paths, project):
    # The queue remembers the job files it read (a long backlog is read once); a file that is a
    # new one under the same name (finished, then planned again) is read anew.
    ready = os.path.join(queue.root(paths), "ready")
    os.makedirs(ready, exist_ok=True)
    first = queue.Job("s", 0, "/t.jsonl", queue.PRIORITY_PROMPT, enqueued=1.0)
    path = os.path.join(ready, f"{first.key}.json")
    queue._write_new(path, first.to_dict())
    assert queue.pending(paths) == [first]
    again = queue.Job("s", 0, "/t.jsonl", queue.PRIORITY_FINAL, enqueued=2.0, worktree=str(project.path))
    replacement = path + ".new"
    queue._write_new(replacement, again.to_dict())  # another file (inode) in its place
    os.replace(replacement, path)
    assert queue.pending(paths) == [again]
    os.unlink(path)
    assert queue.pending(paths) == [] and path not in queue._READ


def test_the_very_words_of_an_active_entry_are_never_recorded_again(paths, project):
    """Two sessions that said the same rule, judged before either was recorded (each judge saw a
    store without it), or a correction judged as replacing its own copy: at commit time the store
    as it is decides, and the very words active already record nothing."""
    from gitmem.judge.types import Candidate
    from gitmem.writer.turn_writer import Outcome, commit_candidates

    rule = "we're moving off axios, built-in fetch only from now on"
    first = Outcome(queue.Job("s1", 0, "/t.jsonl"))
    commit_candidates(paths, first.job, [Candidate("correction", "user", rule, None, (), 0.9)], first)
    [stored] = first.recorded
    again = Outcome(queue.Job("s2", 3, "/u.jsonl"))
    said = [Candidate("correction", "user", rule.upper().replace(" ", "  "), None, (stored.id,), 0.9),
            Candidate("law", "user", "Timestamps are stored in UTC.", None, (), 0.8)]
    commit_candidates(paths, again.job, said, again)
    assert again.already == [said[0].body] and [e.body for e in again.recorded] == [said[1].body]
    entries = project.entries()
    assert len(entries) == 2 and entries[stored.id]["status"] == "active"
    # the same words correcting another entry (two contradicting rules): the correction holds
    two = project.gitmem("add", "law", "Use two spaces for indentation.").stdout.split()[0]
    four = project.gitmem("add", "law", "Use four spaces for indentation.").stdout.split()[0]
    fix = Outcome(queue.Job("s3", 0, "/v.jsonl"))
    commit_candidates(paths, fix.job, [Candidate("correction", "user", "Use four spaces for indentation.", None,
                                                 (two,), 0.9)], fix)
    [correction] = fix.recorded
    entries = project.entries()
    assert entries[two]["status"] == "superseded" and entries[two]["superseded_by"] == correction.id
    assert entries[four]["status"] == "superseded" and entries[four]["superseded_by"] == correction.id  # one copy
    # the same words anchored elsewhere are another rule: a correction of a third keeps them
    mine = project.gitmem("add", "hazard", "Edit by hand only with review.", "--anchor", "src/util.py").stdout.split()[0]
    other = project.gitmem("add", "law", "Generated files may be edited directly.").stdout.split()[0]
    wide = Outcome(queue.Job("s5", 0, "/x.jsonl"))
    commit_candidates(paths, wide.job, [Candidate("correction", "user", "Edit by hand only with review.", None,
                                                  (other,), 0.9)], wide)
    entries = project.entries()
    assert entries[other]["status"] == "superseded" and entries[mine]["status"] == "active" and wide.recorded
    # an expired rule said again is said anew
    project.write(".gitmem/entries/20200101-0000e0e0.yaml",
                  "id: 20200101-0000e0e0\nkind: law\nbody: Deploys are frozen.\nexpires: 2020-02-01\n")
    project.commit_all("an expired freeze")
    from gitmem.writer.turn_writer import stored_entries
    assert "20200101-0000e0e0" not in {e.id for e in stored_entries(paths)}  # the judge's store: rules in force
    freeze = Outcome(queue.Job("s4", 0, "/w.jsonl"))
    commit_candidates(paths, freeze.job, [Candidate("law", "user", "Deploys are frozen.", None, (), 0.9)], freeze)
    assert [e.body for e in freeze.recorded] == ["Deploys are frozen."] and freeze.already == []


def test_an_unreadable_job_file_is_set_aside_not_counted_as_waiting_forever(paths, project):
    ready = os.path.join(queue.root(paths), "ready")
    os.makedirs(ready, exist_ok=True)
    with open(os.path.join(ready, "deadbeef.0.json"), "w") as handle:
        handle.write("{not json")
    assert queue.pending(paths) == []
    assert queue.counts(paths)["ready"] == 0 and queue.counts(paths)["failed"] == 1


MALFORMED = [
    "",
    "not json",
    "[]",
    "null",
    '{"hook_event_name": "Stop"}',
    '{"hook_event_name": "Stop", "session_id": 42, "transcript_path": []}',
    '{"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": {"x": 1}}',
    '{"hook_event_name": "UserPromptSubmit", "session_id": "s", "transcript_path": "/nonexistent/t.jsonl", '
    '"prompt": null}',
    '{"hook_event_name": "PostToolUse", "session_id": "s", "tool_name": "Edit", "tool_input": "x"}',
    '{"hook_event_name": "PostToolUse", "session_id": "s", "tool_name": "Write", "tool_input": {"file_path": 7}}',
    '{"hook_event_name": "PostToolUse", "session_id": "../../etc", "tool_name": "Edit", '
    '"tool_input": {"file_path": "src/a.py"}}',
    '{"hook_event_name": "Stop", "session_id": "s\\u0000x", "transcript_path": "t", "cwd": 5}',
    '{"hook_event_name": "SessionEnd", "session_id": "' + "x" * 5000 + '", "transcript_path": "t"}',
]


@pytest.mark.parametrize("text", MALFORMED)
def test_the_hook_never_fails_and_never_prints(project, paths, text):
    proc = run_hook(text, project.path, env=subprocess_env(), capture_only=True)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    if dispatcher_available():  # and through the real dispatcher, as Claude Code runs it
        proc = run_hook(text, project.path, env=subprocess_env())
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    try:
        data = json.loads(text)
    except ValueError:
        data = text
    capture_hook.handle(paths, data)  # in-process: no exception either
    capture_hook.handle(None, {"hook_event_name": "Stop", "session_id": "s", "transcript_path": "t"})


def test_the_hook_survives_a_broken_state_folder(project, paths, tmp_path):
    paths.state.mkdir(exist_ok=True)
    (paths.state / "queue").write_text("a file where the queue folder should be")
    (paths.state / "events").write_text("and another")
    capture_hook.handle(paths, payload("Stop", SESSION, tmp_path / "t.jsonl", project.path))
    capture_hook.handle(paths, edit_payload(SESSION, tmp_path / "t.jsonl", project.path,
                                            project.path / "src/util.py"))
    log = (paths.state / "errors.log").read_text()
    assert log.count("capture hook") == 2 and "NotADirectoryError" in log


def test_events_from_the_real_dispatcher_reach_the_queue(project, paths, tmp_path):
    if not dispatcher_available():
        pytest.skip("gitmem.hook.claude is not part of this tree yet")
    tp = tmp_path / "s.jsonl"
    t = Transcript(tp, SESSION, project.path)
    t.prompt("Always keep billing amounts in cents.")
    assert run_hook(payload("UserPromptSubmit", SESSION, tp, project.path,
                            prompt="Always keep billing amounts in cents."), project.path).returncode == 0
    proc = run_hook(edit_payload(SESSION, tp, project.path, project.path / "src/billing.py"), project.path)
    assert (proc.returncode, proc.stderr) == (0, "")
    t.say("Done.")
    proc = run_hook(payload("Stop", SESSION, tp, project.path), project.path)
    assert (proc.returncode, proc.stderr) == (0, "")
    out = project.gitmem("drain").stdout
    assert "recorded law" in out
    [entry] = project.entries().values()
    assert entry["anchor"] == "src/billing.py"


# -- the daemon ------------------------------------------------------------------------------------

def test_daemon_start_status_stop(project, paths, tmp_path, monkeypatch):
    env = subprocess_env()
    env.pop("GITMEM_NO_DAEMON")

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "gitmem.cli", *args], cwd=project.path, env=env,
                              capture_output=True, text=True, timeout=60)

    assert cli("daemon", "status").stdout.startswith("not running")
    out = cli("daemon", "start", "--idle-timeout", "60").stdout
    assert out.startswith("running: pid"), out
    try:
        assert daemon.is_running(paths)
        assert cli("daemon", "start").stdout.startswith("running: pid")  # idempotent
        tp = tmp_path / "s.jsonl"
        t = Transcript(tp, SESSION, project.path)
        t.prompt("Never use print() for logging.")
        t.say("OK.")
        _hook(paths, payload("Stop", SESSION, tp, project.path))
        wait_until(lambda: len(project.entries()) == 1, what="the daemon to record the entry")
        # The entry's commit lands a moment before the daemon counts the job in its status file.
        wait_until(lambda: daemon.read_status(paths).get("state") != "judging", what="the daemon to finish the job")
        info = json.loads(cli("daemon", "status", "--json").stdout)
        assert info["running"] and info["recorded"] == 1 and info["judged"] == 1
        assert info["rss_kib"] > 0 and info["pid"] > 0
        text = cli("daemon", "status").stdout
        assert "judged 1 turn, recorded 1 entry" in text and "MiB resident" in text
    finally:
        assert cli("daemon", "stop").stdout.strip() == "stopped"
    assert not daemon.is_running(paths)
    assert cli("daemon", "stop").stdout.strip() == "not running"
    assert cli("daemon", "status").stdout.startswith("not running")


def test_the_hook_starts_the_daemon_which_exits_when_idle(project, paths, tmp_path, monkeypatch):
    monkeypatch.delenv("GITMEM_NO_DAEMON")
    monkeypatch.setenv("GITMEM_DAEMON_IDLE", "1")
    tp = tmp_path / "s.jsonl"
    t = Transcript(tp, SESSION, project.path)
    t.prompt("Always squash merge.")
    t.say("OK.")
    started = time.monotonic()
    _hook(paths, payload("Stop", SESSION, tp, project.path))
    assert time.monotonic() - started < 0.5  # spawning is fire-and-forget
    wait_until(lambda: len(project.entries()) == 1, what="the hook-started daemon to record the entry")
    wait_until(lambda: not daemon.is_running(paths), timeout=30, what="the daemon's idle exit")
    assert daemon.read_status(paths)["state"] == "stopped"


def test_a_second_daemon_does_not_start_while_one_runs(project, paths):
    env = subprocess_env(GITMEM_DAEMON_IDLE="30")
    first = subprocess.Popen([sys.executable, "-m", "gitmem.writer.daemon", "serve", "--repo", str(project.path)], env=env)
    try:
        wait_until(lambda: daemon.is_running(paths), what="the first daemon")
        second = subprocess.run([sys.executable, "-m", "gitmem.writer.daemon", "serve", "--repo", str(project.path)],
                                env=env, timeout=60)
        assert second.returncode == 0 and first.poll() is None
        assert daemon.read_status(paths)["pid"] == first.pid
    finally:
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=30) == 0


def test_prune_forgets_sessions_untouched_for_a_month(paths, project, tmp_path):
    tp = tmp_path / "s.jsonl"
    t = Transcript(tp, SESSION, project.path)
    t.prompt("Always keep imports sorted.")
    _hook(paths, edit_payload(SESSION, tp, project.path, project.path / "src/util.py"))
    t.say("OK.")
    _hook(paths, payload("Stop", SESSION, tp, project.path))
    daemon.drain(paths)
    assert queue.watermark(paths, SESSION) == 1
    assert queue.prune(paths) == 0
    old = time.time() - 31 * 86400
    for folder in ("sessions", "done"):
        for path in (paths.state / "queue" / folder).iterdir():
            os.utime(path, (old, old))
    os.utime(edit_log.events_path(paths, SESSION), (old, old))
    assert queue.prune(paths) == 3  # watermark, done marker, edit log
    assert queue.watermark(paths, SESSION) == 0
    # Re-planned from turn 0, re-judged, but never recorded twice.
    _hook(paths, payload("Stop", SESSION, tp, project.path))
    again = daemon.drain(paths)
    assert [o.already for o in again.outcomes] == [["Always keep imports sorted."]]
    assert len(project.entries()) == 1


def test_stop_never_signals_a_process_that_is_not_the_daemon(project, paths):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        import fcntl

        machine = Path(daemon.machine_dir())
        machine.mkdir(parents=True, exist_ok=True)
        (machine / daemon.STATUS_FILE).write_text(json.dumps({"pid": sleeper.pid, "state": "idle"}))
        with open(machine / daemon.LOCK_FILE, "a") as lock:  # some process holds the lock
            fcntl.flock(lock, fcntl.LOCK_EX)
            assert daemon.stop(paths, timeout=1) is False
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_reply_the_transcript_has_not_flushed_yet_comes_from_the_stop_payload(paths, project, tmp_path):
    """Claude Code can run Stop before the final assistant record is written (anthropics/claude-code#15812)."""
    tp = tmp_path / "s.jsonl"
    t = Transcript(tp, SESSION, project.path)
    t.prompt("Add pagination. Never return more than 100 rows from the API.")
    t.say("Let me look at the handlers.")
    final = "Added `limit`/`offset`; the limit is capped at 100."
    _hook(paths, payload("Stop", SESSION, tp, project.path, last_assistant_message=final))
    daemon.drain(paths)  # judged before the transcript caught up
    t.say(final)
    t.prompt("Now the same for search.")
    t.say("Done.")  # this time the transcript has it: not added twice
    _hook(paths, payload("Stop", SESSION, tp, project.path, last_assistant_message="Done."))
    daemon.drain(paths)
    seen = {r["turn"]: r["assistant"] for r in _log(tmp_path)}
    assert seen == {0: "Let me look at the handlers.\n\n" + final, 1: "Done."}


def _other_project(tmp_path):
    from conftest import GitRepo

    (tmp_path / "other").mkdir()
    other = GitRepo(tmp_path / "other")
    other.git("init", "-q", "-b", "main")
    return other.with_gitmem({"README.md": "other\n"})


def _typed_beside_another_project(project, tmp_path, text):
    """Another gitmem repository beside the project, and a session that typed `text` in the project."""
    other = _other_project(tmp_path)
    transcript = Transcript(tmp_path / "s.jsonl", SESSION, project.path)
    transcript.prompt(text)
    transcript.say("OK.")
    return other, find_repo(other.path), transcript


def _user_turns(paths) -> list[tuple[int, str]]:
    return [(j.turn, j.user) for j in queue.pending(paths)]


def test_a_turn_typed_in_a_sibling_repository_is_judged_there_alone(paths, project, tmp_path):
    """The agent moved into another gitmem repository mid-session: each turn is judged once, in
    the repository the transcript says it was typed in (a rule "in this repo" stays this repo's)."""
    other, other_paths, t = _typed_beside_another_project(project, tmp_path,
                                                          "Going forward, never store money as floats in this repo.")
    tp = t.path
    _hook(paths, payload("Stop", SESSION, tp, project.path))
    t.cwd = str(other.path)
    t.prompt("Never commit the generated docs in this one.")
    t.say("OK.")
    _hook(other_paths, payload("Stop", SESSION, tp, other.path))
    queue.plan(paths)
    queue.plan(other_paths)
    assert _user_turns(paths) == [(0, "Going forward, never store money as floats in this repo.")]
    assert _user_turns(other_paths) == [(1, "Never commit the generated docs in this one.")]


def test_a_turn_whose_stop_reached_another_repository_is_handed_back(paths, project, tmp_path):
    """The Stop of a turn typed in A reached B's queue (the session's folder had moved by then): B
    tells A, whose planning takes it; B judges nothing of it."""
    other, other_paths, t = _typed_beside_another_project(project, tmp_path, "Never import from src.legacy.")
    _hook(other_paths, payload("Stop", SESSION, t.path, other.path))
    queue.plan(other_paths)
    assert _user_turns(other_paths) == []
    queue.plan(paths)
    assert _user_turns(paths) == [(0, "Never import from src.legacy.")]
    queue.plan(other_paths)
    assert _user_turns(other_paths) == []


def test_a_turn_typed_in_a_linked_worktree_stays_with_its_repository(paths, project, tmp_path):
    from gitmem.writer.queue import _typed_elsewhere

    linked = tmp_path / "linked"
    project.git("worktree", "add", "-q", str(linked), "-b", "side")
    assert _typed_elsewhere(paths, str(linked)) is None
    assert _typed_elsewhere(paths, str(project.path / "src")) is None
    assert _typed_elsewhere(paths, str(tmp_path / "gone")) is None


def test_a_forked_session_judges_only_the_prompts_typed_after_the_fork(paths, project, tmp_path):
    """`claude --fork-session` (and a resume into a new file) copies the earlier records, their ids
    kept, under a new session id: the copied prompts were judged in the session they were typed in."""
    first, second = SESSION, OTHER
    ta = Transcript(tmp_path / f"{first}.jsonl", first, project.path)
    for text in ("Always run make lint before pushing.", "Never call sync_ledger in a handler."):
        ta.prompt(text)
        ta.say("OK.")
    _hook(paths, payload("SessionEnd", first, ta.path, project.path))
    queue.plan(paths)
    assert [j.turn for j in queue.pending(paths)] == [0, 1]
    tb = Transcript(tmp_path / f"{second}.jsonl", second, project.path)
    records = [json.loads(line) for line in ta.path.read_text().splitlines()]
    tb.path.write_text("".join(json.dumps({**r, "sessionId": second} if "sessionId" in r else r) + "\n"
                               for r in records))
    tb.parent = records[-1].get("uuid")
    tb.prompt("Now add a test for f.")
    tb.say("Added.")
    _hook(paths, payload("Stop", second, tb.path, project.path))
    queue.plan(paths)
    forked = [(j.turn, j.user) for j in queue.pending(paths) if j.session == second]
    assert forked == [(2, "Now add a test for f.")]
    queue.plan(paths)  # planned again: still once
    assert len(queue.pending(paths)) == 3


def test_a_forked_codex_rollout_judges_only_the_prompts_typed_after_the_fork(paths, project, tmp_path):
    """`codex fork` writes a rollout of its own (new id, `forked_from_id`) and then the parent's
    lines as they were: rollout lines have no ids, so the prompt's time and text identify it."""
    def rec(stamp, kind, payload):
        return json.dumps({"timestamp": stamp, "type": kind, "payload": payload}) + "\n"

    def prompts(*typed):
        return "".join(rec(stamp, "turn_context", {"cwd": str(project.path)})
                       + rec(stamp, "event_msg", {"type": "user_message", "message": text})
                       + rec(stamp, "event_msg", {"type": "agent_message", "message": "OK."}) for stamp, text in typed)

    parent = tmp_path / "rollout-parent.jsonl"
    parent.write_text(rec("2026-06-18T00:57:05.000Z", "session_meta", {"id": SESSION, "cwd": str(project.path)})
                      + prompts(("2026-06-18T00:58:00.000Z", "Always run make lint before pushing."),
                                ("2026-06-18T00:59:00.000Z", "Never call sync_ledger in a handler.")))
    _hook(paths, payload("Stop", SESSION, parent, project.path))
    queue.plan(paths)
    assert [j.turn for j in queue.pending(paths)] == [0, 1]
    fork = tmp_path / "rollout-fork.jsonl"
    fork.write_text(rec("2026-06-18T01:10:00.000Z", "session_meta", {"id": OTHER, "forked_from_id": SESSION,
                                                                     "cwd": str(project.path)})
                    + parent.read_text() + prompts(("2026-06-18T01:11:00.000Z", "Now add a test for f.")))
    _hook(paths, payload("Stop", OTHER, fork, project.path))
    queue.plan(paths)
    assert [(j.turn, j.user) for j in queue.pending(paths) if j.session == OTHER] == [(2, "Now add a test for f.")]


def test_a_deleted_repository_is_dropped_from_the_writer_whatever_was_written_back(tmp_path):
    """Deleted while its job was judged, a repository's path may get a file or two written back
    (`.git/gitmem/…`): it has no HEAD, so the writer forgets it instead of serving it for good."""
    import shutil

    other = _other_project(tmp_path)
    other_paths = find_repo(other.path)
    daemon.register(other_paths)
    assert [r.worktree for r in daemon.registered()] == [other_paths.worktree]
    shutil.rmtree(other.path)
    (other.path / ".git/gitmem").mkdir(parents=True)  # what a busy writer wrote back
    (other.path / ".git/gitmem/index.json").write_text("{}")
    assert daemon.registered() == []
    assert daemon.registered() == []  # and its registration is gone

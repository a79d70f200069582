"""`gitmem render`, `status`, `stats`, and AGENTS.md kept current as memory changes land."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from delivery_support import ClaudeCode, add_entry

from gitmem.delivery.agents_md import BEGIN, END

SOURCE = "import os\n\n\ndef f(x):\n    return x\n\n\ndef g(x):\n    return -x\n"


@pytest.fixture
def gm(repo, monkeypatch):
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    repo.write("src/a.py", SOURCE)
    repo.commit_all("initial")
    repo.gitmem("init")
    repo.commit_all("set up gitmem")
    return repo


def test_render_prints_what_a_moment_would_deliver_without_recording_it(gm):
    law = add_entry(gm, "law", "Use tabs.")
    f = add_entry(gm, "hazard", "f() runs in signal handlers.", "--anchor", "src/a.py::f")
    run = add_entry(gm, "hazard", "Never run migrate twice.", "--on", "run:*manage.py migrate*")
    out = gm.gitmem("render", "--event", "session-start").stdout
    assert law in out and f not in out and out.startswith("<gitmem-context>")
    assert f in gm.gitmem("render", "--event", "edit", "--path", "src/a.py", "--lines", "4-5").stdout
    assert gm.gitmem("render", "--event", "edit", "--path", "src/a.py", "--lines", "8").stdout == ""
    assert f in gm.gitmem("render", "--event", "read", "--path", "src/a.py").stdout
    assert run in gm.gitmem("render", "--event", "run", "--command", "python manage.py migrate --fake").stdout
    # a file named as the hook reads it: after a `cd`, and from the folder render runs in
    db = add_entry(gm, "ritual", "Run the db tests with --reuse-db.", "--on", "run:tests/test_db.py")
    (gm.path / "tests").mkdir(exist_ok=True)
    assert db in gm.gitmem("render", "--event", "run", "--command", "cd tests && pytest test_db.py").stdout
    inside = subprocess.run([sys.executable, "-m", "gitmem.cli", "render", "--event", "run", "--command",
                             "pytest test_db.py"], cwd=gm.path / "tests", capture_output=True, text=True)
    assert db in inside.stdout, inside.stderr
    assert not (gm.path / ".git/gitmem/deliveries.jsonl").exists()
    # With --session, what that session already has is left out.
    ClaudeCode(gm.path, "s1").read("src/a.py")
    quiet = gm.gitmem("render", "--event", "read", "--path", "src/a.py", "--session", "s1")
    assert quiet.stdout == "" and "nothing would be delivered" in quiet.stderr
    bad = gm.gitmem("render", check=False)
    assert bad.returncode == 1 and "--event" in bad.stderr
    assert gm.gitmem("render", "--event", "edit", check=False).returncode == 1


def test_status_shows_the_block_and_what_the_budget_left_out(gm):
    gm.write(".gitmem/config.yaml", "delivery:\n  session_start:\n    max_entries: 2\n")
    ids = []
    for i in range(4):
        ids.append(add_entry(gm, "law", f"Rule number {i}."))
        time.sleep(1.05)  # creation times have one-second resolution; the newest are kept
    out = gm.gitmem("status").stdout
    assert "Claude Code hooks: installed" in out
    assert "session start: 2 of 4 repository-wide entries" in out
    left = out.split("left out by the budget")[1]
    assert ids[0] in left and ids[1] in left and ids[3] not in left
    start = ClaudeCode(gm.path).start()
    assert sorted(start.active) == sorted(ids[2:])
    assert "2 more repository-wide entries were left out" in start.text


def test_stats_counts_deliveries_and_lists_entries_that_never_fired(gm):
    law = add_entry(gm, "law", "Use tabs.")
    f = add_entry(gm, "hazard", "f() runs in signal handlers.", "--anchor", "src/a.py::f")
    quiet = add_entry(gm, "hazard", "Never touch vendor/.", "--anchor", "src/a.py::g", "--on", "edit:vendor/**")
    for session in ("s1", "s2"):
        claude = ClaudeCode(gm.path, session)
        claude.start()
        claude.read("src/a.py")
    rows = {r["id"]: r for r in map(json.loads, gm.gitmem("stats", "--json").stdout.splitlines())}
    assert rows[law]["delivered"] == 2 and rows[law]["events"] == {"session-start": 2}
    assert rows[f]["delivered"] == 2 and rows[f]["sessions"] == 2 and rows[f]["last"]
    assert rows[quiet]["delivered"] == 0
    text = gm.gitmem("stats").stdout
    assert "never delivered: 1 active entry" in text and quiet in text.split("never delivered")[1]
    assert f"{f}  hazard        2x in 2 sessions, last " in text
    # an entry only ever announced as withdrawn: its events are that alone
    gone = add_entry(gm, "law", "Tabs in YAML.")
    gm.gitmem("revoke", gone, "--reason", "YAML forbids tabs")
    assert ClaudeCode(gm.path, "s3").start().retracted == [gone]
    line = next(x for x in gm.gitmem("stats").stdout.splitlines() if x.startswith(gone))
    assert "0x in 1 session," in line and "(retracted 1)" in line, line


def test_agents_md_section_is_created_and_kept_current(gm):
    gm.write("AGENTS.md", "# Agents\n\nRun `make test` before pushing.\n")
    gm.commit_all("agents")
    law = add_entry(gm, "law", "Use tabs.")
    agent = add_entry(gm, "correction", "The API is v2 now.", "--source", "agent")
    assert "updated" in gm.gitmem("render", "--agents-md").stdout
    text = gm.read("AGENTS.md")
    assert text.startswith("# Agents\n\nRun `make test` before pushing.\n")
    assert BEGIN in text and text.rstrip().endswith(END)
    section = text[text.index(BEGIN):]
    assert law in section and "standing rules for this repository" in section
    assert agent in section.split("Recorded by an AI agent")[1]
    assert "up to date" in gm.gitmem("render", "--agents-md").stdout
    gm.commit_all("agents section")

    # `gitmem add` and `gitmem revoke` bring the section along in their own commits.
    newer = add_entry(gm, "law", "Never log tokens.")
    assert newer in gm.read("AGENTS.md")
    assert "AGENTS.md" in gm.git("show", "--name-only", "--format=", "HEAD")
    assert gm.git("status", "--porcelain") == ""
    gm.gitmem("revoke", law, "--reason", "we use spaces now")
    assert law not in gm.read("AGENTS.md") and "Never log tokens." in gm.read("AGENTS.md")
    assert gm.git("status", "--porcelain") == ""


def test_agents_md_follows_entries_that_arrive_by_merge_and_retire_by_commit(gm):
    gm.gitmem("render", "--agents-md")
    gm.commit_all("agents section")
    # A teammate's entry arrives through a merge whose AGENTS.md was not updated.
    gm.git("checkout", "-q", "-b", "feature")
    theirs = add_entry(gm, "law", "Feature flags live in flags.yaml.")
    gm.git("checkout", "-q", "HEAD~1", "--", "AGENTS.md")
    gm.git("commit", "-q", "--amend", "--no-edit")
    gm.git("checkout", "-q", "main")
    gm.git("merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    # rendered afresh and committed by gitmem: left in the work tree, it would stay out of every
    # later commit as the developer's change
    assert theirs in gm.git("show", "HEAD:AGENTS.md") and theirs in gm.read("AGENTS.md")
    assert gm.git("log", "-1", "--format=%s").strip() == "gitmem: regenerate agent files after merge"
    assert gm.git("status", "--porcelain") == ""
    # An entry in the block whose declaration a commit deletes leaves it in that same commit.
    pinned = add_entry(gm, "law", "g() must stay pure.", "--anchor", "src/a.py::g", "--on", "session-start")
    assert pinned in gm.read("AGENTS.md")
    gm.write("src/a.py", SOURCE.split("\n\ndef g")[0] + "\n")
    gm.git("commit", "-q", "-am", "drop g")
    assert pinned not in gm.read("AGENTS.md")
    assert "AGENTS.md" in gm.git("show", "--name-only", "--format=", "HEAD")
    assert gm.git("status", "--porcelain") == ""


def test_agents_md_sections_of_two_branches_merge_without_conflict(gm):
    gm.write("AGENTS.md", "# Agents\n\nRun `make test` before pushing.\n")
    gm.gitmem("render", "--agents-md")
    gm.commit_all("agents section")
    kept = add_entry(gm, "law", "Use tabs.")  # commits the entry and the section
    gm.git("checkout", "-q", "-b", "feature")
    theirs = add_entry(gm, "law", "Feature flags live in flags.yaml.")
    gone = kept
    gm.gitmem("revoke", gone, "--reason", "spaces now")
    gm.git("checkout", "-q", "main")
    ours = add_entry(gm, "hazard", "Never run two migrations at once.")
    gm.write("AGENTS.md", gm.read("AGENTS.md").replace("before pushing", "before every push"))
    gm.git("commit", "-q", "-am", "reword")
    gm.git("merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    for text in (gm.git("show", "HEAD:AGENTS.md"), gm.read("AGENTS.md")):  # merged; rendered by post-merge
        assert "<<<<<<<" not in text and "before every push" in text
        assert ours in text and theirs in text and gone not in text
        assert text.count(BEGIN) == 1 and text.count(END) == 1
    assert "up to date" in gm.gitmem("render", "--agents-md").stdout
    assert gm.git("status", "--porcelain") == ""  # entries in reading order: gitmem's commit after the merge
    # The text outside the section still conflicts the way git would show it.
    gm.git("checkout", "-q", "-b", "other", "HEAD~1")
    gm.write("AGENTS.md", gm.read("AGENTS.md").replace("# Agents", "# Agents (other)"))
    gm.git("commit", "-q", "-am", "other title")
    gm.git("checkout", "-q", "main")
    gm.write("AGENTS.md", gm.read("AGENTS.md").replace("# Agents", "# Agents (main)"))
    gm.git("commit", "-q", "-am", "main title")
    assert "CONFLICT (content): Merge conflict in AGENTS.md" in gm.git("merge", "-m", "merge other", "other", check=False)
    text = gm.read("AGENTS.md")
    assert "<<<<<<< " in text and "# Agents (other)" in text and text.count(BEGIN) == 1
    assert ours in text and theirs in text
    gm.git("merge", "--abort")
    # uninstall takes the driver away with the hooks
    gm.gitmem("uninstall")
    assert gm.git("config", "--get", "merge.gitmem-agents-md.driver", check=False) == ""
    assert not (gm.path / ".git/info/attributes").exists()  # init made it, uninstall took it away


def test_agents_md_with_damaged_markers_is_never_written_and_check_says_so(gm):
    # The end marker deleted by hand and the developer's notes written below: pairing the begin
    # marker with one gitmem appends would swallow them.
    gm.gitmem("init", "--agent", "claude-code", "--agent", "agents-md")
    gm.commit_all("agents section")
    damaged = gm.read("AGENTS.md").replace(END + "\n", "") + "\n## Team notes\nRun make before pushing.\n"
    gm.write("AGENTS.md", damaged)
    add_entry(gm, "law", "Use tabs.")
    add_entry(gm, "law", "Never log tokens.")
    assert gm.read("AGENTS.md") == damaged
    assert "left AGENTS.md alone: it holds a gitmem:begin line without its gitmem:end" in \
        gm.gitmem("render", "--agents-md").stdout
    assert "AGENTS.md  its gitmem:begin/gitmem:end lines are missing their pair" in gm.gitmem("status").stdout
    check = gm.gitmem("check", check=False)
    assert check.returncode == 1 and "AGENTS.md: it holds a gitmem:begin line without its gitmem:end" in check.stdout
    # two sections: the second would keep a withdrawn rule in front of agents
    gm.write("AGENTS.md", damaged.replace("## Team notes", END + "\n" + BEGIN + "\n- Law: old [x]\n" + END))
    assert "more than one" in gm.gitmem("check", check=False).stdout


def test_agents_md_markers_in_a_code_block_or_after_a_bom_are_read_as_they_are_meant(gm):
    example = f"# Agents\n\nThe section looks like this:\n\n```markdown\n{BEGIN}\n...entries...\n{END}\n```\n"
    gm.write("AGENTS.md", example)
    gm.commit_all("agents")
    law = add_entry(gm, "law", "Use tabs.")
    gm.gitmem("render", "--agents-md")
    text = gm.read("AGENTS.md")
    assert text.startswith(example) and law in text[len(example):]  # the example stays an example
    bom = "\ufeff" + text[text.rindex(BEGIN):]  # a Windows editor's byte-order mark before the section
    gm.write("AGENTS.md", bom)
    newer = add_entry(gm, "law", "Never log tokens.")
    updated = gm.read("AGENTS.md")
    assert updated.startswith("\ufeff" + BEGIN) and newer in updated and updated.count(BEGIN) == 1


def test_a_fence_in_an_entry_or_left_open_by_the_developer_hides_no_marker(gm):
    gm.gitmem("init", "--agent", "claude-code", "--agent", "agents-md")
    gm.write("AGENTS.md", "# Project\n\nExample:\n\n```sh\nmake test\n" + gm.read("AGENTS.md"))  # never closed
    gm.commit_all("agents")
    release = add_entry(gm, "ritual", "Release steps:\n```sh\nmake release")  # its body opens a fence
    newer = add_entry(gm, "law", "Never log tokens.")
    text = gm.read("AGENTS.md")
    assert text.count(BEGIN) == 1 and release in text and newer in text
    assert gm.gitmem("check").returncode == 0


def test_agents_md_linked_out_of_the_repository_is_not_written_through(gm, tmp_path):
    outside = tmp_path / "sibling-AGENTS.md"
    outside.write_text(f"# another repository\n{BEGIN}\n{END}\n")
    (gm.path / "AGENTS.md").symlink_to(outside)
    gm.commit_all("shared agents file")
    add_entry(gm, "law", "Use tabs.")
    assert "a symbolic link" in gm.gitmem("render", "--agents-md").stdout
    assert outside.read_text() == f"# another repository\n{BEGIN}\n{END}\n"


def test_render_refuses_a_path_outside_the_repository_whether_or_not_it_exists(gm):
    for path in ("../elsewhere.py", "src/../../elsewhere.py", "/etc/hostname"):
        proc = gm.gitmem("render", "--event", "edit", "--path", path, check=False)
        assert proc.returncode == 1 and "is outside this repository" in proc.stderr, (path, proc)
    f = add_entry(gm, "hazard", "f() runs in signal handlers.", "--anchor", "src/a.py::f")
    assert f in gm.gitmem("render", "--event", "edit", "--path", "src/./a.py").stdout


def test_stats_and_render_name_a_broken_entry_file_and_go_on(gm):
    law = add_entry(gm, "law", "Use tabs.")
    gm.write(".gitmem/entries/20260101-0badf11e.yaml", "id: 20260101-0badf11e\nkind: nonsense\n")
    for args in (["stats"], ["stats", "--json"], ["render", "--event", "session-start"]):
        proc = gm.gitmem(*args)
        assert "skipped .gitmem/entries/20260101-0badf11e.yaml" in proc.stderr, args
    assert law in gm.gitmem("render", "--event", "session-start").stdout

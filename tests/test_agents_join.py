"""The files gitmem generates for Copilot, Cursor and Gemini CLI join gitmem's own commits, as
AGENTS.md's managed section does, and never take or overwrite a change of the developer's.

Real repositories, real `gitmem` commands and real `git commit`s through the installed hooks.
"""

from __future__ import annotations

import re
import subprocess

import pytest
from delivery_support import add_entry, own_errors

SOURCE = "import os\n\n\ndef f(x):\n    return x + 1\n\n\ndef g(x):\n    return x * 2\n"
COPILOT = ".github/instructions"
CURSOR = ".cursor/rules"
COPILOT_WIDE = f"{COPILOT}/gitmem.instructions.md"
CURSOR_WIDE = f"{CURSOR}/gitmem.mdc"
ID = re.compile(r"\[(\d{8}-[0-9a-f]{8})\]")


@pytest.fixture
def served(repo):
    """A project whose memory serves Copilot and Cursor, with everything `gitmem init` set up committed."""
    repo.write("src/a.py", SOURCE)
    repo.write("src/b.py", SOURCE)
    repo.commit_all("initial")
    repo.gitmem("init", "--agent", "copilot", "--agent", "cursor")
    repo.commit_all("serve Copilot and Cursor")
    assert sorted(generated(repo)) == [CURSOR_WIDE, COPILOT_WIDE]
    return repo


def generated(repo) -> list[str]:
    """The generated files in the work tree."""
    return sorted(str(p.relative_to(repo.path)) for folder in (COPILOT, CURSOR)
                  for p in (repo.path / folder).glob("gitmem*"))


def in_commit(repo, rev: str = "HEAD") -> list[str]:
    return sorted(repo.git("show", "--name-only", "--format=", rev).split())


def at_head(repo, path: str) -> bytes:
    return subprocess.run(["git", "show", f"HEAD:{path}"], cwd=repo.path, capture_output=True, check=True).stdout


def scope_file(folder: str, suffix: str, names: list[str]) -> str:
    (name,) = [n for n in names if n.startswith(f"{folder}/gitmem-src-a.py-") and n.endswith(suffix)]
    return name


def assert_in_step(repo) -> None:
    """Work tree, index and HEAD hold the same bytes for every generated file; nothing else is left."""
    assert repo.git("status", "--porcelain") == ""
    for path in generated(repo):
        assert (repo.path / path).read_bytes() == at_head(repo, path), path
    errors = repo.path / ".git/gitmem/errors.log"
    assert not errors.exists() or "agent files" not in errors.read_text()
    assert own_errors(repo.path) == ""


def test_gitmems_commits_carry_the_regenerated_copilot_and_cursor_files(served):
    hazard = add_entry(served, "hazard", "a.py is shared with the mobile app.", "--anchor", "src/a.py")
    names = generated(served)
    copilot_a = scope_file(COPILOT, ".instructions.md", names)
    cursor_a = scope_file(CURSOR, ".mdc", names)
    # The new scope's files join the commit that records the entry: the agents' other files are committed.
    assert in_commit(served) == sorted([f".gitmem/entries/{hazard}.yaml", copilot_a, cursor_a])
    assert ID.findall(served.read(copilot_a)) == [hazard] and ID.findall(served.read(cursor_a)) == [hazard]
    assert_in_step(served)

    law = add_entry(served, "law", "Use tabs.")
    assert in_commit(served) == sorted([f".gitmem/entries/{law}.yaml", COPILOT_WIDE, CURSOR_WIDE])
    assert ID.findall(at_head(served, CURSOR_WIDE).decode()) == [law]
    assert_in_step(served)

    served.gitmem("revoke", hazard, "--reason", "The mobile app has its own copy now.")
    assert in_commit(served) == sorted([f".gitmem/entries/{hazard}.yaml", copilot_a, cursor_a])
    assert "Withdrawn hazard (src/a.py)" in at_head(served, copilot_a).decode()
    assert "The mobile app has its own copy now." in at_head(served, cursor_a).decode()
    assert_in_step(served)
    # gitmem knows these files as its own: uninstall takes them away with everything else.
    served.gitmem("uninstall")
    assert not (served.path / COPILOT).exists() and not (served.path / CURSOR).exists()


def test_a_scope_emptied_by_gitmems_commit_loses_its_file_in_that_commit(served):
    hazard = add_entry(served, "hazard", "a.py is shared with the mobile app.", "--anchor", "src/a.py")
    served.gitmem("revoke", hazard, "--reason", "The mobile app has its own copy now.")
    copilot_a = scope_file(COPILOT, ".instructions.md", generated(served))
    cursor_a = scope_file(CURSOR, ".mdc", generated(served))
    # Weeks later the withdrawal is no longer announced (here: its date moved back, committed by hand).
    path = f".gitmem/entries/{hazard}.yaml"
    served.write(path, re.sub(r"(revocation:\n  at: )'[^']*'", r"\1'2020-01-01T00:00:00Z'", served.read(path)))
    served.git("commit", "-q", "-m", "an old withdrawal", "--", path)
    assert copilot_a in generated(served) and served.git("status", "--porcelain") == ""
    # The next commit of gitmem's takes the emptied scope's files away with it.
    law = add_entry(served, "law", "Use tabs.")
    assert in_commit(served) == sorted([f".gitmem/entries/{law}.yaml", COPILOT_WIDE, CURSOR_WIDE, copilot_a, cursor_a])
    status = served.git("show", "--name-status", "--format=", "HEAD")
    assert f"D\t{copilot_a}" in status and f"D\t{cursor_a}" in status
    assert generated(served) == [CURSOR_WIDE, COPILOT_WIDE]
    assert_in_step(served)


def test_a_developers_edit_of_a_generated_file_is_never_overwritten_nor_committed(served):
    before_cursor = at_head(served, CURSOR_WIDE)
    before_copilot = at_head(served, COPILOT_WIDE)
    # an edit may take gitmem's header out too: the file is still the one gitmem wrote here
    unstaged = "".join(line for line in served.read(CURSOR_WIDE).splitlines(keepends=True)
                       if "generated by gitmem" not in line) + "Keep this note of mine.\n"
    assert unstaged.count("\n") < served.read(CURSOR_WIDE).count("\n") + 1
    served.write(CURSOR_WIDE, unstaged)
    staged = served.read(COPILOT_WIDE).replace("# Repository memory", "# Repository memory (reviewed)")
    served.write(COPILOT_WIDE, staged)
    served.git("add", COPILOT_WIDE)

    law = add_entry(served, "law", "Use tabs.")
    assert in_commit(served) == [f".gitmem/entries/{law}.yaml"]
    assert at_head(served, CURSOR_WIDE) == before_cursor and at_head(served, COPILOT_WIDE) == before_copilot
    assert served.read(CURSOR_WIDE) == unstaged  # neither overwritten in the work tree ...
    assert served.read(COPILOT_WIDE) == staged
    assert served.git("diff", "--cached", "--name-only").split() == [COPILOT_WIDE]  # ... nor unstaged
    assert served.git("diff", "--name-only").split() == [CURSOR_WIDE]
    assert served.git("show", f":{COPILOT_WIDE}") == staged

    # A new scope's files still join: they are gitmem's alone.
    hazard = add_entry(served, "hazard", "a.py is shared with the mobile app.", "--anchor", "src/a.py")
    assert len(in_commit(served)) == 3 and f".gitmem/entries/{hazard}.yaml" in in_commit(served)
    assert served.read(CURSOR_WIDE) == unstaged and served.read(COPILOT_WIDE) == staged
    assert sorted(served.git("status", "--porcelain").splitlines()) == [f" M {CURSOR_WIDE}", f"M  {COPILOT_WIDE}"]

    # Once the developer drops the edits, the next change brings the files up to date again.
    served.git("checkout", "HEAD", "--", CURSOR_WIDE, COPILOT_WIDE)
    add_entry(served, "law", "Never log tokens.")
    assert {CURSOR_WIDE, COPILOT_WIDE} <= set(in_commit(served))
    assert law in served.read(CURSOR_WIDE) and law in served.read(COPILOT_WIDE)
    assert_in_step(served)


def test_nothing_joins_while_the_store_has_an_uncommitted_entry(served):
    hand = ".gitmem/entries/20260101-0a0a0a0a.yaml"
    served.write(hand, "id: 20260101-0a0a0a0a\nkind: law\nstatus: active\nsource: user\nbody: Keep the changelog.\n")
    law = add_entry(served, "law", "Use tabs.")
    assert in_commit(served) == [f".gitmem/entries/{law}.yaml"]  # the wide files would name 0a0a0a0a
    assert "20260101-0a0a0a0a" not in at_head(served, CURSOR_WIDE).decode()
    assert "20260101-0a0a0a0a" in served.read(CURSOR_WIDE) and law in served.read(CURSOR_WIDE)
    assert sorted(served.git("status", "--porcelain").splitlines()) == [
        f" M {CURSOR_WIDE}", f" M {COPILOT_WIDE}", f"?? {hand}"]
    # Committed together, they are in step again, and the next change joins as before.
    served.commit_all("the changelog rule")
    newer = add_entry(served, "law", "Never log tokens.")
    assert in_commit(served) == sorted([f".gitmem/entries/{newer}.yaml", COPILOT_WIDE, CURSOR_WIDE])
    assert_in_step(served)


def test_generated_files_not_yet_committed_stay_the_developers_to_add(repo):
    repo.write("src/a.py", SOURCE)
    repo.commit_all("initial")
    repo.gitmem("init", "--agent", "copilot", "--agent", "cursor")
    repo.git("add", ".gitmem")
    repo.git("commit", "-q", "-m", "set up gitmem, not the agents' files yet")
    hazard = add_entry(repo, "hazard", "a.py is shared with the mobile app.", "--anchor", "src/a.py")
    assert in_commit(repo) == [f".gitmem/entries/{hazard}.yaml"]
    untracked = sorted(line[3:] for line in repo.git("status", "--porcelain", "-uall").splitlines())
    assert untracked == generated(repo) and len(untracked) == 4


def test_a_commit_that_retires_an_entry_carries_the_regenerated_files(served):
    hazard = add_entry(served, "hazard", "g() must stay pure.", "--anchor", "src/a.py::g")
    copilot_a = scope_file(COPILOT, ".instructions.md", generated(served))
    served.write("src/a.py", SOURCE.split("\n\n\ndef g")[0] + "\n")
    served.git("add", "src/a.py")
    proc = subprocess.run(["git", "commit", "-q", "-m", "drop g"], cwd=served.path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert copilot_a in in_commit(served) and "src/a.py" in in_commit(served)
    assert f".gitmem/entries/{hazard}.yaml" in in_commit(served)
    text = at_head(served, copilot_a).decode()
    assert "Withdrawn hazard" in text and "anchored to src/a.py::g, so it no longer holds" in text
    assert ID.findall(text) == [hazard]
    assert_in_step(served)


def test_gemini_md_section_joins_gitmems_commits(repo):
    repo.write("GEMINI.md", "# Notes\n\nBuild with make.\n")
    repo.commit_all("initial")
    repo.gitmem("init", "--agent", "gemini")
    repo.commit_all("serve Gemini CLI")
    law = add_entry(repo, "law", "Use tabs.")
    assert in_commit(repo) == sorted([f".gitmem/entries/{law}.yaml", "GEMINI.md"])
    text = at_head(repo, "GEMINI.md").decode()
    assert text.startswith("# Notes\n\nBuild with make.\n") and law in text
    assert repo.git("status", "--porcelain") == ""


def test_an_entry_staged_with_stage_only_takes_the_regenerated_files_along(served):
    served.write("src/a.py", SOURCE + "\n# the developer's work in progress\n")
    law = served.gitmem("add", "law", "Use tabs.", "--stage-only").stdout.split()[0]
    staged = served.git("diff", "--cached", "--name-only").split()
    assert sorted(staged) == sorted([f".gitmem/entries/{law}.yaml", CURSOR_WIDE, COPILOT_WIDE])
    served.git("commit", "-q", "-m", "the developer's commit, with the staged entry")
    assert law in at_head(served, CURSOR_WIDE).decode() and law in at_head(served, COPILOT_WIDE).decode()
    assert served.git("status", "--porcelain").split() == ["M", "src/a.py"]  # their work stays theirs

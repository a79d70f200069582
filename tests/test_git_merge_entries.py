"""Entry files through real merges, and the pre-commit stub's list of anchored files.

Two branches that retire (or re-anchor) the same entry record the same note at different times;
gitmem's merge driver for `.gitmem/entries/*.yaml` merges them without a conflict, and anything
else still conflicts with both sides kept. The pre-commit stub notices an entry file rewritten in
place (the folder's mtime does not change) and re-reads its anchors.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

APP = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
WITHOUT_G = "def f():\n    return 1\n"
UTIL = "def g():\n    return 2\n"


@pytest.fixture
def app_repo(repo):
    return repo.with_gitmem({"src/app.py": APP, "docs/index.md": "docs\n"})


def add(repo, body, anchor):
    return repo.gitmem("add", "hazard", body, "--anchor", anchor).stdout.split()[0]


def next_second():
    """The hooks stamp notes with the wall clock, to the second: make the next one differ."""
    time.sleep(1.05 - time.time() % 1)


def at_of(text, key="revocation"):
    """The `at:` of the entry file's `revocation` note (or its first `moves` item)."""
    lines = text.splitlines()
    start = lines.index(f"{key}:")
    return next(line.split(":", 1)[1].strip().strip("'") for line in lines[start + 1:] if "at:" in line)


def alice_retires(repo) -> tuple[str, str]:
    """(entry, its file): an entry on g, which alice then deletes from main (her pre-commit
    retires it), and a new branch bob from main a second later."""
    entry = add(repo, "g is slow", "src/app.py::g")
    path = f".gitmem/entries/{entry}.yaml"
    repo.git("switch", "-q", "-c", "alice")
    repo.write("src/app.py", WITHOUT_G)
    repo.git("commit", "-q", "-am", "alice: remove dead g")
    next_second()
    repo.git("switch", "-q", "-c", "bob", "main")
    return entry, path


def two_branches_retire(repo):
    """alice, then bob a second later, each delete g from main; each commit's pre-commit retires
    the entry at its own time."""
    entry, path = alice_retires(repo)
    repo.write("src/app.py", WITHOUT_G)
    repo.git("commit", "-q", "-am", "bob: remove dead g")
    repo.git("switch", "-q", "main")
    alice, bob = repo.git("show", f"alice:{path}"), repo.git("show", f"bob:{path}")
    assert "status: revoked" in alice and "status: revoked" in bob
    assert at_of(alice) < at_of(bob)
    return entry, path, alice


@pytest.mark.parametrize("into", ["main", "bob"])
def test_the_same_retirement_on_two_branches_merges_cleanly(app_repo, into):
    entry, path, alice = two_branches_retire(app_repo)
    if into == "main":  # alice lands first; bob's later note is ours' conflict-free twin
        app_repo.git("merge", "-q", "alice")
        other = "bob"
    else:  # bob's branch takes alice's: the earlier note is theirs
        app_repo.git("switch", "-q", "bob")
        other = "alice"
    proc = subprocess.run(["git", "merge", "--no-edit", other], cwd=app_repo.path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "CONFLICT" not in proc.stdout
    # the earlier note, byte for byte as alice's pre-commit wrote it
    assert app_repo.read(path) == alice
    assert app_repo.git("show", f"HEAD:{path}") == alice
    assert len(app_repo.git("log", "-1", "--format=%P").split()) == 2  # a real merge commit
    assert app_repo.git("status", "--porcelain") == ""
    retired = app_repo.entries()[entry]
    assert retired["status"] == "revoked"
    assert "`g` was removed from src/app.py" in retired["revocation"]["reason"]


def test_the_same_move_on_two_branches_merges_cleanly(app_repo):
    entry = add(app_repo, "g is slow", "src/app.py::g")
    path = f".gitmem/entries/{entry}.yaml"
    app_repo.git("switch", "-q", "-c", "alice")
    app_repo.write("src/app.py", WITHOUT_G)
    app_repo.write("src/util.py", UTIL)
    app_repo.commit_all("alice: move g to util")
    next_second()
    app_repo.git("switch", "-q", "-c", "bob", "main")
    app_repo.write("src/app.py", WITHOUT_G)
    app_repo.write("src/util.py", UTIL)
    app_repo.commit_all("bob: move g to util")
    alice, bob = app_repo.git("show", f"alice:{path}"), app_repo.git("show", f"bob:{path}")
    assert at_of(alice, "moves") < at_of(bob, "moves")
    app_repo.git("merge", "--no-edit", "alice")  # on bob: the earlier move is theirs
    assert app_repo.read(path) == alice
    assert app_repo.git("status", "--porcelain") == ""
    assert app_repo.entries()[entry]["anchor"] == "src/util.py::g"


def alice_moves_bob_removes(repo) -> tuple[str, str]:
    """(entry, its file): an entry on g; alice moves g to util.py (her pre-commit re-anchors the
    entry), bob deletes g (his retires it)."""
    entry = add(repo, "g is slow", "src/app.py::g")
    repo.git("switch", "-q", "-c", "alice")
    repo.write("src/app.py", WITHOUT_G)
    repo.write("src/util.py", UTIL)
    repo.commit_all("alice: move g to util")
    repo.git("switch", "-q", "-c", "bob", "main")
    repo.write("src/app.py", WITHOUT_G)
    repo.commit_all("bob: remove dead g")
    path = f".gitmem/entries/{entry}.yaml"
    assert "status: revoked" in repo.git("show", f"bob:{path}")
    return entry, path


@pytest.mark.parametrize("into", ["alice", "bob"])
def test_a_move_and_a_retirement_of_the_same_entry_merge_to_what_the_merged_code_says(app_repo, into):
    """Their code merges cleanly, and so must the entry: what the merge decides is whether g is
    still declared where the move put it: it is (alice's util.py), so the entry stays, anchored there."""
    entry, path = alice_moves_bob_removes(app_repo)
    app_repo.git("switch", "-q", into)
    proc = subprocess.run(["git", "merge", "--no-edit", "bob" if into == "alice" else "alice"],
                          cwd=app_repo.path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert app_repo.git("status", "--porcelain") == ""
    merged = app_repo.entries()[entry]
    assert merged["status"] == "active" and merged["anchor"] == "src/util.py::g"
    assert "<<<<<<<" not in app_repo.read(path)


def test_a_move_and_a_retirement_merge_to_retired_where_the_merged_code_lost_it_too(app_repo):
    """As above, but the branch that moved g also dropped it from util.py later: the merged code
    has no g anywhere, so the merged entry is retired (once, with a visible note)."""
    entry, _ = alice_moves_bob_removes(app_repo)
    app_repo.git("switch", "-q", "alice")
    app_repo.write("src/util.py", "def h():\n    return 3\n")
    app_repo.commit_all("alice: g is unused after all")
    assert app_repo.entries()[entry]["status"] == "revoked"
    proc = subprocess.run(["git", "merge", "--no-edit", "bob"], cwd=app_repo.path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert app_repo.entries()[entry]["status"] == "revoked"
    assert app_repo.git("status", "--porcelain") == ""


def test_different_notes_still_conflict_with_both_sides_kept(app_repo):
    entry, path = alice_retires(app_repo)
    app_repo.gitmem("revoke", entry, "--reason", "g was rewritten in C; it is fast now")
    bob = app_repo.git("show", f"bob:{path}")
    assert "fast now" in bob
    app_repo.git("switch", "-q", "main")
    app_repo.git("merge", "-q", "alice")
    alice = app_repo.git("show", f"alice:{path}")
    proc = subprocess.run(["git", "merge", "--no-edit", "bob"], cwd=app_repo.path, capture_output=True, text=True)
    assert proc.returncode == 1 and f"CONFLICT (content): Merge conflict in {path}" in proc.stdout
    assert app_repo.git("diff", "--name-only", "--diff-filter=U").split() == [path]
    text = app_repo.read(path)
    assert text.count("<<<<<<< ") == text.count(">>>>>>> ") == 1 and "=======\n" in text
    # nothing of either side is dropped: both notes, with their own times
    assert "`g` was removed from src/app.py" in text and "fast now" in text
    assert f"'{at_of(alice)}'" in text and f"'{at_of(bob)}'" in text
    app_repo.git("merge", "--abort")


def driver(tmp_path, base, ours, theirs, marker="7"):
    """The driver as git runs it: %O %A %B %L %P, the result in %A."""
    files = []
    for name, text in (("base", base), ("ours", ours), ("theirs", theirs)):
        file = tmp_path / f"{name}.yaml"
        file.write_bytes(text.encode())
        files.append(str(file))
    proc = subprocess.run([sys.executable, "-I", "-m", "gitmem.githooks.merge_entries", *files, marker,
                           ".gitmem/entries/x.yaml", "%S", "%X", "%Y"], capture_output=True, text=True)
    return proc.returncode, (tmp_path / "ours.yaml").read_bytes().decode()


ENTRY = "id: x\nkind: {kind}\nsource: user\nstatus: {status}\nbody: {body}\nexpires:\n"
NOTE = "revocation:\n  at: '{at}'\n  reason: {reason}\n  commit:\n"


def test_driver_keeps_a_change_only_one_side_made_to_the_note(tmp_path):
    base = ENTRY.format(kind="hazard", status="revoked", body="b") + NOTE.format(at="2026-01-01T00:00:05Z", reason="r")
    ours = ENTRY.format(kind="hazard", status="revoked", body="better") + NOTE.format(at="2026-01-01T00:00:05Z", reason="r")
    theirs = ENTRY.format(kind="hazard", status="revoked", body="b") + NOTE.format(at="2026-01-02T00:00:00Z", reason="r")
    code, merged = driver(tmp_path, base, ours, theirs)
    assert code == 0
    assert merged == ENTRY.format(kind="hazard", status="revoked", body="better") + NOTE.format(at="2026-01-02T00:00:00Z", reason="r")


def test_driver_reconciles_the_time_and_merges_the_rest(tmp_path):
    base = ENTRY.format(kind="hazard", status="active", body="b")
    ours = ENTRY.format(kind="hazard", status="revoked", body="b") + NOTE.format(at="2026-01-01T00:00:09Z", reason="gone")
    theirs = (ENTRY.format(kind="law", status="revoked", body="b")
              + NOTE.format(at="2026-01-01T00:00:03Z", reason="gone")).replace("\n", "\r\n")
    code, merged = driver(tmp_path, base.replace("\n", "\r\n"), ours.replace("\n", "\r\n"), theirs)
    assert code == 0, merged
    assert merged == theirs  # the earlier time, and theirs' other change


MOVE = "moves:\n- at: '2026-01-01T00:00:07Z'\n  from: a.py::g\n  to: b.py::g\n  why: moved\n"
RETIRED = "'`g` was removed from a.py. The entry was anchored to a.py::g, so it no longer holds.'"


@pytest.mark.parametrize("ours_extra", ["", "reviewed_by: carol\n"])
def test_driver_lets_a_retirement_give_way_to_a_move_only_where_the_hooks_alone_changed_it(tmp_path, ours_extra):
    """A hook's retirement (ours) gives way to a hook's move (theirs); a team's own key added beside
    the retirement makes it a person's call: a conflict with both sides kept."""
    base = ENTRY.format(kind="hazard", status="active", body="b")
    ours = ENTRY.format(kind="hazard", status="revoked", body="b") + ours_extra + NOTE.format(
        at="2026-01-01T00:00:09Z", reason=RETIRED)
    theirs = base + MOVE
    code, merged = driver(tmp_path, base, ours, theirs)
    if ours_extra:
        assert code == 1 and "<<<<<<<" in merged and "reviewed_by: carol" in merged and "moves:" in merged
    else:
        assert (code, merged) == (0, theirs)


def test_driver_never_lets_a_developers_revocation_give_way(tmp_path):
    base = ENTRY.format(kind="hazard", status="active", body="b")
    ours = ENTRY.format(kind="hazard", status="revoked", body="b") + NOTE.format(
        at="2026-01-01T00:00:09Z", reason="g was rewritten in C; it is fast now")
    code, merged = driver(tmp_path, base, ours, base + MOVE)
    assert code == 1 and "fast now" in merged and "moves:" in merged


def test_a_revocation_and_a_reworded_rule_reach_a_person_as_a_conflict(app_repo):
    """Line by line the two merge cleanly (the status and note on one side, the body on the
    other), leaving the withdrawal and its reason standing for words their author never saw."""
    entry = app_repo.gitmem("add", "law", "Use tabs in Python.").stdout.split()[0]
    path = f".gitmem/entries/{entry}.yaml"
    app_repo.git("switch", "-q", "-c", "reword")
    app_repo.write(path, app_repo.read(path).replace("Use tabs in Python.", "Use tabs in Python and Go."))
    app_repo.git("commit", "-q", "-am", "reword the rule")
    app_repo.git("switch", "-q", "main")
    app_repo.gitmem("revoke", entry, "--reason", "PEP 8 now")
    merge = subprocess.run(["git", "merge", "-q", "--no-edit", "reword"], cwd=app_repo.path, capture_output=True,
                           text=True)
    assert merge.returncode != 0 and "CONFLICT" in merge.stdout + merge.stderr, merge
    text = app_repo.read(path)
    assert "<<<<<<<" in text and "PEP 8 now" in text and "Use tabs in Python and Go." in text


@pytest.mark.parametrize("status_line", ["status: active\n", "", "status: active  # hand-written\n"])
def test_driver_a_developers_revocation_against_a_reworded_rule_is_a_whole_conflict(tmp_path, status_line):
    """However the entry says it is active (its status line left out, a comment after it); a
    team's own key added beside the rule changes nothing it says, and merges."""
    def entry(status: str, body: str, extra: str = "") -> str:  # status and body lines apart, as gitmem writes them
        return (f"id: x\nkind: law\n{status}source: user\nbody: {body}\nanchor:\ntriggers: []\nsupersedes: []\n"
                f"superseded_by:\nexpires:\n{extra}")
    base = entry(status_line, "Use tabs.")
    revoked = entry("status: revoked\n", "Use tabs.", NOTE.format(at="2026-01-01T00:00:09Z", reason="PEP 8 now"))
    code, merged = driver(tmp_path, base, revoked, entry(status_line, "Use tabs in Go too."))
    assert code == 1 and merged.startswith("<<<<<<< ") and "PEP 8 now" in merged and "in Go too" in merged, merged
    reviewed = entry(status_line, "Use tabs.").replace("triggers: []\n", "triggers: []\nreviewed_by: alice\n")
    code, merged = driver(tmp_path, base, revoked, reviewed)
    assert code == 0 and "reviewed_by: alice" in merged and "status: revoked" in merged, merged


def test_driver_conflict_uses_gits_marker_size_and_keeps_both_sides(tmp_path):
    base = ENTRY.format(kind="hazard", status="active", body="b")
    ours = ENTRY.format(kind="hazard", status="revoked", body="b") + NOTE.format(at="2026-01-01T00:00:09Z", reason="one")
    theirs = ENTRY.format(kind="hazard", status="revoked", body="b") + NOTE.format(at="2026-01-01T00:00:03Z", reason="two")
    code, merged = driver(tmp_path, base, ours, theirs, marker="10")
    assert code == 1
    assert "<" * 10 + " ours:.gitmem/entries/x.yaml\n" in merged and ">" * 10 + " theirs:" in merged
    assert "reason: one" in merged and "reason: two" in merged
    assert "00:00:09Z" in merged and "00:00:03Z" in merged


def test_init_configures_the_driver_and_uninstall_removes_it(repo):
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit_all("first")
    repo.write(".gitmem/.gitattributes", "entries/*.yaml diff=gitmem\n")  # as earlier versions wrote it
    repo.gitmem("init")
    repo.gitmem("init")  # idempotent
    assert repo.read(".gitmem/.gitattributes") == "* text eol=lf\nentries/*.yaml diff=gitmem merge=gitmem-entries\n"
    assert "from gitmem.githooks.merge_entries import main\n" in repo.git("config", "merge.gitmem-entries.driver")
    assert repo.git("config", "merge.gitmem-entries.driver").rstrip().endswith("%A %O %B")
    assert repo.git("check-attr", "merge", "--", ".gitmem/entries/x.yaml").strip().endswith("merge: gitmem-entries")
    assert "gitmem-entries" not in (repo.path / ".git/info/attributes").read_text()
    # git's textconv cache stays off: it would keep a plain rendering made while the interpreter was gone
    repo.gitmem("add", "law", "Use tabs.")
    repo.git("log", "-p", "-1")
    assert not repo.git("show-ref", "refs/notes/textconv/gitmem", check=False)
    repo.gitmem("uninstall")
    assert repo.git("config", "--get-regexp", "^merge\\.gitmem-entries\\.", check=False) == ""
    assert not (repo.path / ".git/info/attributes").exists()  # init made it: uninstall takes it away


def test_an_entry_rewritten_in_place_is_rechecked(app_repo):
    entry = add(app_repo, "g is slow", "src/app.py::g")
    path = app_repo.path / f".gitmem/entries/{entry}.yaml"
    app_repo.write("src/other.py", "def h():\n    return 3\n")
    app_repo.git("add", "src/other.py")
    app_repo.git("commit", "-q", "-m", "add other.py")
    anchored = app_repo.path / ".git/gitmem/anchored-paths.sh"
    assert anchored.read_text() == "set -- ':(literal)src/app.py' # gitmem:end\n"
    folder = os.stat(path.parent).st_mtime_ns
    time.sleep(0.05)  # past the list's mtime on a coarse clock
    # re-point the entry at other.py::h, saved in place as editors do: the folder does not change
    text = path.read_text().replace("path: src/app.py", "path: src/other.py").replace("symbol: g", "symbol: h")
    with open(path, "r+", encoding="utf-8") as handle:
        handle.write(text)
        handle.truncate()
    assert os.stat(path.parent).st_mtime_ns == folder
    app_repo.git("commit", "-q", "-am", "point the hazard at h")
    assert anchored.read_text() == "set -- ':(literal)src/other.py' # gitmem:end\n"
    app_repo.git("rm", "-q", "src/other.py")
    app_repo.git("commit", "-q", "-m", "remove other.py")
    retired = app_repo.entries()[entry]
    assert retired["status"] == "revoked"
    assert "src/other.py was deleted" in retired["revocation"]["reason"]
    assert app_repo.git("status", "--porcelain") == ""


def test_the_stub_starts_python_only_when_an_entry_changed(app_repo):
    """A commit of an unanchored file is answered in shell while no entry file changed; after an
    entry is rewritten in place, the stub goes to Python, which rebuilds the index and the list."""
    entry = add(app_repo, "g is slow", "src/app.py::g")
    index = app_repo.path / ".git/gitmem/index.json"
    index.write_text("{not json")  # only Python's index.current() would rebuild it
    app_repo.write("docs/index.md", "more docs\n")
    app_repo.commit_all("docs")
    assert index.read_text() == "{not json"
    time.sleep(0.05)
    path = app_repo.path / f".gitmem/entries/{entry}.yaml"
    with open(path, "r+", encoding="utf-8") as handle:
        text = handle.read().replace("body: g is slow", "body: g is slow (quadratic)")
        handle.seek(0)
        handle.write(text)
        handle.truncate()
    app_repo.write("docs/index.md", "even more docs\n")
    app_repo.git("commit", "-q", "-am", "docs and a clearer note")
    assert index.read_text() != "{not json"
    assert app_repo.entries()[entry]["body"] == "g is slow (quadratic)"


@pytest.mark.parametrize("conflict", [False, True])
@pytest.mark.parametrize("interpreter", ["gone", "without gitmem"])
def test_without_its_interpreter_the_driver_merges_as_git_does(app_repo, tmp_path, conflict, interpreter):
    """The venv `gitmem init` recorded is gone, or no longer has gitmem: entry files merge with git's
    text merge (its conflict markers, of the attribute's size), never a conflict with only our side
    in the file."""
    import shlex
    import sys

    from gitmem.githooks.install import ENTRY_MERGE_DRIVER

    entry = add(app_repo, "g is slow", "src/app.py::g")
    path = f".gitmem/entries/{entry}.yaml"
    command = app_repo.git("config", f"merge.{ENTRY_MERGE_DRIVER}.driver").strip()
    assert shlex.quote(sys.executable) in command, command
    other = tmp_path / "gone" / "python"
    if interpreter == "without gitmem":  # the base interpreter the venv was made from
        other = Path(sys.base_prefix) / "bin" / Path(sys.executable).name
        probe = subprocess.run([str(other), "-I", "-c", "import gitmem"], capture_output=True)
        assert other.exists() and probe.returncode != 0
    app_repo.git("config", f"merge.{ENTRY_MERGE_DRIVER}.driver",
                 command.replace(shlex.quote(sys.executable), shlex.quote(str(other))))
    with open(app_repo.path / ".git/info/attributes", "a", encoding="utf-8") as handle:
        handle.write("*.yaml conflict-marker-size=10\n")
    app_repo.git("switch", "-q", "-c", "other")
    theirs = "body: g is slow (tracked in #7)" if conflict else "body: g is slow"
    app_repo.write(path, app_repo.read(path).replace("body: g is slow", theirs).replace("triggers: []", "triggers: [src/**]"))
    app_repo.git("commit", "-q", "--no-verify", "-am", "theirs")
    app_repo.git("switch", "-q", "main")
    app_repo.write(path, app_repo.read(path).replace("body: g is slow", "body: g is slow (quadratic)"))
    app_repo.git("commit", "-q", "--no-verify", "-am", "ours")
    proc = subprocess.run(["git", "merge", "--no-edit", "other"], cwd=app_repo.path, capture_output=True, text=True)
    text = app_repo.read(path)
    assert "triggers: [src/**]" in text and "(quadratic)" in text
    if not conflict:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert app_repo.git("show", f"HEAD:{path}") == text and "<<<" not in text
    else:
        assert proc.returncode == 1 and f"CONFLICT (content): Merge conflict in {path}" in proc.stdout
        assert "<" * 10 + f" ours:{path}\n" in text and "=" * 10 + "\n" in text and ">" * 10 + f" theirs:{path}\n" in text
        assert "(tracked in #7)" in text
        app_repo.git("merge", "--abort")


@pytest.mark.parametrize("interpreter", ["gone", "without gitmem"])
def test_without_its_interpreter_git_shows_entry_diffs_as_plain_text(app_repo, tmp_path, interpreter):
    """`git diff`, `git show` and `git log -p` of an entry never fail for want of gitmem's rendering."""
    import shlex
    import sys

    from gitmem.githooks.install import TEXTCONV_KEY

    entry = add(app_repo, "g is slow", "src/app.py::g")
    path = f".gitmem/entries/{entry}.yaml"
    app_repo.write(path, app_repo.read(path).replace("g is slow", "g is\u200bslow"))
    app_repo.git("commit", "-q", "--no-verify", "-am", "a hidden character")
    command = app_repo.git("config", TEXTCONV_KEY).strip()
    assert "+body: g is<U+200B>slow" in app_repo.git("show", "HEAD")  # gitmem's rendering while it is there
    other = tmp_path / "gone" / "python"
    if interpreter == "without gitmem":
        other = Path(sys.base_prefix) / "bin" / Path(sys.executable).name
    app_repo.git("config", TEXTCONV_KEY, command.replace(shlex.quote(sys.executable), shlex.quote(str(other))))
    for args in (["show", "HEAD"], ["log", "-p", "-1"]):
        proc = subprocess.run(["git", *args], cwd=app_repo.path, capture_output=True, text=True)
        # the file as it is (or, where the interpreter still finds gitmem's folder, its rendering)
        assert proc.returncode == 0 and ("+body: g is\u200bslow" in proc.stdout or "+body: g is<U+200B>slow"
                                         in proc.stdout), proc.stderr
        if interpreter == "gone":
            assert "+body: g is\u200bslow" in proc.stdout

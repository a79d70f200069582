"""Anchors stay true through the rest of git's ways of making history: pending re-checks only land
where they hold, cherry-pick / revert / am, amend and squash, and partial commits beside the
developer's own edit of an entry. Real repositories, real git commands, the installed hooks."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

APP = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
WITHOUT_G = "def f():\n    return 1\n"


@pytest.fixture
def app_repo(repo):
    return repo.with_gitmem({"src/app.py": APP, "docs/index.md": "docs\n"})


def add(repo, kind, body, anchor=None):
    args = ["add", kind, body] + (["--anchor", anchor] if anchor else [])
    return repo.gitmem(*args).stdout.split()[0]


def entry_file(entry):
    return f".gitmem/entries/{entry}.yaml"


def status_at(repo, entry, rev="HEAD"):
    """The entry's status as committed at `rev` ("" where the file is absent)."""
    text = repo.git("show", f"{rev}:{entry_file(entry)}", check=False)
    return next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("status:")), "")


def status_in(text):
    return next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("status:"))


def pending(repo):
    folder = repo.path / ".git/gitmem/pending"
    return sorted(p.name for p in folder.glob("*.json")) if folder.is_dir() else []


def subjects(repo, n=3, rev="HEAD"):
    return repo.git("log", f"-{n}", "--format=%s", rev).splitlines()


def wait_until_settled(repo, start_s=15.0):
    """Until nothing is pending (gitmem's background retry commits what waited for a series):
    while the retry holds its lock, however slow a loaded machine makes it, and start_s for it
    to start; then it has given up or finished."""
    from gitmem.base.files import is_locked
    from gitmem.store.commit import RETRY_FOR_S, RETRY_LOCK

    lock = repo.path / ".git/gitmem" / RETRY_LOCK
    started = time.monotonic()
    while pending(repo) and time.monotonic() - started < start_s + RETRY_FOR_S:
        if not is_locked(lock) and time.monotonic() - started > start_s:
            break
        time.sleep(0.1)
    assert pending(repo) == []


def drop_g_without_hooks(repo, message="teammate: drop g (no gitmem)"):
    repo.write("src/app.py", WITHOUT_G)
    repo.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-a", "-m", message)


# -- 1. a pending re-check lands only where it still holds ----------------------------------------

def feature_rebased_detached(r) -> str:
    """An entry on g; a feature branch; g dropped on main by a teammate without gitmem; then a
    detached copy of feature rebased onto main, which lacks g: its re-check waits, pending."""
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    r.git("switch", "-q", "-c", "feature")
    r.write("feat.txt", "feat\n")
    r.commit_all("feature work")
    r.git("switch", "-q", "main")
    drop_g_without_hooks(r)
    r.git("switch", "-q", "--detach", "feature")
    r.git("rebase", "-q", "main")
    assert len(pending(r)) == 1
    return entry


def test_a_detached_rebase_pending_recheck_is_not_replayed_onto_another_branch(app_repo):
    r = app_repo
    entry = feature_rebased_detached(r)
    feature_tip = r.git("rev-parse", "feature").strip()
    r.git("switch", "-q", "feature")  # g is still here: the retirement does not hold on feature
    assert pending(r) == []
    assert r.git("rev-parse", "HEAD").strip() == feature_tip  # no gitmem commit on the developer's branch
    assert "def g" in r.read("src/app.py")
    assert status_at(r, entry) == "active" and status_in(r.read(entry_file(entry))) == "active"
    assert r.entries()[entry]["status"] == "active"
    assert r.git("status", "--porcelain") == ""


def test_a_detached_merge_pending_recheck_is_not_replayed_onto_another_branch(app_repo):
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    r.git("switch", "-q", "-c", "cleanup")
    drop_g_without_hooks(r)
    r.git("switch", "-q", "main")
    r.write("docs/index.md", "diverge\n")
    r.commit_all("docs on main")
    main_tip = r.git("rev-parse", "HEAD").strip()
    r.git("switch", "-q", "--detach", "HEAD")
    r.git("merge", "-q", "--no-edit", "cleanup")
    assert len(pending(r)) == 1
    r.git("switch", "-q", "main")
    assert pending(r) == []
    assert r.git("rev-parse", "HEAD").strip() == main_tip
    assert status_at(r, entry) == "active"


def test_a_pending_recheck_is_committed_on_a_branch_made_where_it_was_computed(app_repo):
    r = app_repo
    entry = feature_rebased_detached(r)
    rebased = r.git("rev-parse", "HEAD").strip()
    r.git("switch", "-q", "-c", "try-on-main")  # the same commit, now on a branch: it holds here
    assert pending(r) == []
    assert subjects(r, 1) == ["gitmem: re-check anchors after rebase: 1 retired, 0 re-anchored"]
    assert r.git("rev-parse", "HEAD~1").strip() == rebased
    assert status_at(r, entry) == "revoked"
    assert status_at(r, entry, "feature") == "active"
    assert r.git("status", "--porcelain") == ""


def test_an_entry_recorded_pending_lands_retired_where_its_declaration_is_not(app_repo):
    """On a detached HEAD (a pull request checked out) the developer adds k() and records a hazard
    on it: kept pending. Switching back to main commits it there, where k() never existed: it is
    recorded, retired with a note that says why, not committed as true of code that is not there.
    One anchored to g(), which main has, lands active."""
    r = app_repo
    r.git("switch", "-q", "--detach", "HEAD")
    r.write("src/app.py", APP + "\n\ndef k():\n    return 3\n")
    r.commit_all("add k (detached)")
    on_k = add(r, "hazard", "k is slow", "src/app.py::k")
    on_g = add(r, "hazard", "g is slow", "src/app.py::g")
    r.write("src/extra.py", "X = 1\n")
    r.commit_all("add extra.py (detached)")
    on_file = add(r, "law", "extra.py holds constants only", "src/extra.py")
    assert len(pending(r)) == 3
    switched = subprocess.run(["git", "switch", "-q", "main"], cwd=r.path, capture_output=True, text=True)
    assert switched.returncode == 0 and f"{on_k} recorded retired" in switched.stderr, switched
    assert pending(r) == []
    assert status_at(r, on_k) == "revoked" and status_at(r, on_g) == "active"
    assert status_at(r, on_file) == "revoked"  # a file anchor too: main has no src/extra.py
    reason = r.entries()[on_k]["revocation"]["reason"]
    assert "`k` is not declared in src/app.py" in reason and "waited pending" in reason
    assert r.gitmem("check").returncode == 0  # every active anchor resolves
    assert r.git("status", "--porcelain") == ""


def test_an_entry_recorded_pending_follows_its_declaration_renamed_where_it_lands(app_repo):
    """Recorded on a detached HEAD at an older commit, on g(); main has since renamed g() to
    slow_g() with the same body: the entry lands on main re-anchored to slow_g, not retired."""
    r = app_repo
    r.write("src/app.py", APP.replace("def g(", "def slow_g("))
    r.commit_all("rename g")
    r.git("switch", "-q", "--detach", "HEAD~1")
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    assert len(pending(r)) == 1
    switched = subprocess.run(["git", "switch", "-q", "main"], cwd=r.path, capture_output=True, text=True)
    assert switched.returncode == 0 and f"{entry} re-anchored to src/app.py::slow_g" in switched.stderr, switched
    assert pending(r) == []
    landed = r.entries()[entry]
    assert landed["status"] == "active" and landed["anchor"] == "src/app.py::slow_g"
    assert r.git("status", "--porcelain") == ""


def test_a_pending_recheck_leaves_out_an_entry_changed_since(app_repo):
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    other = add(r, "law", "g returns an int", "src/app.py::g")
    r.git("switch", "-q", "-c", "cleanup")
    drop_g_without_hooks(r)
    r.git("switch", "-q", "main")
    r.git("switch", "-q", "--detach", "HEAD")
    r.git("merge", "-q", "--ff-only", "cleanup")  # both entries' retirement waits: HEAD is detached
    assert len(pending(r)) == 1
    # Still detached, the developer marks one entry superseded by hand and commits that.
    path = entry_file(entry)
    r.write(path, r.read(path).replace("status: active", "status: superseded"))
    r.commit_all("supersede the hazard by hand")
    r.git("switch", "-q", "-c", "keep")  # a descendant, the anchored file as it was: it holds
    assert pending(r) == []
    assert subjects(r, 2) == ["gitmem: re-check anchors after merge: 2 retired, 0 re-anchored (1 left out: changed since)",
                              "supersede the hazard by hand"]
    body = r.git("log", "-1", "--format=%b")
    assert f"Gitmem-Entry: {other}" in body and entry not in body
    assert status_at(r, entry) == "superseded"  # left as the developer committed it
    assert status_at(r, other) == "revoked"
    assert r.git("status", "--porcelain") == ""


def test_a_recheck_pending_during_a_rebase_is_committed_when_the_rebase_finishes(app_repo):
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    r.git("switch", "-q", "-c", "cleanup")
    drop_g_without_hooks(r)
    r.git("switch", "-q", "main")
    r.git("switch", "-q", "-c", "feature")
    r.write("feat.txt", "feat\n")
    r.commit_all("feature work")
    # A merge made inside a rebase (HEAD detached, the rebase in progress) keeps its re-check
    # pending; the rebase then finishes on feature, where it holds.
    r.git("rebase", "-q", "--force-rebase", "--exec", "git merge -q --no-edit cleanup",
          "--exec", "ls .git/gitmem/pending > .git/pending-mid-rebase", "main")
    assert (r.path / ".git/pending-mid-rebase").read_text().count(".json") == 1  # it did wait
    assert pending(r) == []
    assert r.git("symbolic-ref", "HEAD").strip() == "refs/heads/feature"
    assert "def g" not in r.read("src/app.py")
    assert status_at(r, entry) == "revoked"
    assert r.git("log", "--format=%s", "main..feature").count("gitmem: re-check anchors") == 1
    assert r.git("status", "--porcelain") == ""


# -- 3. cherry-pick, revert and am run no pre-commit ----------------------------------------------

def test_cherry_pick_of_a_removal_retires_in_a_follow_up_commit(app_repo):
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    r.git("switch", "-q", "-c", "hotfix")
    drop_g_without_hooks(r, "hotfix: drop g")
    r.git("switch", "-q", "main")
    r.git("cherry-pick", "hotfix")
    assert subjects(r, 2) == ["gitmem: re-check anchors after cherry-pick: 1 retired, 0 re-anchored", "hotfix: drop g"]
    assert status_at(r, entry) == "revoked"
    assert r.git("status", "--porcelain") == ""
    assert not (r.path / ".git/CHERRY_PICK_HEAD").exists()


def test_a_merge_retires_an_entry_it_brings_in_whose_declaration_the_other_side_removed(app_repo):
    """The entry was recorded on a branch where g() exists; main removed g() meanwhile. The merge
    changes no anchored file from main's side, so only a re-check from the branch's side sees that
    g() is gone (the entry stayed active, anchored to nothing). One that still holds stays."""
    r = app_repo
    r.git("switch", "-q", "-c", "feature")
    gone = add(r, "hazard", "g is slow", "src/app.py::g")
    kept = add(r, "hazard", "f is hot", "src/app.py::f")
    r.git("switch", "-q", "main")
    drop_g_without_hooks(r, "main: drop g")
    removal = r.git("rev-parse", "HEAD").strip()
    r.git("merge", "-q", "--no-edit", "feature")
    assert subjects(r, 2) == ["gitmem: re-check anchors after merge: 1 retired, 0 re-anchored",
                              "Merge branch 'feature'"]
    assert status_at(r, gone) == "revoked" and status_at(r, kept) == "active"
    assert f"commit: {removal}" in r.git("show", f"HEAD:{entry_file(gone)}")
    assert r.git("status", "--porcelain") == ""
    assert "all anchors resolve" in r.gitmem("check").stdout


@pytest.mark.parametrize("how", ["merge concluded by git commit", "octopus after a fast-forward", "pull --rebase",
                                 "cherry-pick concluded by git commit"])
def test_entries_another_line_of_history_brings_in_are_re_checked_against_this_one(app_repo, tmp_path, how):
    """The same as a merge, where the change reaches the branch otherwise: a merge stopped on a
    conflict and concluded by `git commit` (pre-commit checks the first parent only), an octopus
    merge whose first branch was a fast-forward, local commits replayed onto an upstream that
    brought the entry (`git pull --rebase`), and a cherry-pick of the entry with a docs change that
    stopped on a conflict and was concluded by `git commit` (git names what it copied only then)."""
    r = app_repo
    if how == "pull --rebase":
        upstream = tmp_path / "upstream"
        subprocess.run(["git", "clone", "-q", "--bare", str(r.path), str(upstream)], check=True)
        r.git("remote", "add", "origin", str(upstream))
        r.git("fetch", "-q", "origin")
        r.git("branch", "-q", "--set-upstream-to", "origin/main")
        teammate = tmp_path / "teammate"
        subprocess.run(["git", "clone", "-q", str(upstream), str(teammate)], check=True)
        from conftest import GitRepo
        mate = GitRepo(teammate)
        mate.git("config", "user.name", "T")
        mate.git("config", "user.email", "t@example.com")
        mate.gitmem("init")
        entry = add(mate, "hazard", "g is slow", "src/app.py::g")
        mate.git("push", "-q", "origin", "main")
        drop_g_without_hooks(r, "drop g here")
        r.git("pull", "-q", "--rebase")
    else:
        r.git("switch", "-q", "-c", "feature")
        entry = add(r, "hazard", "g is slow", "src/app.py::g")
        r.write("docs/index.md", "feature docs\n")
        if how.startswith("cherry-pick"):  # one commit brings both, so picking it stops on the docs
            r.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-a", "--amend", "-m", "g is slow, and docs")
        else:
            r.git("commit", "-q", "-a", "-m", "feature docs")
        r.git("switch", "-q", "main")
        drop_g_without_hooks(r, "drop g")
        if how == "octopus after a fast-forward":
            r.git("switch", "-q", "-c", "ahead")
            r.write("NOTES.md", "notes\n")
            r.git("add", "NOTES.md")
            r.git("commit", "-q", "-m", "ahead")
            r.git("switch", "-q", "main")
            r.git("merge", "-q", "--no-edit", "ahead", "feature")
        else:
            r.write("docs/index.md", "main docs\n")
            r.git("commit", "-q", "-a", "-m", "main docs")
            if how.startswith("cherry-pick"):
                r.git("cherry-pick", "feature", check=False)  # stops on the docs conflict
            else:
                r.git("merge", "-q", "--no-edit", "feature", check=False)  # stops on the docs conflict
            r.write("docs/index.md", "both docs\n")
            r.git("add", "docs/index.md")
            r.git("commit", "-q", "--no-edit")
    assert subjects(r, 1)[0].startswith("gitmem: re-check anchors after")
    assert status_at(r, entry) == "revoked"
    assert r.git("status", "--porcelain") == ""


def test_a_half_edited_entry_file_is_still_retired_from_its_staged_version(app_repo):
    """The developer left an entry file mid-edit (it does not parse); the commit that removes its
    declaration retired nothing, silently (its anchored file was not even on the list the stub
    reads). The staged version is retired; the unstaged draft is left as it is, with a warning."""
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    add(r, "law", "The docs index stays one page.", "docs/index.md")  # the quick check's list is not empty
    draft = r.read(entry_file(entry)).replace("body: g is slow", "body: [g is slow, WIP")
    r.write(entry_file(entry), draft)
    r.gitmem("status")  # the compiled index now knows the draft (any hook call or command does that)
    r.write("src/app.py", WITHOUT_G)
    r.git("add", "src/app.py")
    proc = subprocess.run(["git", "commit", "-q", "-m", "drop g"], cwd=r.path, capture_output=True, text=True)
    assert proc.returncode == 0 and f"retired {entry}" in proc.stderr and "WARNING" in proc.stderr, proc
    assert status_at(r, entry) == "revoked"
    assert r.read(entry_file(entry)) == draft
    assert r.git("status", "--porcelain").strip() == f"M {entry_file(entry)}"
    # An entry invalid as committed has no staged version to fall back on: commits stay quick.
    r.git("add", entry_file(entry))
    r.git("commit", "-q", "--no-verify", "-m", "commit the broken draft")
    r.write("docs/index.md", "docs, again\n")
    r.git("commit", "-q", "-a", "-m", "docs")
    assert "'.'" not in (r.path / ".git/gitmem/anchored-paths.sh").read_text()


def test_an_amend_of_gitmems_commit_meant_for_the_developers_is_named_with_the_way_back(app_repo):
    """gitmem committed an entry right after the developer's commit; their `--amend` then rewrote
    gitmem's commit, not theirs. The amend says so, and its recipe folds both into theirs."""
    r = app_repo
    r.write("docs/index.md", "docs, teh first\n")
    r.git("commit", "-q", "-a", "-m", "docs (typo: teh)")
    entry = add(r, "law", "Use tabs.")
    r.write("docs/index.md", "docs, the first\n")
    proc = subprocess.run(["git", "commit", "-q", "-a", "--amend", "-m", "docs"], cwd=r.path,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "WARNING: this amend rewrote gitmem's own commit" in proc.stderr, proc
    recipe = proc.stderr.split("holding both: ", 1)[1].strip()
    subprocess.run(["sh", "-c", recipe], cwd=r.path, check=True, capture_output=True)
    assert subjects(r, 1) == ["docs"]
    assert r.git("show", "--name-only", "--format=", "HEAD").split() == [entry_file(entry), "docs/index.md"]
    assert r.git("status", "--porcelain") == ""
    plain = subprocess.run(["git", "commit", "-q", "--amend", "-m", "docs, reworded"], cwd=r.path,
                           capture_output=True, text=True)
    assert "WARNING" not in plain.stderr  # amending one's own commit says nothing


def test_revert_of_the_commit_that_added_a_declaration_retires(app_repo):
    r = app_repo
    r.write("src/app.py", APP + "\n\ndef h():\n    return 3\n")
    r.commit_all("add h")
    entry = add(r, "hazard", "h is slow", "src/app.py::h")
    r.git("revert", "--no-edit", "HEAD~1")
    assert subjects(r, 1) == ["gitmem: re-check anchors after revert: 1 retired, 0 re-anchored"]
    assert status_at(r, entry) == "revoked"
    assert r.git("status", "--porcelain") == ""


def test_cherry_pick_of_several_commits_and_a_plain_commit_after(app_repo):
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    keep = add(r, "law", "f returns an int", "src/app.py::f")
    r.git("switch", "-q", "-c", "hotfix")
    drop_g_without_hooks(r, "hotfix: drop g")
    r.write("docs/index.md", "more\n")
    r.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-a", "-m", "hotfix: docs")
    r.git("switch", "-q", "main")
    r.git("cherry-pick", "hotfix~1", "hotfix")
    # git goes on from its own copy of the index between picks: the re-check waits for the series
    # to end and is committed then by gitmem's bounded background retry
    wait_until_settled(r)
    assert status_at(r, entry) == "revoked" and status_at(r, keep) == "active"
    assert r.git("log", "--format=%s", "hotfix~2..main").count("gitmem: re-check anchors") == 1
    r.write("docs/index.md", "plain\n")
    r.commit_all("plain commit")  # an ordinary commit afterwards: nothing more from gitmem
    assert subjects(r, 1) == ["plain commit"]
    assert r.git("status", "--porcelain") == ""


@pytest.mark.parametrize("how", ["cherry-pick", "revert"])
def test_a_series_stopped_on_a_conflict_continues_and_its_re_check_follows(app_repo, how):
    """`git cherry-pick A B` (or `git revert A B`) stops on A; the resolution drops g, to which an entry
    is anchored; `--continue` commits A through pre-commit and goes on to B from git's own copy of
    the index. An entry staged into A there made git refuse B ("your local changes would be
    overwritten"): the re-check waits for the series to end instead, one follow-up commit."""
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    if how == "cherry-pick":
        r.git("switch", "-q", "-c", "team")
        r.write("src/app.py", WITHOUT_G.replace("return 1", "return 100"))
        r.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-a", "-m", "team: drop g, f=100")
        r.write("docs/index.md", "team docs\n")
        r.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-a", "-m", "team: docs")
        r.git("switch", "-q", "main")
        r.write("src/app.py", APP.replace("return 1", "return 5"))
        r.commit_all("main: f=5")
        stopped = r.git("cherry-pick", "team~1", "team", check=False)
    else:  # reverting "g added" after f changed: the revert of the first stops on f
        r.write("src/app.py", APP + "\n\ndef k():\n    return 3\n")
        r.commit_all("add k")
        entry = add(r, "hazard", "k is slow", "src/app.py::k")
        r.write("src/app.py", APP.replace("return 1", "return 5") + "\n\ndef k():\n    return 4\n")
        r.commit_all("f=5, k=4")
        r.write("docs/index.md", "more docs\n")
        r.commit_all("docs")
        stopped = r.git("revert", "--no-edit", "HEAD", "HEAD~3", check=False)
    assert "CONFLICT" in stopped or (r.path / ".git/sequencer").is_dir(), stopped
    r.write("src/app.py", WITHOUT_G.replace("return 1", "return 100") if how == "cherry-pick"
            else APP.replace("return 1", "return 5"))
    r.git("add", "src/app.py")
    proc = subprocess.run(["git", how, "--continue"], cwd=r.path, capture_output=True, text=True,
                          env={**os.environ, "GIT_EDITOR": "true"})
    assert proc.returncode == 0, proc
    assert not (r.path / ".git/sequencer").exists()
    wait_until_settled(r)
    assert status_at(r, entry) == "revoked"
    assert r.git("log", "--format=%s", "-4").count("gitmem: re-check anchors") == 1
    assert r.git("status", "--porcelain") == ""

@pytest.mark.parametrize("how", ["am", "cherry-pick"])
def test_the_last_of_a_series_stopped_on_a_conflict_continues(app_repo, tmp_path, how):
    """The last patch (or pick) of a series stops on a conflict in the docs; an earlier one dropped
    g, whose entry's re-check waits for the series. `git am --continue` (or `git cherry-pick
    --continue`) goes on from its own copy of the index after the commit's hooks return: nothing
    may be committed or staged from them ("Dirty index", "your local changes would be
    overwritten"); the re-check lands once the command is over."""
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    r.git("switch", "-q", "-c", "team")
    drop_g_without_hooks(r, "team: drop g")
    r.write("docs/index.md", "team docs\n")
    r.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-a", "-m", "team: docs")
    r.git("format-patch", "-q", "-2", "-o", str(tmp_path / "patches"))
    r.git("switch", "-q", "main")
    r.write("docs/index.md", "main docs\n")
    r.commit_all("main: docs")
    if how == "am":
        stopped = r.git("am", "-3", *sorted(str(p) for p in (tmp_path / "patches").iterdir()), check=False)
    else:
        stopped = r.git("cherry-pick", "team~1", "team", check=False)
    assert "onflict" in stopped or (r.path / ".git/rebase-apply").exists() or (r.path / ".git/sequencer").exists()
    r.write("docs/index.md", "both docs\n")
    r.git("add", "docs/index.md")
    proc = subprocess.run(["git", how, "--continue"], cwd=r.path, capture_output=True, text=True,
                          env={**os.environ, "GIT_EDITOR": "true"})
    assert proc.returncode == 0, proc
    assert not (r.path / ".git/rebase-apply").exists() and not (r.path / ".git/sequencer").exists()
    wait_until_settled(r)
    assert status_at(r, entry) == "revoked"
    assert r.git("log", "--format=%s", "-4").count("gitmem: re-check anchors") == 1
    assert r.git("status", "--porcelain") == ""

def test_am_of_a_removal_retires_in_a_follow_up_commit(app_repo, tmp_path):
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    r.git("switch", "-q", "-c", "hotfix")
    drop_g_without_hooks(r, "hotfix: drop g")
    r.git("format-patch", "-q", "-1", "-o", str(tmp_path / "patches"))
    r.git("switch", "-q", "main")
    r.git("am", "-q", *sorted(str(p) for p in (tmp_path / "patches").iterdir()))
    wait_until_settled(r)  # committed by the background retry once git am is over
    assert subjects(r, 2) == ["gitmem: re-check anchors after am: 1 retired, 0 re-anchored", "hotfix: drop g"]
    assert status_at(r, entry) == "revoked"
    assert r.git("status", "--porcelain") == "" and not (r.path / ".git/rebase-apply").exists()


def test_the_background_retry_outlasts_a_finishing_am_that_reads_as_a_rebase(app_repo):
    """`git am` deletes its state folder file by file: for a moment `rebase-apply/` is there without
    `applying`, which reads as a rebase. The retry gives up only on a state that lasts."""
    from gitmem.base.paths import find_repo
    from gitmem.store.commit import RETRY_LOCK, retry_in_background

    r = app_repo
    teardown = r.path / ".git/rebase-apply"
    teardown.mkdir()
    (teardown / "last").write_text("1\n")
    entry = add(r, "law", "Use fetch, never axios.")
    assert len(pending(r)) == 1
    lock = r.path / ".git/gitmem" / RETRY_LOCK
    retry_in_background(find_repo(str(r.path)))
    deadline = time.monotonic() + 30
    while not lock.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)  # its first look saw the folder
    (teardown / "last").unlink()
    teardown.rmdir()
    wait_until_settled(r)
    assert subjects(r, 1) == ["gitmem: record law: Use fetch, never axios."] and status_at(r, entry) == "active"


def test_the_background_retry_gives_up_on_a_rebase_that_lasts(app_repo):
    from gitmem.base.files import is_locked
    from gitmem.base.paths import find_repo
    from gitmem.store.commit import RETRY_FOR_S, RETRY_LOCK, retry_in_background

    r = app_repo
    (r.path / ".git/rebase-apply").mkdir()
    add(r, "law", "Use fetch, never axios.")
    lock = r.path / ".git/gitmem" / RETRY_LOCK
    retry_in_background(find_repo(str(r.path)))
    started = time.monotonic()
    while not lock.exists() and time.monotonic() - started < 30:
        time.sleep(0.02)
    while is_locked(lock) and time.monotonic() - started < RETRY_FOR_S:
        time.sleep(0.05)
    assert not is_locked(lock) and len(pending(r)) == 1  # left for the rebase's own hook
    assert time.monotonic() - started < RETRY_FOR_S / 2



@pytest.mark.parametrize("main_change", ["drop g", "rename g to h"])
@pytest.mark.parametrize("how", ["cherry-pick", "am"])
def test_an_entry_picked_or_applied_is_re_checked_against_the_code_it_lands_on(app_repo, tmp_path, how, main_change):
    """The entry was recorded on a branch where g() exists; main dropped g() or renamed it. Picking
    or applying the entry's commit onto main changes no anchored file, so only a re-check of the
    entry itself sees where it landed: from the commit a cherry-pick copied (git's CHERRY_PICK_HEAD),
    or against main's code for a patch. An entry whose declaration is there brings no follow-up."""
    r = app_repo
    r.git("switch", "-q", "-c", "feature")
    kept = add(r, "hazard", "f is hot", "src/app.py::f")
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    r.git("format-patch", "-q", "-2", "-o", str(tmp_path / "patches"))
    r.git("switch", "-q", "main")
    r.write("src/app.py", WITHOUT_G if main_change == "drop g" else APP.replace("def g", "def h"))
    r.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-a", "-m", main_change)
    first, second = sorted((tmp_path / "patches").iterdir())
    if how == "am":
        r.git("am", "-q", str(first))
        r.git("am", "-q", str(second))
        wait_until_settled(r)
    elif how == "cherry-pick":
        r.git("cherry-pick", "feature~1")
        r.git("cherry-pick", "feature")
    if main_change == "drop g":
        assert subjects(r, 1) == [f"gitmem: re-check anchors after {how}: 1 retired, 0 re-anchored"]
        assert status_at(r, entry) == "revoked"
        assert "`g`" in r.entries()[entry]["revocation"]["reason"]
    else:
        assert subjects(r, 1) == [f"gitmem: re-check anchors after {how}: 0 retired, 1 re-anchored"]
        assert status_at(r, entry) == "active" and "symbol: h" in r.git("show", f"HEAD:{entry_file(entry)}")
    assert status_at(r, kept) == "active"
    assert r.git("log", "--format=%s", "main~3..main").count("gitmem: re-check anchors") == 1  # none for f's entry
    assert r.git("status", "--porcelain") == ""


@pytest.mark.parametrize("main_change", ["drop g", "rename g to h"])
def test_an_entry_picked_without_commit_is_checked_in_the_commit_that_adds_it(app_repo, main_change):
    """`git cherry-pick -n` leaves no trace of where the entry came from: the developer's own
    commit adds its file, and pre-commit checks it against the code it lands on, in that commit."""
    r = app_repo
    r.git("switch", "-q", "-c", "feature")
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    r.git("switch", "-q", "main")
    r.write("src/app.py", WITHOUT_G if main_change == "drop g" else APP.replace("def g", "def h"))
    r.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-a", "-m", main_change)
    r.git("cherry-pick", "-n", "feature")
    r.git("commit", "-q", "-m", "take the note on g")
    assert subjects(r, 1) == ["take the note on g"]
    landed = r.git("show", f"HEAD:{entry_file(entry)}")
    if main_change == "drop g":
        assert status_in(landed) == "revoked" and "where this commit applied this entry" in landed
    else:
        assert status_in(landed) == "active" and "symbol: h" in landed
    assert r.git("status", "--porcelain") == ""


@pytest.mark.parametrize("bring", ["merge --squash", "checkout the file"])
def test_an_entry_a_commit_adds_is_checked_though_the_anchored_list_is_fresh(app_repo, bring):
    """The stub's shortcut (no anchored file staged, its list of them fresh) once let an entry file
    the commit adds through unchecked: a squash merge, a file checked out of another branch."""
    r = app_repo
    r.git("switch", "-q", "-c", "feature")
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    r.git("switch", "-q", "main")
    r.write("src/app.py", WITHOUT_G)
    r.git("commit", "-q", "-a", "-m", "drop g")
    if bring == "merge --squash":
        r.git("merge", "-q", "--squash", "feature")
    else:
        r.git("checkout", "feature", "--", entry_file(entry))
    r.gitmem("list")  # any gitmem command may write the list of anchored paths afresh
    r.git("commit", "-q", "-m", "take the note on g")
    landed = r.git("show", f"HEAD:{entry_file(entry)}")
    assert status_in(landed) == "revoked" and "where this commit applied this entry" in landed
    assert r.git("status", "--porcelain") == ""


# -- 4. an amend or a squash that brings the declaration back ----------------------------------

def retired_by_a_commit(r, message: str) -> str:
    """An entry on g, retired by the commit (`message`) that drops g."""
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    r.write("src/app.py", WITHOUT_G)
    r.git("commit", "-q", "-a", "-m", message)
    assert status_at(r, entry) == "revoked"
    return entry


def test_amend_that_restores_the_declaration_undoes_the_retirement(app_repo):
    r = app_repo
    entry = retired_by_a_commit(r, "drop g")
    r.write("src/app.py", APP.replace("return 1", "return 10"))
    r.git("commit", "-q", "--amend", "-a", "-m", "refactor f (g kept after all)")
    assert subjects(r, 2) == ["gitmem: re-check anchors after amend: 0 retired, 0 re-anchored, 1 restored",
                              "refactor f (g kept after all)"]
    assert status_at(r, entry) == "active"
    text = r.read(entry_file(entry))
    assert status_in(text) == "active" and "revocation" not in text
    assert r.git("show", f"HEAD:{entry_file(entry)}") == r.git("show", f"HEAD~2:{entry_file(entry)}")
    assert r.entries()[entry]["status"] == "active"
    assert r.git("status", "--porcelain") == ""


def test_amend_that_completes_a_move_reanchors_instead_of_retiring(app_repo):
    # the first commit deleted g; the amend adds it to another file: one commit of both re-anchors
    r = app_repo
    entry = retired_by_a_commit(r, "move g")
    r.write("src/other.py", "def g():\n    return 2\n")
    r.git("add", "src/other.py")
    r.git("commit", "-q", "--amend", "-m", "move g to other.py")
    assert subjects(r, 1)[0].endswith("1 restored")
    moved = r.entries()[entry]
    assert moved["status"] == "active" and moved["anchor"] == "src/other.py::g"
    assert r.git("status", "--porcelain") == ""


def test_amend_that_keeps_the_removal_keeps_the_retirement(app_repo):
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    r.write("src/app.py", WITHOUT_G)
    r.git("commit", "-q", "-a", "-m", "drop g")
    r.write("docs/index.md", "why g went\n")
    r.git("commit", "-q", "--amend", "-a", "-m", "drop g, say why")
    assert subjects(r, 1) == ["drop g, say why"]
    assert status_at(r, entry) == "revoked"


def test_amending_a_deliberate_revocation_keeps_it(app_repo):
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    r.gitmem("revoke", entry, "--reason", "g was made fast")
    r.git("commit", "-q", "--amend", "-m", "revoke: g is fast now")
    assert subjects(r, 1) == ["revoke: g is fast now"]
    assert status_at(r, entry) == "revoked"


def test_fixup_squashed_by_rebase_undoes_the_retirement(app_repo):
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    base = r.git("rev-parse", "HEAD").strip()
    r.write("src/app.py", WITHOUT_G)
    r.git("commit", "-q", "-a", "-m", "drop g")
    r.write("src/app.py", APP)
    r.git("commit", "-q", "-a", "--fixup=HEAD")  # g comes back; the entry stays retired in between
    env = {**os.environ, "GIT_SEQUENCE_EDITOR": "true"}
    import subprocess

    subprocess.run(["git", "rebase", "-q", "-i", "--autosquash", base], cwd=r.path, env=env, check=True,
                   capture_output=True)
    # git runs post-rewrite `amend` for the squash while the rebase is in progress (kept pending,
    # it is committed when the rebase has finished: it still holds there), then post-rewrite `rebase`
    last, squashed = subjects(r, 2)
    assert last.startswith("gitmem: re-check anchors after ") and last.endswith("0 retired, 0 re-anchored, 1 restored")
    assert squashed == "drop g" and pending(r) == []
    assert status_at(r, entry) == "active"
    assert r.git("status", "--porcelain") == ""


# -- 2. a partial commit beside the developer's own edit of the entry file -------------------------

def test_partial_commit_beside_a_staged_reword_keeps_both(app_repo):
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    path = entry_file(entry)
    r.write(path, r.read(path).replace("body: g is slow", "body: g is slow (quadratic)"))
    r.git("add", path)
    r.write("src/app.py", WITHOUT_G)
    proc_err = r.git("commit", "-q", "-m", "drop g", "--", "src/app.py")
    assert status_at(r, entry) == "revoked"
    assert "(quadratic)" not in r.git("show", f"HEAD:{path}")
    staged = r.git("show", f":{path}")
    assert status_in(staged) == "revoked" and "(quadratic)" in staged
    assert status_in(r.read(path)) == "revoked" and "(quadratic)" in r.read(path)
    r.git("commit", "-q", "-m", "reword hazard")  # the developer commits what they staged
    committed = r.git("show", f"HEAD:{path}")
    assert status_in(committed) == "revoked" and "(quadratic)" in committed and "revocation:" in committed
    assert r.git("status", "--porcelain") == "", proc_err


@pytest.mark.parametrize("partial", [False, True])
def test_a_commit_beside_an_unstaged_reword_keeps_both(app_repo, partial):
    """A plain commit of the code (`git add src/app.py; git commit`) or a partial one (`git commit
    -- src/app.py`) retires the entry beside the developer's unstaged reword of it: their work-tree
    copy gets the retirement, their reword stays, and their next `commit -a` keeps both."""
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    path = entry_file(entry)
    r.write(path, r.read(path).replace("body: g is slow", "body: g is slow (quadratic)"))
    r.write("src/app.py", WITHOUT_G)
    if partial:
        r.git("commit", "-q", "-m", "drop g", "--", "src/app.py")
        assert r.git("show", f":{path}") == r.git("show", f"HEAD:{path}")  # nothing of theirs was staged
    else:
        r.git("add", "src/app.py")
        r.git("commit", "-q", "-m", "drop g")
        assert "(quadratic)" not in r.git("show", f"HEAD:{path}")
    assert status_at(r, entry) == "revoked"
    assert status_in(r.read(path)) == "revoked" and "(quadratic)" in r.read(path)
    r.git("commit", "-q", "-a", "-m", "reword hazard")
    committed = r.git("show", f"HEAD:{path}")
    assert status_in(committed) == "revoked" and "(quadratic)" in committed


def test_a_conflicting_edit_of_the_same_fields_is_kept_and_named(app_repo):
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    path = entry_file(entry)
    # an unstaged edit of a field the retirement also sets (its note), the entry still active
    mine = r.read(path) + "revocation:\n  at: '2026-01-01T00:00:00Z'\n  reason: my own draft of the note\n"
    r.write(path, mine)
    r.write("src/app.py", WITHOUT_G)
    r.git("add", "src/app.py")
    import subprocess

    proc = subprocess.run(["git", "commit", "-q", "-m", "drop g"], cwd=r.path, capture_output=True, text=True)
    assert proc.returncode == 0
    assert status_at(r, entry) == "revoked"
    assert r.read(path) == mine  # the developer's edit is never discarded
    assert "WARNING" in proc.stderr and path in proc.stderr


def test_am_of_a_series_commits_the_recheck_after_the_last_patch(app_repo, tmp_path):
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    r.git("switch", "-q", "-c", "hotfix")
    drop_g_without_hooks(r, "hotfix: drop g")
    for name in ("d", "e"):
        r.write(f"{name}.txt", f"{name}\n")
        r.git("add", f"{name}.txt")
        r.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", f"hotfix: {name}")
    r.git("format-patch", "-q", "-3", "-o", str(tmp_path / "patches"))
    r.git("switch", "-q", "main")
    r.git("am", "-q", *sorted(str(p) for p in (tmp_path / "patches").iterdir()))
    wait_until_settled(r)
    assert subjects(r, 4) == ["gitmem: re-check anchors after am: 1 retired, 0 re-anchored",
                              "hotfix: e", "hotfix: d", "hotfix: drop g"]
    assert status_at(r, entry) == "revoked"
    assert r.git("status", "--porcelain") == ""


def test_an_aborted_am_leaves_no_trace(app_repo, tmp_path):
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    r.git("switch", "-q", "-c", "hotfix")
    drop_g_without_hooks(r, "hotfix: drop g")
    r.write("e.txt", "theirs\n")
    r.git("add", "e.txt")
    r.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "hotfix: e")
    r.git("format-patch", "-q", "-2", "-o", str(tmp_path / "patches"))
    r.git("switch", "-q", "main")
    r.write("e.txt", "ours\n")
    r.commit_all("e on main")
    before = r.git("rev-parse", "HEAD").strip()
    stopped = r.git("am", "-q", *sorted(str(p) for p in (tmp_path / "patches").iterdir()), check=False)
    assert (r.path / ".git/rebase-apply").exists(), stopped  # the second patch does not apply
    r.git("am", "--abort")
    wait_until_settled(r)
    assert r.git("rev-parse", "HEAD").strip() == before  # the re-check of the first patch no longer holds
    assert status_at(r, entry) == "active"
    assert r.git("status", "--porcelain") == ""


# -- 5. a follow-up commit beside the developer's own version of the entry file --------------------

def git_err(repo, *args):
    """A git command's exit status and stderr (what the hooks print)."""
    import subprocess

    proc = subprocess.run(["git", *args], cwd=repo.path, capture_output=True, text=True)
    return proc.returncode, proc.stderr


def reword(repo, path):
    repo.write(path, repo.read(path).replace("body: g is slow", "body: g is slow (quadratic)"))


def own_note(repo, path):
    """The developer's own draft of the fields a retirement sets (its note), the entry still active."""
    text = repo.read(path) + "revocation:\n  at: '2026-01-01T00:00:00Z'\n  reason: my own draft of the note\n"
    repo.write(path, text)
    return text


def removal_on_a_branch(repo):
    """g removed on `hotfix` (no gitmem there), and main moved on; back on main."""
    repo.git("switch", "-q", "-c", "hotfix")
    drop_g_without_hooks(repo, "hotfix: drop g")
    repo.git("switch", "-q", "main")
    repo.write("docs/index.md", "main moved on\n")
    repo.commit_all("main: docs")


@pytest.mark.parametrize("how", [("cherry-pick", "hotfix"), ("merge", "--no-edit", "hotfix")])
def test_a_follow_up_carries_the_retirement_onto_an_unstaged_reword(app_repo, how):
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    path = entry_file(entry)
    removal_on_a_branch(r)
    reword(r, path)
    code, err = git_err(r, *how)
    assert code == 0, err
    assert subjects(r, 1) == [f"gitmem: re-check anchors after {how[0]}: 1 retired, 0 re-anchored"]
    assert status_at(r, entry) == "revoked" and "(quadratic)" not in r.git("show", f"HEAD:{path}")
    assert r.git("show", f":{path}") == r.git("show", f"HEAD:{path}")  # nothing of theirs was staged
    mine = r.read(path)
    assert status_in(mine) == "revoked" and "(quadratic)" in mine and "revocation:" in mine
    r.git("commit", "-q", "-a", "-m", "reword hazard")  # their next commit -a keeps the retirement
    committed = r.git("show", f"HEAD:{path}")
    assert status_in(committed) == "revoked" and "(quadratic)" in committed and "revocation:" in committed


def test_a_follow_up_leaves_an_unstaged_edit_of_the_same_fields_and_names_it(app_repo):
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    path = entry_file(entry)
    removal_on_a_branch(r)
    mine = own_note(r, path)
    code, err = git_err(r, "cherry-pick", "hotfix")
    assert code == 0, err
    assert status_at(r, entry) == "revoked"
    assert r.read(path) == mine  # the developer's edit is never discarded
    assert "WARNING" in err and path in err and "unstaged" in err


def feature_beside_a_removal_of_g(repo):
    """An entry on g; a `feature` branch with work of its own; main then drops g (no gitmem there).
    Returns the entry and its file; main is checked out."""
    entry = add(repo, "hazard", "g is slow", "src/app.py::g")
    repo.git("switch", "-q", "-c", "feature")
    repo.write("feat.txt", "feat\n")
    repo.commit_all("feature work")
    repo.git("switch", "-q", "main")
    drop_g_without_hooks(repo)
    return entry, entry_file(entry)


def staged_beside_a_pending_recheck(repo, edit):
    """A re-check kept pending on a detached HEAD; the developer stages their own version of the
    entry file (`edit`) and makes a branch there, where the pending follow-up is committed."""
    entry, path = feature_beside_a_removal_of_g(repo)
    repo.git("switch", "-q", "--detach", "feature")
    repo.git("rebase", "-q", "main")
    assert len(pending(repo)) == 1
    # The re-check started gitmem's background retry, which gives up on a detached HEAD: let it,
    # so that the switch below commits the follow-up and shows its warnings.
    from gitmem.base.files import is_locked

    retry = repo.path / ".git/gitmem/retry.lock"
    deadline = time.monotonic() + 10
    while (not retry.exists() or is_locked(retry)) and time.monotonic() < deadline:
        time.sleep(0.05)
    text = edit(repo, path) or repo.read(path)
    repo.git("add", path)
    code, err = git_err(repo, "switch", "-q", "-c", "try-on-main")
    assert code == 0 and pending(repo) == [], err
    assert subjects(repo, 1) == ["gitmem: re-check anchors after rebase: 1 retired, 0 re-anchored"]
    assert status_at(repo, entry) == "revoked"
    return path, text, err


def test_a_follow_up_carries_the_retirement_onto_a_staged_reword(app_repo):
    r = app_repo
    path, _, _ = staged_beside_a_pending_recheck(r, reword)
    staged = r.git("show", f":{path}")
    assert status_in(staged) == "revoked" and "(quadratic)" in staged and "revocation:" in staged
    assert r.read(path) == staged
    r.git("commit", "-q", "-m", "reword hazard")
    assert r.git("show", f"HEAD:{path}") == staged and r.git("status", "--porcelain") == ""


def test_a_follow_up_leaves_a_staged_edit_of_the_same_fields_and_names_it(app_repo):
    r = app_repo
    path, mine, err = staged_beside_a_pending_recheck(r, own_note)
    assert r.git("show", f":{path}") == mine and r.read(path) == mine  # kept as they staged it
    assert "WARNING" in err and path in err and "staged" in err


def test_partial_commit_beside_a_staged_reword_with_the_work_tree_put_back(app_repo):
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    path = entry_file(entry)
    committed = r.read(path)
    reword(r, path)
    r.git("add", path)
    r.write(path, committed)  # the work-tree copy put back as committed; the reword stays staged
    r.write("src/app.py", WITHOUT_G)
    code, err = git_err(r, "commit", "-q", "-m", "drop g", "--", "src/app.py")
    assert code == 0, err
    assert status_at(r, entry) == "revoked" and "(quadratic)" not in r.git("show", f"HEAD:{path}")
    staged = r.git("show", f":{path}")
    assert status_in(staged) == "revoked" and "(quadratic)" in staged and "revocation:" in staged
    assert r.read(path) == r.git("show", f"HEAD:{path}")
    r.git("commit", "-q", "-m", "reword hazard")  # the developer commits what they staged
    assert r.git("show", f"HEAD:{path}") == staged


def test_am_starts_python_only_for_a_patch_that_touches_an_anchored_file_or_an_entry(app_repo, tmp_path):
    """post-applypatch answers in shell, from the list of anchored files, for a patch that touches
    none of them and no entry while nothing waits pending; the others still go to Python."""
    import sys

    from gitmem.base.paths import find_repo
    from gitmem.githooks.install import install

    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    log = tmp_path / "python.log"
    python = tmp_path / "python"  # the hooks' interpreter, noting each start
    python.write_text(f"#!/bin/sh\necho \"$*\" >> '{log}'\nexec '{sys.executable}' \"$@\"\n")
    python.chmod(0o755)
    install(find_repo(str(r.path)), python=str(python))
    r.git("switch", "-q", "-c", "series")
    for i in range(3):
        r.write("docs/index.md", f"docs {i}\n")
        r.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-a", "-m", f"docs {i}")
    r.git("format-patch", "-q", "-3", "-o", str(tmp_path / "docs"))
    r.write(entry_file(entry), r.read(entry_file(entry)).replace("body: g is slow", "body: g is slow (quadratic)"))
    r.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-a", "-m", "reword the hazard")
    r.git("format-patch", "-q", "-1", "-o", str(tmp_path / "entry"))
    drop_g_without_hooks(r, "drop g")
    r.git("format-patch", "-q", "-1", "-o", str(tmp_path / "anchored"))
    r.git("switch", "-q", "main")
    from gitmem.store import index

    index.rebuild(find_repo(str(r.path)))  # the switch rewrote the entry file: the list is written again

    def am(folder):
        log.write_text("")
        r.git("am", "-q", *sorted(str(p) for p in (tmp_path / folder).iterdir()))
        return [line for line in log.read_text().splitlines() if "post-applypatch" in line]

    assert am("docs") == [] and subjects(r, 1) == ["docs 2"]
    assert len(am("entry")) == 1  # a patch that changes an entry goes to Python
    assert r.entries()[entry]["body"] == "g is slow (quadratic)"
    assert len(am("anchored")) == 1
    wait_until_settled(r)
    assert subjects(r, 2) == ["gitmem: re-check anchors after am: 1 retired, 0 re-anchored", "drop g"]
    assert status_at(r, entry) == "revoked"
    assert r.git("status", "--porcelain") == ""


def test_what_the_background_retry_warns_of_is_shown_at_the_next_commit(app_repo):
    """A series (cherry-pick of two commits) leaves the re-check to gitmem's background retry, which
    has no terminal: its warning that the developer's unstaged version lacks the retirement is
    shown by the next commit's pre-commit, once."""
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    path = entry_file(entry)
    r.git("switch", "-q", "-c", "hotfix")
    drop_g_without_hooks(r, "hotfix: drop g")
    r.write("docs/index.md", "more\n")
    r.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-a", "-m", "hotfix: docs")
    r.git("switch", "-q", "main")
    mine = own_note(r, path)
    code, err = git_err(r, "cherry-pick", "hotfix~1", "hotfix")
    assert code == 0, err
    wait_until_settled(r)
    assert status_at(r, entry) == "revoked" and r.read(path) == mine
    r.write("docs/other.md", "other\n")
    r.git("add", "docs/other.md")
    code, err = git_err(r, "commit", "-q", "-m", "docs")
    assert code == 0 and "WARNING" in err and path in err and "unstaged" in err
    assert "committed pending" not in err  # what it committed is in the log, not a warning
    r.write("docs/other.md", "again\n")
    code, err = git_err(r, "commit", "-q", "-am", "docs again")
    assert code == 0 and "WARNING" not in err


def test_the_warnings_waiting_for_a_commit_keep_the_latest_few(app_repo):
    """No pre-commit may run for a long while (commits with --no-verify, only pulls): the file keeps
    the latest warnings, never grows without bound, and leaves out everything but warnings."""
    from gitmem.base.paths import find_repo
    from gitmem.store.commit import WARNINGS_FILE, WARNINGS_KEPT, keep_warnings, local

    repo = find_repo(str(app_repo.path))
    for n in range(WARNINGS_KEPT + 5):
        keep_warnings(repo, f"gitmem: committed pending 'x' (abc)\ngitmem: WARNING: warning {n}\n")
    lines = (local(repo) / WARNINGS_FILE).read_text(encoding="utf-8").splitlines()
    assert lines == [f"gitmem: WARNING: warning {n}" for n in range(5, WARNINGS_KEPT + 5)]


def test_a_pending_entry_never_becomes_the_root_of_an_orphan_branch(app_repo):
    r = app_repo
    r.git("switch", "-q", "--detach", "HEAD")
    add(r, "law", "Use fetch, never axios.")
    assert len(pending(r)) == 1
    r.git("switch", "-q", "--orphan", "fresh")
    r.gitmem("list")  # a gitmem command commits what is pending where it may
    assert r.git("rev-parse", "--verify", "-q", "HEAD", check=False) == ""  # no commit of gitmem's
    assert len(pending(r)) == 1


@pytest.mark.parametrize("how", ["rebase", "merge"])
def test_an_autostash_is_applied_before_gitmems_follow_up(app_repo, how):
    """`git rebase --autostash` / `git merge --autostash` re-apply the developer's stashed edits
    after post-rewrite / post-merge: gitmem's re-check waits for that, then goes onto their edit,
    instead of committing first and leaving the stash in conflict."""
    r = app_repo
    entry, path = feature_beside_a_removal_of_g(r)
    r.git("switch", "-q", "feature")
    r.write(path, r.read(path) + "ticket: T-9\n")  # the developer's unstaged edit of the entry
    args = ["rebase", "--autostash", "main"] if how == "rebase" else ["merge", "--autostash", "--no-edit", "main"]
    code, err = git_err(r, *args)
    assert code == 0 and "conflict" not in err.lower(), err
    wait_until_settled(r)
    assert status_at(r, entry) == "revoked"
    text = r.read(path)
    assert status_in(text) == "revoked" and "ticket: T-9" in text  # their edit, with the retirement
    assert r.git("stash", "list") == "" and r.git("status", "--porcelain").splitlines() == [f" M {path}"]


@pytest.mark.parametrize("failure", ["empty message", "commit-msg refuses"])
def test_a_commit_that_never_happened_leaves_no_retirement_behind(app_repo, failure):
    """pre-commit retired the entry on g and staged it; the commit then failed. The developer
    drops the change; their next, unrelated commit must not carry the retirement of g, which is
    still there: the next pre-commit takes back what the failed one staged and wrote."""
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    r.write("src/app.py", WITHOUT_G)
    env = {**os.environ, "GIT_EDITOR": "sh -c ': > \"$1\"' editor"}
    if failure == "commit-msg refuses":
        hook = r.path / ".git/hooks/commit-msg"
        hook.write_text('#!/bin/sh\ngrep -q "^JIRA-" "$1" || { echo "need JIRA-" >&2; exit 1; }\n')
        hook.chmod(0o755)
        args = ["git", "commit", "-q", "-a", "-m", "drop g"]
    else:
        r.git("add", "src/app.py")
        args = ["git", "commit", "-q"]
    failed = subprocess.run(args, cwd=r.path, env=env, capture_output=True, text=True)
    assert failed.returncode != 0 and "retired" in failed.stderr, failed
    r.git("restore", "--staged", "--worktree", "src/app.py")  # the developer drops the change
    r.write("docs/index.md", "more docs\n")
    code, err = git_err(r, "commit", "-q", "-a", "-m", "JIRA-1 docs")
    assert code == 0 and "was not made" in err, err
    assert subjects(r, 1) == ["JIRA-1 docs"] and r.git("show", "--name-only", "--format=", "HEAD").split() == [
        "docs/index.md"]
    assert status_at(r, entry) == "active" and status_in(r.read(entry_file(entry))) == "active"
    assert r.git("status", "--porcelain") == ""
    code, err = git_err(r, "commit", "-q", "--allow-empty", "-m", "JIRA-2 again")
    assert code == 0 and "was not made" not in err  # taken back once


@pytest.mark.parametrize("moves_head", ["gitmem add", "switch"])
def test_a_commit_that_never_happened_leaves_no_retirement_behind_after_head_moved(app_repo, moves_head):
    """As above, but HEAD moved before the next commit (another entry recorded, a switch to a
    branch at another commit): the retirement still staged went into that unrelated commit."""
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    if moves_head == "switch":
        r.write("docs/other.md", "other\n")
        r.commit_all("other docs")
        r.git("branch", "older", "HEAD~1")
    r.write("src/app.py", WITHOUT_G)
    r.git("add", "src/app.py")
    env = {**os.environ, "GIT_EDITOR": "sh -c ': > \"$1\"' editor"}
    failed = subprocess.run(["git", "commit", "-q"], cwd=r.path, env=env, capture_output=True, text=True)
    assert failed.returncode != 0 and "retired" in failed.stderr, failed
    r.git("restore", "--staged", "--worktree", "src/app.py")  # the developer keeps g after all
    if moves_head == "gitmem add":
        add(r, "ritual", "run the tests before pushing")
    else:
        r.git("switch", "-q", "older")
    r.write("notes.txt", "more\n")
    r.git("add", "notes.txt")
    code, err = git_err(r, "commit", "-q", "-m", "unrelated work")
    assert code == 0 and "was not made" in err, err
    assert r.git("show", "--name-only", "--format=", "HEAD").split() == ["notes.txt"]
    assert status_at(r, entry) == "active" and status_in(r.read(entry_file(entry))) == "active"


def test_a_retirement_staged_again_after_a_reset_is_restored_where_the_declaration_is(app_repo):
    """`git reset HEAD~1` after the commit that removed g (and retired its entry), g put back, then
    `git add -A`: the work tree's retired entry went into the next commit, g still there."""
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    r.write("src/app.py", WITHOUT_G)
    r.commit_all("drop g")
    assert status_at(r, entry) == "revoked"
    r.git("reset", "-q", "HEAD~1")
    r.git("checkout", "--", "src/app.py")
    r.write("notes.txt", "more\n")
    r.git("add", "-A")  # the work tree's entry file is still the retired one
    code, err = git_err(r, "commit", "-q", "-m", "other work")
    assert code == 0 and "restored" in err, err
    assert status_at(r, entry) == "active" and "revocation" not in r.git("show", f"HEAD:{entry_file(entry)}")
    assert status_in(r.read(entry_file(entry))) == "active" and r.git("status", "--porcelain") == ""


def _g_dropped_on(r, branch, entry):
    """g removed on a new `branch` (its entry retired there), and edited on main, checked out again."""
    r.git("switch", "-q", "-c", branch)
    r.write("src/app.py", WITHOUT_G)
    r.commit_all(f"{branch}: drop g")
    assert status_at(r, entry) == "revoked"
    r.git("switch", "-q", "main")
    r.write("src/app.py", APP.replace("return 2", "return 5"))
    r.commit_all("main: tweak g")


@pytest.mark.parametrize("how", ["merge", "cherry-pick"])
def test_a_conflict_resolved_keeping_the_declaration_restores_its_entry(app_repo, how):
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    _g_dropped_on(r, "feat", entry)
    args = ["merge", "--no-edit", "feat"] if how == "merge" else ["cherry-pick", "feat"]
    assert git_err(r, *args)[0] != 0  # the conflict in src/app.py
    r.git("checkout", "--ours", "src/app.py")
    r.git("add", "src/app.py")
    code, err = git_err(r, "-c", "core.editor=true", "commit", "-q", "--no-edit") if how == "merge" else \
        git_err(r, "-c", "core.editor=true", "cherry-pick", "--continue")
    assert code == 0, err
    wait_until_settled(r)
    assert "def g" in r.read("src/app.py")
    assert status_at(r, entry) == "active", r.git("log", "--format=%s", "-4")
    assert r.gitmem("check").returncode == 0
    assert not subjects(r, 1)[0].startswith("gitmem:")  # restored in the commit that resolved it


def test_a_fast_forward_to_a_merge_made_elsewhere_keeps_its_retirements(app_repo):
    """A teammate without gitmem's hooks merged a branch that retired the entry, keeping g: a
    fast-forward to that merge commit took a restoring commit of gitmem's on top of it."""
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    r.git("branch", "mine")
    _g_dropped_on(r, "drop", entry)
    elsewhere = ["-c", "core.hooksPath=/nonexistent"]
    assert git_err(r, *elsewhere, "merge", "drop")[0] != 0
    r.git("checkout", "--ours", "src/app.py")
    r.git("add", "src/app.py")
    r.git(*elsewhere, "commit", "-q", "--no-edit")
    r.git("switch", "-q", "mine")
    r.git("merge", "-q", "--ff-only", "main~1")  # where the teammate's merge began
    code, err = git_err(r, "merge", "--ff-only", "main")
    assert code == 0 and "restored" not in err, err
    assert r.git("rev-parse", "HEAD") == r.git("rev-parse", "main") and status_at(r, entry) == "revoked"


def test_a_merge_keeps_its_restoration_when_an_entry_waited_for_it(app_repo):
    """An entry recorded while the merge's message was being edited is committed on top of the
    merge first: the restoration was then decided on gitmem's commit, not the merge."""
    r = app_repo
    middle = "".join(f"\n\ndef h{n}():\n    return {n}\n" for n in range(4))
    g = "\n\ndef g():\n    return 2\n"
    r.write("src/mod.py", "def f():\n    return 1\n" + middle + g)
    r.commit_all("mod")
    entry = add(r, "hazard", "g is slow", "src/mod.py::g")
    r.git("switch", "-q", "-c", "drop")
    r.write("src/mod.py", "def f():\n    return 1\n" + middle)
    r.commit_all("drop g")
    assert status_at(r, entry) == "revoked"
    r.git("switch", "-q", "main")
    r.write("src/mod.py", g.lstrip("\n") + "\n\ndef f():\n    return 1\n" + middle)  # g moved up, as it was
    r.commit_all("g first")
    editor = r.path.parent / "editor.sh"
    editor.write_text(f"#!/bin/sh\ncd {r.path} && {sys.executable} -m gitmem.cli add law 'Use tabs.' >/dev/null 2>&1\n")
    editor.chmod(0o755)
    env = {**os.environ, "GIT_EDITOR": str(editor)}
    merged = subprocess.run(["git", "merge", "--no-ff", "--edit", "drop"], cwd=r.path, env=env,
                            capture_output=True, text=True)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    wait_until_settled(r)
    assert "def g" in r.read("src/mod.py") and status_at(r, entry) == "active", r.git("log", "--format=%s", "-4")


def test_history_pulled_as_it_is_keeps_its_retirements(app_repo):
    """Upstream retired the entry with g, then put g back by hand without restoring it: a
    fast-forward takes that history as its authors have it, with no commit of gitmem's after."""
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    r.git("branch", "feature")
    r.write("src/app.py", WITHOUT_G)
    r.commit_all("drop g")
    r.git("checkout", "HEAD~1", "--", "src/app.py")
    r.commit_all("g back")
    assert status_at(r, entry) == "revoked"
    r.git("switch", "-q", "feature")
    code, err = git_err(r, "merge", "-q", "--ff-only", "main")
    assert code == 0 and "restored" not in err, err
    assert subjects(r, 1) == ["g back"] and status_at(r, entry) == "revoked"


def test_a_retirement_pulled_in_stays_though_another_function_took_the_name(app_repo):
    """Upstream removed g (its entry retired) and later wrote another g: a pull must not bring
    the hazard back onto the new function."""
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    r.git("branch", "feature")
    r.write("src/app.py", WITHOUT_G)
    r.commit_all("drop g")
    r.write("src/app.py", WITHOUT_G + "\n\ndef g(name, greeting='hello'):\n    return f'{greeting} {name}'\n")
    r.commit_all("a new, unrelated g")
    assert status_at(r, entry) == "revoked"
    r.git("switch", "-q", "feature")
    code, err = git_err(r, "merge", "-q", "--ff-only", "main")
    assert code == 0 and "restored" not in err, err
    assert status_at(r, entry) == "revoked" and subjects(r, 1) == ["a new, unrelated g"]


def test_a_retirement_of_one_overload_pulled_in_stays(repo):
    r = repo.with_gitmem({"Calc.java": "class Calc {\n  int add(int a, int b) { return a + b; }\n"
                                       "  double add(double a, double b) { return a + b; }\n}\n"})
    entry = add(r, "hazard", "the int add overflows silently", "Calc.java::Calc.add")
    r.git("branch", "feature")
    r.write("Calc.java", "class Calc {\n  double add(double a, double b) { return a + b; }\n}\n")
    r.commit_all("drop the int overload")
    assert status_at(r, entry) == "revoked"
    r.git("switch", "-q", "feature")
    code, err = git_err(r, "merge", "-q", "--ff-only", "main")
    assert code == 0 and "restored" not in err, err
    assert status_at(r, entry) == "revoked"


@pytest.mark.parametrize("how", ["fast-forward", "every commit dropped"])
def test_a_rebase_with_nothing_to_replay_rechecks_anchors(app_repo, how):
    """`git rebase up` when main has no commit of its own only checks `up` out (no post-rewrite
    follows); so does an interactive rebase that drops every commit. The code the branch moved to
    lacks g: its entry is retired in a follow-up once the rebase is over."""
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    r.git("switch", "-q", "-c", "up")
    drop_g_without_hooks(r)
    r.git("switch", "-q", "main")
    env = dict(os.environ)
    if how == "every commit dropped":
        r.write("notes.txt", "local\n")
        r.git("-c", "core.hooksPath=/dev/null", "add", "notes.txt")
        r.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "local note")
        env["GIT_SEQUENCE_EDITOR"] = "sed -i 's/^pick/drop/'"
    proc = subprocess.run(["git", "rebase", *(["-i"] if how != "fast-forward" else []), "up"], cwd=r.path,
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc
    wait_until_settled(r)
    assert subjects(r, 2) == ["gitmem: re-check anchors after rebase: 1 retired, 0 re-anchored",
                              "teammate: drop g (no gitmem)"]
    assert status_at(r, entry) == "revoked" and r.git("status", "--porcelain") == ""


@pytest.mark.parametrize("how", ["revert", "revert -n"])
def test_reverting_a_retirement_whose_declaration_is_gone_retires_again(app_repo, how):
    """Undoing gitmem's retirement of g brings the entry back active where g is still gone: it is
    checked against the code it lands on and retired again, as a rebase dropping that commit is."""
    r = app_repo
    entry = add(r, "hazard", "g is slow", "src/app.py::g")
    removal_on_a_branch(r)
    r.git("merge", "-q", "--no-edit", "hotfix")
    assert subjects(r, 1) == ["gitmem: re-check anchors after merge: 1 retired, 0 re-anchored"]
    retiring = r.git("rev-parse", "HEAD").strip()
    if how == "revert":
        code, err = git_err(r, "revert", "--no-edit", retiring)
    else:
        r.git("revert", "-n", retiring)
        code, err = git_err(r, "commit", "-q", "-m", "bring the note on g back")
    assert code == 0, err
    wait_until_settled(r)
    assert status_at(r, entry) == "revoked" and r.git("status", "--porcelain") == ""


# -- declarations renamed, moved and rewritten the ways editors and languages do -------------------

LEDGER_RS = """pub struct Ledger { rows: Vec<i64> }
impl Ledger {
    pub fn new() -> Ledger { Ledger { rows: Vec::with_capacity(64) } }
    pub fn total(&self) -> i64 { self.rows.iter().sum() }
}
"""
SERVICE_PY = """class Service:
    def store(self, row, retries=3):
        return self.db.put(row, retries=retries)

    def load(self, key):
        return self.db.get(key)
"""


@pytest.mark.parametrize("path, source, old, new, anchors, edit", [
    # an editor's rename of the type: the constructor's body names it, so no body matches
    ("src/lib.rs", LEDGER_RS, "Ledger", "Book", ("Ledger.new", "Ledger.total"), None),
    # the class renamed and a method edited in the same commit
    ("app/service.py", SERVICE_PY, "Service", "Client", ("Service.store", "Service.load"), ("retries=3", "retries=4")),
])
def test_a_renamed_class_takes_its_members_entries_along(repo, path, source, old, new, anchors, edit):
    repo.with_gitmem({path: source})
    ids = [add(repo, "hazard", f"{a} is subtle.", f"{path}::{a}") for a in anchors]
    changed = source.replace(old, new)
    repo.write(path, changed.replace(*edit) if edit else changed)
    repo.commit_all("rename the type")
    entries = repo.entries()
    for entry_id, anchor in zip(ids, anchors, strict=True):
        assert entries[entry_id]["status"] == "active"
        assert entries[entry_id]["anchor"] == f"{path}::{anchor.replace(old, new)}"


def test_a_function_moved_into_a_file_left_mid_edit_is_not_retired(repo):
    helper = "def helper(x):\n    total = compute_value(x)\n    return total + 42\n"
    repo.with_gitmem({"a.py": "def keep():\n    return 0\n\n\n" + helper})
    entry = add(repo, "hazard", "helper adds 42 on purpose.", "a.py::helper")
    repo.write("a.py", "def keep():\n    return 0\n")
    repo.write("b.py", "TABLE = [\n\n" + helper)  # the move, in a file that does not parse yet
    repo.git("add", "-A")
    proc = subprocess.run(["git", "commit", "-q", "-m", "move helper"], cwd=repo.path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "b.py, which names it, does not parse cleanly" in proc.stderr
    assert repo.entries()[entry]["status"] == "active"


def test_typescript_object_members_behind_as_const_or_satisfies_stay_anchored(repo):
    source = ("export const api = {\n  get(id: string) { return fetch(`/x/${id}`); },\n  list: () => fetch('/x'),\n};\n\n"
              "export function other() { return 1; }\n")
    repo.with_gitmem({"api.ts": source})
    entry = add(repo, "hazard", "api.get must encode the id.", "api.ts::api.get")
    repo.write("api.ts", source.replace("\n};\n", "\n} as const;\n"))
    repo.commit_all("as const")
    repo.write("api.ts", source.replace("\n};\n", "\n} satisfies Api;\n").replace("return 1", "return 2"))
    repo.commit_all("satisfies, and an unrelated edit")
    assert repo.entries()[entry]["status"] == "active"
    assert repo.entries()[entry]["anchor"] == "api.ts::api.get"


MONEY_RS = """use std::fmt;
pub struct Money { cents: i64 }
impl fmt::Display for Money {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { write!(f, "${}", self.cents) }
}
impl fmt::Debug for Money {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { write!(f, "Money({})", self.cents) }
}
"""
CART_JAVA = """class Cart {
    int add(int qty) { return Math.min(qty, 99); }
    int add(String sku) { return lookup(sku).qty; }
}
"""


CALC_JAVA = "class Calc {\n    int add(int a, int b) { return a + b; }\n    double add(double a, double b) { return a + b; }\n}\n"


def _without(source, start, end):
    return source[:source.index(start)] + (source[source.index(end):] if end else "")


@pytest.mark.parametrize("path, source, symbol, after, status", [
    # the anchored one (the first of two namesakes, by its body) removed: retired
    ("src/lib.rs", MONEY_RS, "Money.fmt", _without(MONEY_RS, "impl fmt::Display", "impl fmt::Debug"), "revoked"),
    ("src/Cart.java", CART_JAVA, "Cart.add", _without(CART_JAVA, "    int add(int qty)", "    int add(String sku)"),
     "revoked"),
    # the other one removed: kept
    ("src/lib.rs", MONEY_RS, "Money.fmt", _without(MONEY_RS, "impl fmt::Debug", None), "active"),
    # the other one removed and the anchored one edited: which went is a guess, so kept
    ("Calc.java", CALC_JAVA, "Calc.add",
     "class Calc {\n    int add(int a, int b) { return Math.addExact(a, b); }\n}\n", "active"),
])
def test_removing_one_of_two_namesakes_retires_only_an_entry_about_that_one(repo, path, source, symbol, after, status):
    repo.with_gitmem({path: source})
    entry = add(repo, "hazard", "The first one is subtle.", f"{path}::{symbol}")
    repo.write(path, after)
    repo.commit_all("drop one of two")
    assert repo.entries()[entry]["status"] == status


def test_a_class_deleted_beside_another_classs_rename_does_not_follow_the_rename(repo):
    source = ("class Alpha:\n    def run(self):\n        return Alpha()\n\n    def stop(self):\n        return 'a'\n\n\n"
              "class Cache:\n    def run(self):\n        return Cache()\n\n    def stop(self):\n        return 'c'\n")
    repo.with_gitmem({"shapes.py": source})
    alpha = add(repo, "hazard", "Alpha.run is re-entrant.", "shapes.py::Alpha.run")
    cache = add(repo, "hazard", "Cache.run holds the lock.", "shapes.py::Cache.run")
    repo.write("shapes.py", source[source.index("class Cache"):].replace("Cache", "Store"))
    repo.commit_all("drop Alpha, rename Cache")
    entries = repo.entries()
    assert entries[alpha]["status"] == "revoked"
    assert entries[cache]["status"] == "active" and entries[cache]["anchor"] == "shapes.py::Store.run"


def test_a_sparse_checkout_that_leaves_the_store_out_is_refused_with_the_way_in(app_repo, tmp_path):
    """A clone whose sparse checkout leaves out .gitmem/ sees no entry: `init` there would write a
    config of its own over the committed one, every command would say "no entries". Both say why
    and how to bring the store in; once it is in, the teammate's entries are there."""
    from conftest import GitRepo

    entry = add(app_repo, "hazard", "g is slow", "src/app.py::g")
    subprocess.run(["git", "clone", "-q", str(app_repo.path), str(tmp_path / "sparse")], check=True)
    mate = GitRepo(tmp_path / "sparse")
    mate.git("sparse-checkout", "set", "src")
    for command in (("init",), ("list",), ("status",), ("add", "law", "Use tabs.")):
        refused = mate.gitmem(*command, check=False)
        assert refused.returncode == 1 and "git sparse-checkout add .gitmem" in refused.stderr, refused
    assert not (mate.path / ".gitmem").exists() and mate.git("status", "--porcelain") == ""
    mate.git("sparse-checkout", "add", ".gitmem")
    mate.gitmem("init")
    assert entry in mate.gitmem("list").stdout
    assert "git hooks: installed" in mate.gitmem("status").stdout
    # sparse checkout switched off, a file kept skip-worktree by hand (a local override): it is there
    mate.git("sparse-checkout", "disable")
    mate.git("update-index", "--skip-worktree", ".gitmem/config.yaml")
    assert entry in mate.gitmem("list").stdout

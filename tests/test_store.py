"""The store: entries as YAML files, validation, commits of their own, concurrency."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gitmem.errors import EntryError
from gitmem.store.entry import Entry
from gitmem.store.yaml_files import parse_entry_text

APP = '''\
class Flask:
    def run(self, host="127.0.0.1"):
        return host

    def route(self, rule):
        return rule


def create_app():
    return Flask()
'''


@pytest.fixture
def app_repo(repo):
    repo.write("src/app.py", APP)
    repo.write("README.md", "demo\n")
    repo.commit_all("initial")
    repo.gitmem("init")
    return repo


def test_add_commits_the_entry_alone_and_prints_its_id(app_repo):
    app_repo.write("src/app.py", APP + "\n# unstaged edit\n")
    app_repo.write("notes.txt", "staged by the user\n")
    app_repo.git("add", "notes.txt")
    out = app_repo.gitmem("add", "hazard", "run() blocks forever in tests", "--anchor", "src/app.py::Flask.run",
                          "--on", "edit:src/**").stdout.strip()
    entry_id = out.splitlines()[0]
    assert (app_repo.path / f".gitmem/entries/{entry_id}.yaml").is_file()

    files = app_repo.git("show", "--name-only", "--format=", "HEAD").split()
    assert files == [f".gitmem/entries/{entry_id}.yaml"]
    message = app_repo.git("log", "-1", "--format=%an%n%B")
    assert message.startswith("gitmem\ngitmem: record hazard: run() blocks forever in tests")
    assert f"Gitmem-Entry: {entry_id}" in message and "Gitmem-Source: user" in message
    # The user's own work is exactly as it was: notes.txt still staged, app.py still unstaged.
    assert app_repo.git("diff", "--cached", "--name-only").split() == ["notes.txt"]
    assert app_repo.git("diff", "--name-only").split() == ["src/app.py"]

    entry = app_repo.entries()[entry_id]
    assert entry["anchor"] == "src/app.py::Flask.run"
    assert entry["kind"] == "hazard" and entry["status"] == "active" and entry["source"] == "user"
    assert entry["triggers"] == ["edit:src/**"]


def test_unresolvable_anchor_is_refused_with_the_closest_declarations(app_repo):
    proc = app_repo.gitmem("add", "law", "x", "--anchor", "src/app.py::Flask.runn", check=False)
    assert proc.returncode == 1
    assert "Flask.run" in proc.stderr and "closest" in proc.stderr
    assert app_repo.git("log", "--format=%s").splitlines() == ["initial"]
    proc = app_repo.gitmem("add", "law", "x", "--anchor", "src/nope.py", check=False)
    assert proc.returncode == 1 and "src/nope.py" in proc.stderr
    proc = app_repo.gitmem("add", "law", "x", "--anchor", "src/app.py::zzzzzz", check=False)
    assert proc.returncode == 1 and "it declares Flask" in proc.stderr and "no declarations" not in proc.stderr


def test_broken_entries_are_reported_by_file_and_field_and_never_hide_the_others(app_repo):
    good = app_repo.gitmem("add", "law", "timestamps are stored in UTC").stdout.split()[0]
    app_repo.write(".gitmem/entries/20260101-badyaml0.yaml", "id: [unclosed\n")
    app_repo.write(".gitmem/entries/20260101-badkind0.yaml",
                   "id: 20260101-badkind0\nkind: rumour\nbody: hi\n")
    app_repo.write(".gitmem/entries/20260101-nobody00.yaml", "id: 20260101-nobody00\nkind: law\n")
    app_repo.write(".gitmem/entries/20260101-latin100.yaml", b"id: x\nbody: caf\xe9\n")
    proc = app_repo.gitmem("list", "--json")
    ids = [json.loads(line)["id"] for line in proc.stdout.splitlines()]
    assert ids == [good]
    assert ".gitmem/entries/20260101-badkind0.yaml: kind: 'rumour' is not one of" in proc.stderr
    assert ".gitmem/entries/20260101-nobody00.yaml: body: is required" in proc.stderr
    assert ".gitmem/entries/20260101-badyaml0.yaml: invalid YAML" in proc.stderr
    assert ".gitmem/entries/20260101-latin100.yaml: not valid UTF-8" in proc.stderr
    check = app_repo.gitmem("check", check=False)
    assert check.returncode == 1 and "20260101-badkind0.yaml" in check.stdout
    app_repo.write(".gitmem/entries/20260101-x\ninvalid entry, never delivered: none.yaml", "id: x\n")
    status = app_repo.gitmem("status").stdout  # the field named, a line break in a file name escaped
    assert "never delivered: .gitmem/entries/20260101-badkind0.yaml: kind: 'rumour' is not one of" in status
    assert "never delivered: .gitmem/entries/20260101-x\\ninvalid entry, never delivered: none.yaml: " in status


@pytest.mark.parametrize("value", ["expires: 2026-02-30", "expires: 2026-13-01", "expires: [2026-02-30]",
                                   "body: !!float abc", "body: !!int 0x", "created: {at: 2026-01-01T25:00:00Z}"])
def test_a_value_yaml_cannot_build_is_one_broken_entry_and_delivery_goes_on(app_repo, monkeypatch, value):
    """ruamel builds dates and tagged numbers while parsing: an impossible one raised past the
    per-file errors, and one hand-written file stopped every hook and command."""
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    app_repo.gitmem("add", "law", "timestamps are stored in UTC")
    rel = ".gitmem/entries/20260101-0000000a.yaml"
    app_repo.write(rel, f"id: 20260101-0000000a\nkind: law\nbody: b\n{value}\n")
    for args in (["list"], ["status"], ["check"]):
        proc = app_repo.gitmem(*args, check=False)
        assert "Traceback" not in proc.stderr, args
        assert f"{rel}: {value.partition(':')[0]}: invalid YAML" in proc.stdout + proc.stderr, args  # its field
    assert app_repo.gitmem("check", check=False).returncode == 1
    context = app_repo.gitmem("render", "--event", "session-start").stdout
    assert "timestamps are stored in UTC" in context


@pytest.mark.parametrize("text, field", [
    ("id: a\nkind: law\nbody: b\nsource: robot\n", "source"),
    ("id: a\nkind: law\nbody: b\nstatus: revoked\n", "revocation"),
    ("id: a\nkind: law\nbody: b\ntriggers: [explode]\n", "triggers[0]"),
    ("id: a\nkind: law\nbody: b\ntriggers: [{event: edit, glob: [a, b]}]\n", "triggers[0]"),
    ("id: a\nkind: law\nbody: b\ntriggers: [[edit]]\n", "triggers[0]"),
    ("id: a\nkind: law\nbody: 0777\n", "body"),
    ("id: a\nkind: law\nbody: b\nexpires: soon\n", "expires"),
    # dates Python reads but delivery, comparing text, would never expire or announce
    ("id: a\nkind: law\nbody: b\nexpires: '20261130'\n", "expires"),
    ("id: a\nkind: law\nbody: b\nexpires: 2026-W48-1\n", "expires"),
    ("id: a\nkind: law\nbody: b\nexpires: 2026-11-30 or so\n", "expires"),
    ("id: a\nkind: law\nbody: b\nstatus: revoked\nrevocation: {at: sometime in 2020, reason: x}\n",
     "revocation.at"),
    ("id: a\nkind: law\nbody: b\ncreated: {at: yesterday}\n", "created.at"),
    ("id: a\nkind: law\nbody: b\ncreated: {at: '2026-12-03 21:00:00'}\n", "created.at"),
    ("id: a\nkind: law\nbody: b\ncreated: {at: '2026-12-03T23:00:00-05:00'}\n", "created.at"),
    ("id: a\nkind: law\nbody: b\nanchor: {symbol: x}\n", "anchor.path"),
    ("id: a\nkind: law\nbody: b\ncreated: {turn: three}\n", "created.turn"),
    ("id: b\nkind: law\nbody: b\n", "id"),
    ("- just a list\n", None),
    ("id: a\nkind: law\nbody: b\nmoves: [{at: 2026-01-01T00:00:00Z, from: [1, 2]}]\n", "moves[0].from"),
    ("id: a\nbody: b\n", "kind"),
    # values ruamel builds while loading, before any field is known
    ("id: a\nkind: law\nbody: b\nexpires: 2026-02-30\n", "expires"),
    ("id: a\nkind: law\nbody: b\ncreated:\n  at: 2026-01-01T25:00:00Z\n", "created"),
    ("id: a\nkind: law\nbody: !!int 0x\n", "body"),
])
def test_schema_violations_name_the_field(text, field):
    with pytest.raises(EntryError) as err:
        parse_entry_text(text, ".gitmem/entries/a.yaml")
    assert err.value.field == field
    assert err.value.path == ".gitmem/entries/a.yaml"


def test_a_trigger_written_as_a_mapping_says_what_was_read():
    with pytest.raises(EntryError) as err:
        parse_entry_text("id: a\nkind: law\nbody: b\ntriggers:\n- edit: [a, b]\n", ".gitmem/entries/a.yaml")
    assert err.value.field == "triggers[0]" and "a mapping without `event` (edit)" in str(err.value)
    assert "unknown event ''" not in str(err.value)


@pytest.mark.parametrize(("value", "said"), [("[1, 2]", "a list"), ("{a: 1}", "a mapping"), ("!!binary aGk=", "binary data")])
def test_a_wrong_type_is_named_in_the_files_terms(value, said):
    with pytest.raises(EntryError) as err:
        parse_entry_text(f"id: a\nkind: law\nbody: {value}\n", ".gitmem/entries/a.yaml")
    assert err.value.field == "body" and f"expected text, got {said}" in str(err.value)


def test_dates_in_entries_and_at_add_are_one_spelling_of_iso_8601(app_repo):
    for good in ("id: a\nkind: law\nbody: b\nexpires: 2026-11-30\ncreated: {at: 2026-01-01T10:00:00Z}\n",
                 "id: a\nkind: law\nbody: b\nexpires: '2026-11-30T00:00:00+00:00'\n"
                 "status: revoked\nrevocation: {at: 2026-01-01 10:00:00+00:00, reason: x}\n"):
        assert parse_entry_text(good, ".gitmem/entries/a.yaml").id == "a"
    for bad in ("20261130", "2026-W48-1"):
        proc = app_repo.gitmem("add", "law", "Freeze deploys until the audit.", "--expires", bad, check=False)
        assert proc.returncode == 1 and f"--expires: '{bad}' is not a date (YYYY-MM-DD" in proc.stderr
    assert app_repo.entries() == {}


def test_round_trip_keeps_hand_written_comments(app_repo):
    entry_id = app_repo.gitmem("add", "law", "use httpx, never requests").stdout.split()[0]
    path = f".gitmem/entries/{entry_id}.yaml"
    text = app_repo.read(path).replace("body:", "# agreed in the March architecture review\nbody:")
    app_repo.write(path, text)
    app_repo.commit_all("annotate entry")
    app_repo.gitmem("revoke", entry_id, "--reason", "we switched to aiohttp")
    after = app_repo.read(path)
    assert "# agreed in the March architecture review" in after
    entry = app_repo.entries()[entry_id]
    assert entry["status"] == "revoked"
    assert entry["revocation"]["reason"] == "we switched to aiohttp"
    # named: the revocation's own commit (the note stored the commit before it, which `show` then named)
    head = app_repo.git("rev-parse", "HEAD").strip()
    assert entry["revocation"]["commit"] == head
    assert f"in {head[:10]}: we switched" in app_repo.gitmem("show", entry_id).stdout
    assert "\n  commit:\n" in after  # the file names none: a person's revocation removed no subject
    assert app_repo.git("log", "-1", "--format=%s").startswith("gitmem: revoke law:")


def test_revoke_and_supersede_keep_the_teams_own_fields(app_repo):
    """Keys gitmem does not own (a reviewer, a ticket, who created it), and their comments, were
    deleted by every rewrite; only gitmem's own fields are gitmem's to remove."""
    path = ".gitmem/entries/20260101-00000020.yaml"
    app_repo.write(path, "# Agreed in the 2026-01 architecture review\nid: 20260101-00000020\nkind: law\n"
                         "body: Payments code never logs card numbers\nreviewed_by: alice   # sign-off\n"
                         "ticket: SEC-1234\ncreated:\n  at: 2026-01-01T10:00:00Z\n  by: alice\n")
    app_repo.commit_all("hand-written entry")
    app_repo.gitmem("revoke", "20260101-00000020", "--reason", "moved to the PCI runbook")
    after = app_repo.read(path)
    for kept in ("# Agreed in the 2026-01 architecture review", "reviewed_by: alice   # sign-off",
                 "ticket: SEC-1234", "  by: alice"):
        assert kept in after
    assert app_repo.entries()["20260101-00000020"]["status"] == "revoked"
    app_repo.write(".gitmem/entries/20260101-00000021.yaml",
                   "id: 20260101-00000021\nkind: law\nbody: use requests\nowner: api-team   # who to ask\n")
    app_repo.commit_all("another")
    app_repo.gitmem("add", "law", "use httpx", "--supersedes", "20260101-00000021")
    assert "owner: api-team   # who to ask" in app_repo.read(".gitmem/entries/20260101-00000021.yaml")


def test_revoking_an_entry_written_by_hand_and_not_yet_committed_revokes_it_in_the_work_tree(app_repo):
    path = ".gitmem/entries/20260101-000000aa.yaml"
    app_repo.write(path, "id: 20260101-000000aa\nkind: law\nbody: Prefer pathlib over os.path in new code.\n")
    proc = app_repo.gitmem("revoke", "000000aa", "--reason", "we dropped this rule")
    assert "unstaged version" not in proc.stderr, proc.stderr
    assert "status: revoked" in app_repo.read(path) and "status: revoked" in app_repo.git("show", f"HEAD:{path}")
    assert app_repo.entries()["20260101-000000aa"]["status"] == "revoked"
    assert app_repo.git("status", "--porcelain", "--", ".gitmem/entries") == ""


def test_stage_only_puts_the_change_onto_the_developers_own_edits(app_repo):
    """`--stage-only` stages a new entry and the superseded one's change, made onto the version the
    developer left unstaged (their comment and team key kept), as a commit's change is."""
    old = app_repo.gitmem("add", "law", "Use the built-in fetch only, never axios.").stdout.split()[0]
    path = f".gitmem/entries/{old}.yaml"
    edited = app_repo.read(path).replace("kind: law", "kind: law  # reviewed by Ana") + "ticket: OPS-12  # team key\n"
    app_repo.write(path, edited)
    head = app_repo.git("rev-parse", "HEAD")
    new = app_repo.gitmem("add", "correction", "Use ky for HTTP calls, not fetch.", "--supersedes", old,
                          "--stage-only").stdout.split()[0]
    assert app_repo.git("rev-parse", "HEAD") == head  # nothing committed
    after = app_repo.read(path)
    assert "# reviewed by Ana" in after and "ticket: OPS-12  # team key" in after
    assert "status: superseded" in after and f"superseded_by: {new}" in after
    staged = app_repo.git("show", f":{path}")
    assert "status: superseded" in staged and "ticket" not in staged  # their edit stays theirs to stage
    assert f"A  .gitmem/entries/{new}.yaml" in app_repo.git("status", "--porcelain").splitlines()


def test_gitmems_commits_carry_the_committer_git_would_use_and_wait_where_git_has_none(app_repo, monkeypatch):
    monkeypatch.setenv("GIT_COMMITTER_NAME", "CI Bot")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "ci@example.com")
    app_repo.gitmem("add", "law", "Every deploy needs a rollback plan.")
    assert app_repo.git("log", "-1", "--format=%cn <%ce>").strip() == "CI Bot <ci@example.com>"
    for key in ("GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "EMAIL"):
        monkeypatch.delenv(key, raising=False)
    app_repo.git("config", "user.useConfigOnly", "true")  # git itself refuses to commit here
    head = app_repo.git("rev-parse", "HEAD")
    proc = app_repo.gitmem("add", "law", "Migrations are reviewed by the DBA.")
    assert "committer identity" in proc.stderr and app_repo.git("rev-parse", "HEAD") == head
    assert len(list((app_repo.path / ".git/gitmem/pending").glob("*.json"))) == 1  # kept, not lost
    app_repo.git("config", "user.name", "Dana")
    app_repo.git("config", "user.email", "dana@example.com")
    app_repo.gitmem("list")  # every command first commits what waits
    assert app_repo.git("log", "-1", "--format=%cn %s").startswith("Dana gitmem: record law")
    assert "Migrations are reviewed by the DBA." in {e["body"] for e in app_repo.entries().values()}


def test_supersede_keeps_both_entries(app_repo):
    old = app_repo.gitmem("add", "law", "class components for stateful UI").stdout.split()[0]
    new = app_repo.gitmem("add", "correction", "function components with hooks only",
                          "--supersedes", old).stdout.split()[0]
    entries = app_repo.entries()
    assert entries[old]["status"] == "superseded" and entries[old]["superseded_by"] == new
    assert entries[new]["supersedes"] == [old] and entries[new]["status"] == "active"
    assert f"Gitmem-Supersedes: {old}" in app_repo.git("log", "-1", "--format=%B")
    # once replaced, it stays replaced by that one: a second correction names the active entry
    again = app_repo.gitmem("add", "law", "x", "--supersedes", old, check=False)
    assert again.returncode == 1 and f"--supersedes {old}: it is superseded already" in again.stderr
    retire = app_repo.gitmem("revoke", old, "--reason", "x", check=False)  # it would lose what replaced it
    assert retire.returncode == 1 and f"{old} is superseded already (by {new})" in retire.stderr
    assert app_repo.entries()[old]["status"] == "superseded"
    gone = app_repo.gitmem("add", "law", "tabs").stdout.split()[0]
    app_repo.gitmem("revoke", gone, "--reason", "spaces now")
    revoked = app_repo.gitmem("add", "law", "y", "--supersedes", gone, check=False)
    assert revoked.returncode == 1 and "it is revoked already" in revoked.stderr
    twice = app_repo.gitmem("add", "law", "z", "--supersedes", new, "--supersedes", new[:12]).stdout.split()[0]
    assert app_repo.entries()[twice]["supersedes"] == [new]


def test_check_names_supersede_links_that_cannot_hold(app_repo):
    """Each file loads on its own; the links between them are the store's: a replacement that
    names no entry or one still active, a superseded entry naming nothing, replacements in a
    circle (no entry of it active: the rule vanished from every session). `check` names each
    file and field."""
    def entry(n, status="active", supersedes=(), by=None):
        text = f"id: 20261205-0000c00{n}\nkind: law\nstatus: {status}\nbody: rule {n}\n"
        text += "".join(f"supersedes: [{old}]\n" for old in supersedes[:1]) + (f"superseded_by: {by}\n" if by else "")
        app_repo.write(f".gitmem/entries/20261205-0000c00{n}.yaml", text)
    entry(1, "superseded", ["20261205-0000c002"], "20261205-0000c002")
    entry(2, "superseded", ["20261205-0000c001"], "20261205-0000c001")
    entry(3, "superseded", by="20261205-deadbeef")
    entry(4, supersedes=["20261205-feedface"])
    entry(5, "superseded")
    entry(6, supersedes=["20261205-0000c007"])  # names an entry that exists but does not load
    app_repo.write(".gitmem/entries/20261205-0000c007.yaml", "id: [broken\n")
    entry(8, supersedes=["20261205-0000c009"])  # what it replaces is still delivered beside it
    entry(9)
    fine = app_repo.gitmem("add", "law", "Use tabs.").stdout.split()[0]
    proc = app_repo.gitmem("check", check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("invalid entry")]
    where = ".gitmem/entries/20261205-0000c00"
    assert proc.returncode == 1 and sorted(lines) == sorted([
        f"invalid entry: {where}1.yaml: superseded_by: replacements run in a circle, so none of them is active: "
        "20261205-0000c001 → 20261205-0000c002 → 20261205-0000c001",
        f"invalid entry: {where}2.yaml: superseded_by: replacements run in a circle, so none of them is active: "
        "20261205-0000c002 → 20261205-0000c001 → 20261205-0000c002",
        f"invalid entry: {where}3.yaml: superseded_by: no entry 20261205-deadbeef in the store",
        f"invalid entry: {where}4.yaml: supersedes: no entry 20261205-feedface in the store",
        f"invalid entry: {where}5.yaml: superseded_by: missing: the entry is superseded but names nothing that replaced it",
        f"invalid entry: {where}8.yaml: supersedes: 20261205-0000c009 is still active, so both are delivered: mark "
        "it `status: superseded` with `superseded_by: 20261205-0000c008`",
        next(line for line in lines if line.startswith(f"invalid entry: {where}7.yaml"))]), proc.stdout
    assert fine in app_repo.gitmem("list").stdout


def test_add_during_a_merge_or_on_a_detached_head_keeps_it_pending(app_repo):
    # Issue 11: staging during a merge lost the entry to `git merge --abort`; it is kept pending
    # (never staged, never in the work tree) and committed on its own once the merge is over.
    app_repo.git("checkout", "-q", "-b", "topic")
    app_repo.write("README.md", "topic\n")
    app_repo.commit_all("topic readme")
    app_repo.git("checkout", "-q", "main")
    app_repo.write("README.md", "main\n")
    app_repo.commit_all("main readme")
    app_repo.git("merge", "topic", check=False)  # conflicts
    head = app_repo.git("rev-parse", "HEAD")
    proc = app_repo.gitmem("add", "law", "keep the README short")
    assert "a merge is in progress" in proc.stderr
    assert app_repo.git("rev-parse", "HEAD") == head
    entry_id = proc.stdout.split()[0]
    assert ".gitmem/entries" not in app_repo.git("diff", "--cached", "--name-only")
    assert not (app_repo.path / f".gitmem/entries/{entry_id}.yaml").exists()
    assert entry_id in app_repo.entries()  # still listed (and delivered) while pending
    app_repo.git("merge", "--abort")
    app_repo.gitmem("list")  # the next command commits it
    assert app_repo.git("log", "-1", "--format=%s").strip() == "gitmem: record law: keep the README short"
    assert app_repo.git("status", "--porcelain") == ""

    app_repo.git("checkout", "-q", "--detach")
    proc = app_repo.gitmem("add", "law", "detached rule")
    assert "HEAD is detached" in proc.stderr


def test_first_entry_in_a_repository_without_commits(repo):
    repo.gitmem("init")
    entry_id = repo.gitmem("add", "law", "all money is integer cents").stdout.split()[0]
    assert repo.git("log", "--format=%s").strip() == "gitmem: record law: all money is integer cents"
    assert entry_id in repo.entries()


def test_concurrent_adds_lose_nothing(app_repo):
    procs = [subprocess.Popen([sys.executable, "-m", "gitmem.cli", "add", "law", f"rule number {i}"],
                              cwd=app_repo.path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(8)]
    ids = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        ids.append(out.split()[0])
    entries = app_repo.entries()
    assert sorted(e["body"] for e in entries.values()) == sorted(f"rule number {i}" for i in range(8))
    assert set(ids) == set(entries)
    subjects = app_repo.git("log", "--format=%s").splitlines()
    assert sum(s.startswith("gitmem: record law: rule number") for s in subjects) == 8
    assert app_repo.git("status", "--porcelain", "--", ".gitmem/entries") == ""


def test_entry_dict_round_trip():
    data = {"id": "x", "kind": "ritual", "body": "bump db/VERSION", "triggers": ["commit", "edit:db/**"],
            "anchor": "db/migrate.py::migrate", "expires": "2030-01-01"}
    entry = Entry.from_dict(data, "x.yaml")
    assert str(entry.anchor) == "db/migrate.py::migrate"
    assert Entry.from_dict(entry.to_dict(), "x.yaml") == entry
    assert not entry.expired()


def test_show_and_log(app_repo):
    entry_id = app_repo.gitmem("add", "ritual", "run make openapi after API changes", "--on", "commit").stdout.split()[0]
    shown = app_repo.gitmem("show", entry_id[-8:]).stdout
    assert "ritual [active] from user" in shown and "run make openapi" in shown and "delivered on: commit" in shown
    assert "gitmem: record ritual" in app_repo.gitmem("log").stdout
    assert app_repo.gitmem("show", "nope", check=False).returncode == 1
    # a hand-written entry that says nothing of when it was made, with a move written by hand
    app_repo.write(".gitmem/entries/20260101-0e0e0e0e.yaml", "id: 20260101-0e0e0e0e\nkind: law\nbody: Keep it.\n"
                   "moves:\n- from: a.py::f\n  to: b.py::f\n")
    shown = app_repo.gitmem("show", "20260101-0e0e0e0e").stdout
    assert "re-anchored: a.py::f -> b.py::f\n" in shown and "created" not in shown, shown


def test_an_entry_is_named_by_its_id_or_four_characters_that_begin_it_or_its_hex_part(app_repo):
    entry_id = app_repo.gitmem("add", "law", "Keep handlers thin.").stdout.split()[0]
    for name in (entry_id, entry_id[:13], entry_id[9:13]):
        assert "Keep handlers thin." in app_repo.gitmem("show", name).stdout, name
    for name in ("", entry_id[-1], entry_id[9:12], entry_id[-4:]):  # too short, or its end: not a name of it
        assert app_repo.gitmem("revoke", name, "--reason", "r", check=False).returncode == 1, name
    assert app_repo.entries()[entry_id]["status"] == "active"


def test_add_reads_a_body_of_dash_from_standard_input_and_refuses_an_empty_symbol(app_repo):
    entry_id = app_repo.gitmem("add", "law", "-", input='Never write "TODO" in a commit message.\n').stdout.split()[0]
    assert app_repo.entries()[entry_id]["body"] == 'Never write "TODO" in a commit message.'
    proc = app_repo.gitmem("add", "law", "Keep it.", "--anchor", "src/app.py::", check=False)
    assert proc.returncode == 1 and "names no declaration after '::'" in proc.stderr


def test_expires_must_be_a_real_time_still_to_come(app_repo):
    import datetime as dt

    an_hour_ago = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    for value, said in (("2099-01-01T25:00:00Z", "is not a date"), (an_hour_ago, "has passed")):
        proc = app_repo.gitmem("add", "law", "Freeze deploys.", "--expires", value, check=False)
        assert proc.returncode == 1 and said in proc.stderr, value
    assert app_repo.gitmem("add", "law", "Freeze deploys.", "--expires", "2099-01-01T10:00:00Z").returncode == 0


def test_example_store_is_valid_and_shows_every_kind():
    from pathlib import Path

    from gitmem.store.yaml_files import parse_entry_text

    root = Path(__file__).resolve().parents[1] / ".gitmem-example" / "entries"
    entries = [parse_entry_text(p.read_text(encoding="utf-8"), p.relative_to(root.parent.parent).as_posix())
               for p in sorted(root.glob("*.yaml"))]
    assert {e.kind for e in entries} == {"law", "hazard", "ritual", "correction", "open_loop"}
    assert any(e.anchor and e.anchor.symbol for e in entries if e.active)
    assert any(e.status == "revoked" and e.revocation and e.revocation.reason for e in entries)
    by_id = {e.id: e for e in entries}
    superseded = [e for e in entries if e.status == "superseded"]
    assert superseded and all(by_id[e.superseded_by].supersedes == (e.id,) for e in superseded)


def test_add_refuses_what_could_never_work_and_reads_anchors_from_the_folder_it_runs_in(app_repo):
    past = app_repo.gitmem("add", "law", "x", "--expires", "2020-01-01", check=False)
    assert past.returncode == 1 and "--expires: 2020-01-01 has passed" in past.stderr
    empty = app_repo.gitmem("add", "law", "x", "--on", "edit:", check=False)
    assert empty.returncode == 1 and "names no glob after the colon" in empty.stderr
    assert app_repo.git("log", "--format=%s").splitlines() == ["initial"]
    proc = subprocess.run([sys.executable, "-m", "gitmem.cli", "add", "hazard", "run() blocks the loop",
                           "--anchor", "app.py::Flask.run"], cwd=app_repo.path / "src",
                          capture_output=True, text=True, check=True)
    entry = app_repo.entries()[proc.stdout.split()[0]]
    assert entry["anchor"].startswith("src/app.py::Flask.run"), entry["anchor"]


def test_list_and_show_mark_an_expired_entry(app_repo):
    entry_id = app_repo.gitmem("add", "law", "freeze merges this week", "--expires", "2099-01-01").stdout.split()[0]
    rel = f".gitmem/entries/{entry_id}.yaml"
    app_repo.write(rel, app_repo.read(rel).replace("2099-01-01", "2021-01-01"))
    app_repo.commit_all("it was for one week")
    assert "[expired]" in app_repo.gitmem("list").stdout
    assert "[active, expired 2021-01-01]" in app_repo.gitmem("show", entry_id).stdout


def test_add_in_a_repository_that_never_ran_init_is_refused(repo):
    repo.write("a.py", "x = 1\n")
    repo.commit_all("initial")
    proc = repo.gitmem("add", "law", "Use tabs.", check=False)
    assert proc.returncode == 1 and "no .gitmem/ here: run `gitmem init` first" in proc.stderr
    assert not (repo.path / ".gitmem").exists() and repo.git("log", "--oneline").count("\n") == 1
    # nor do the read commands speak of a store that is not there ("all anchors resolve")
    for command in (["check"], ["list"], ["show", "20260101-00000000"], ["stats"]):
        proc = repo.gitmem(*command, check=False)
        assert proc.returncode == 1 and "run `gitmem init` first" in proc.stderr, (command, proc)
    assert repo.gitmem("log").stdout.strip() == "no memory commits yet"  # history needs no store


def test_check_before_the_first_commit_checks_the_work_tree(repo):
    repo.gitmem("init")
    assert repo.gitmem("check").returncode == 0  # no "unknown revision 'HEAD'"
    repo.write(".gitmem/entries/20260101-0badf00d.yaml", "id: 20260101-0badf00d\nkind: rumour\n")
    proc = repo.gitmem("check", check=False)
    assert proc.returncode == 1 and "kind" in proc.stdout, proc


def test_an_entries_path_that_is_not_a_folder_is_an_error_not_an_empty_store(app_repo):
    entries = app_repo.path / ".gitmem" / "entries"
    for child in entries.iterdir():
        child.unlink()
    entries.rmdir()
    entries.write_text("not a folder\n")
    head = app_repo.git("rev-parse", "HEAD")
    for command in (["list"], ["check"], ["add", "law", "Use tabs for indentation, always."]):
        proc = app_repo.gitmem(*command, check=False)
        assert proc.returncode == 1 and ".gitmem/entries is not a folder" in proc.stderr, (command, proc)
    assert app_repo.git("rev-parse", "HEAD") == head  # nothing committed that the work tree cannot hold


def test_text_that_is_not_utf8_is_refused_in_one_line(app_repo):
    latin1 = "caf\udce9 rule"  # what Python makes of a Latin-1 terminal's bytes
    proc = subprocess.run([sys.executable, "-m", "gitmem.cli", "add", "law", latin1], cwd=app_repo.path,
                          capture_output=True, text=True, errors="surrogateescape")
    assert proc.returncode == 1 and proc.stderr == "gitmem: the body is not valid UTF-8 (is the terminal " \
        "set to another encoding?)\n", proc.stderr
    piped = subprocess.run([sys.executable, "-m", "gitmem.cli", "add", "law", "-"], cwd=app_repo.path,
                           input=b"\xff rule", capture_output=True)
    assert piped.returncode == 1 and b"not valid UTF-8" in piped.stderr and b"Traceback" not in piped.stderr
    entry = app_repo.gitmem("add", "law", "Use tabs.").stdout.split()[0]
    revoke = subprocess.run([sys.executable, "-m", "gitmem.cli", "revoke", entry, "--reason", "bad \udcff"],
                            cwd=app_repo.path, capture_output=True, text=True, errors="surrogateescape")
    assert revoke.returncode == 1 and "the revocation reason is not valid UTF-8" in revoke.stderr, revoke.stderr


def test_git_dir_naming_another_repository_is_refused(app_repo, tmp_path):
    from conftest import GitRepo

    other = GitRepo(tmp_path / "other")
    other.path.mkdir()
    other.git("init", "-q", "-b", "main")
    env = {**os.environ, "GIT_DIR": str(other.path / ".git"), "GIT_WORK_TREE": str(other.path)}
    for command in (["list"], ["log"], ["add", "law", "Use tabs."]):
        proc = subprocess.run([sys.executable, "-m", "gitmem.cli", *command], cwd=app_repo.path, env=env,
                              capture_output=True, text=True)
        assert proc.returncode == 1 and "names another repository than the one this folder is in" in proc.stderr
    assert other.git("rev-list", "--all").strip() == "" and app_repo.git("log", "--format=%s").splitlines() == [
        "initial"]
    same = {**os.environ, "GIT_DIR": ".git"}  # as git sets it for the hooks it runs
    assert subprocess.run([sys.executable, "-m", "gitmem.cli", "list"], cwd=app_repo.path, env=same).returncode == 0
    app_repo.git("worktree", "add", "-q", str(tmp_path / "linked"))  # its .git is a file naming its git dir
    (tmp_path / "linked" / "src").mkdir(exist_ok=True)
    for cwd, env in ((tmp_path / "linked", {"GIT_DIR": ".git"}),  # as `git submodule foreach` sets it
                     (tmp_path / "linked" / "src", {"GIT_DIR": "../.git", "GIT_WORK_TREE": ".."})):
        proc = subprocess.run([sys.executable, "-m", "gitmem.cli", "log"], cwd=cwd, env={**os.environ, **env},
                              capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stdout == "no memory commits yet\n", proc.stderr
    # relative values, from a folder below the root (gitmem runs git from the root)
    (app_repo.path / "docs").mkdir(exist_ok=True)
    relative = {**os.environ, "GIT_DIR": "../.git", "GIT_WORK_TREE": ".."}
    for command in (["check"], ["add", "law", "Use tabs."]):
        proc = subprocess.run([sys.executable, "-m", "gitmem.cli", *command], cwd=app_repo.path / "docs",
                              env=relative, capture_output=True, text=True)
        assert proc.returncode == 0, (command, proc.stderr)
    assert app_repo.git("log", "-1", "--format=%s").startswith("gitmem: record law")


def test_log_says_what_git_says_and_an_empty_history_plainly(app_repo):
    assert app_repo.gitmem("log").stdout.strip() == "no memory commits yet"
    huge = app_repo.gitmem("log", "-n", "99999999999999999999", check=False)
    assert huge.returncode == 2 and "99999999999999999999" in huge.stderr


def test_an_entries_folder_that_is_a_link_is_refused_not_read(app_repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "20260101-0a0a0a0a.yaml").write_text(
        "id: 20260101-0a0a0a0a\nkind: law\nstatus: active\nsource: user\nbody: Push straight to main.\n")
    entries = app_repo.path / ".gitmem" / "entries"
    entries.rmdir()
    entries.symlink_to(outside)
    for command in (["list"], ["check"]):
        proc = app_repo.gitmem(*command, check=False)
        assert proc.returncode == 1 and ".gitmem/entries is a symbolic link" in proc.stderr, proc
    assert "Push straight" not in app_repo.gitmem("render", "--event", "session-start", check=False).stdout
    # status names the link and reads nothing through it (a file there is no stray of the store's)
    (outside / "notes.yml").write_text("x: 1\n")
    shown = app_repo.gitmem("status").stdout
    assert "entries: .gitmem/entries is a symbolic link" in shown and "notes.yml" not in shown, shown


def test_yaml_files_the_store_never_reads_are_named_by_status_list_and_check(app_repo):
    for rel in (".gitmem/entries/20260101-0b0b0b0b.YAML", ".gitmem/20260101-0c0c0c0c.yaml",
                ".gitmem/entries/20260101-0d0d0d0d.yml"):
        app_repo.write(rel, "id: x\n")
        for command in (["status"], ["check"]):
            out = app_repo.gitmem(*command, check=False)
            assert rel in out.stdout + out.stderr, (command, rel, out)
        assert rel in app_repo.gitmem("list").stderr


def test_check_reads_a_three_dot_range_and_refuses_two_modes_at_once(app_repo):
    app_repo.write("b.py", "x = 1\n")
    app_repo.commit_all("second")
    assert app_repo.gitmem("check", "--rev", "HEAD~1...HEAD").returncode == 0  # as CI passes base...head
    typo = app_repo.gitmem("check", "--rev", "HEAD~9...HEAD", check=False)
    assert typo.returncode == 1 and "unknown revision 'HEAD~9'" in typo.stderr
    both = app_repo.gitmem("check", "--staged", "--rev", "HEAD", check=False)
    assert both.returncode == 2 and "give one of them" in both.stderr
    empty = app_repo.gitmem("add", "law", "Use tabs.", "--expires", "", check=False)
    assert empty.returncode == 1 and "--expires: empty" in empty.stderr


def test_a_trigger_glob_that_cannot_mean_what_was_meant_is_refused_or_said(app_repo):
    proc = app_repo.gitmem("add", "law", "pages export metadata", "--on", "edit:app/[slug", check=False)
    assert proc.returncode == 1 and "opens a '[' it never closes" in proc.stderr, proc
    app_repo.write("app/[slug]/page.tsx", "export const metadata = {}\n")
    app_repo.commit_all("a dynamic route")
    said = app_repo.gitmem("add", "law", "pages export metadata", "--on", "edit:app/[slug]/**")
    assert "no tracked file matches edit:app/[slug]/** yet" in said.stderr and "write [[]" in said.stderr
    quiet = app_repo.gitmem("add", "law", "pages export their metadata", "--on", "edit:app/[[]slug]/**")
    assert "no tracked file matches" not in quiet.stderr, quiet.stderr
    assert len(app_repo.entries()) == 2


def test_an_anchor_that_a_link_now_leads_out_of_the_repository_is_reported(repo, tmp_path):
    # the folder replaced by a link after the entry was recorded: no entry file changed
    repo.with_gitmem({"src/a.py": "def f():\n    return 1\n"})
    entry = repo.gitmem("add", "law", "f stays pure", "--anchor", "src/a.py::f").stdout.split()[0]
    assert entry in repo.gitmem("list").stdout  # the compiled index now holds it
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.py").write_text("def f():\n    return 1\n")
    import shutil

    shutil.rmtree(repo.path / "src")
    (repo.path / "src").symlink_to(outside)
    listed = repo.gitmem("list")
    assert entry not in listed.stdout and "leads out of the repository" in listed.stderr
    assert repo.gitmem("check", check=False).returncode == 1


def test_diff_and_check_in_a_repository_with_no_commits_say_so(repo, monkeypatch):
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    repo.gitmem("init")
    for command in (["diff"], ["check", "--rev", "HEAD"]):
        proc = repo.gitmem(*command, check=False)
        assert proc.returncode == 1 and "no commits yet" in proc.stderr and "unknown revision" not in proc.stderr

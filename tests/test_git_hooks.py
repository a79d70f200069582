"""Anchors stay true: real commits, merges and rebases through the installed git hooks."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

LEDGER = '''\
export function syncLedger(db) {
  return db.flush({ sync: true });
}

export class Ledger {
  post(entry) {
    this.entries.push(entry);
    return entry.id;
  }
}

export const formatAmount = (cents) => (cents / 100).toFixed(2);
'''

SERVICE = '''\
class Base:
    pass


class Service(Base):
    def sync(self, db):
        db.flush()
        return "synced"

    def status(self):
        return "ok"


def retry(fn, attempts=3):
    for _ in range(attempts):
        fn()
'''


@pytest.fixture
def code_repo(repo):
    return repo.with_gitmem({"src/ledger/sync.js": LEDGER, "app/service.py": SERVICE, "app/__init__.py": "",
                             "docs/index.md": "docs\n"})


def add(repo, kind, body, anchor=None):
    args = ["add", kind, body] + (["--anchor", anchor] if anchor else [])
    return repo.gitmem(*args).stdout.split()[0]


def committed_files(repo, rev="HEAD"):
    return sorted(repo.git("show", "--name-only", "--format=", rev).split())


def test_unrelated_commit_leaves_memory_alone(code_repo):
    entry = add(code_repo, "hazard", "syncLedger took prod down in a handler", "src/ledger/sync.js::syncLedger")
    code_repo.write("docs/index.md", "more docs\n")
    code_repo.commit_all("docs")
    assert committed_files(code_repo) == ["docs/index.md"]
    assert code_repo.entries()[entry]["status"] == "active"


def test_deleting_the_declaration_retires_the_entry_in_the_same_commit(code_repo):
    entry = add(code_repo, "hazard", "syncLedger took prod down in a handler", "src/ledger/sync.js::syncLedger")
    other = add(code_repo, "law", "Ledger.post must stay idempotent", "src/ledger/sync.js::Ledger.post")
    code_repo.write("src/ledger/sync.js", LEDGER.split("export class")[0].replace(
        "export function syncLedger(db) {\n  return db.flush({ sync: true });\n}\n", "") +
        "export class" + LEDGER.split("export class")[1])
    code_repo.git("add", "-A")
    proc = code_repo.git("commit", "-q", "-m", "remove syncLedger")
    assert committed_files(code_repo) == sorted([f".gitmem/entries/{entry}.yaml", "src/ledger/sync.js"])
    entries = code_repo.entries()
    retired = entries[entry]
    assert retired["status"] == "revoked"
    assert "`syncLedger` was removed from src/ledger/sync.js" in retired["revocation"]["reason"]
    assert "no longer holds" in retired["revocation"]["reason"]
    # the note's commit is knowable after the fact: the commit that carried the retirement
    assert retired["revocation"]["commit"] == code_repo.git("rev-parse", "HEAD").strip()
    assert entries[other]["status"] == "active"
    assert code_repo.git("status", "--porcelain") == ""
    assert proc == ""


def test_entry_files_gitmem_writes_are_clean_in_the_index(code_repo):
    # written into the index without stat data, a clean entry file read as changed to git:
    # `git diff-index`, `git apply --index` and sparse checkouts refused or misreported it
    entry = add(code_repo, "hazard", "retry() swallows errors", "app/service.py::retry")
    assert subprocess.run(["git", "diff-index", "--quiet", "HEAD", "--"], cwd=code_repo.path).returncode == 0
    code_repo.write("app/service.py", SERVICE.split("\n\ndef retry")[0] + "\n")
    code_repo.git("commit", "-q", "-am", "drop retry")  # pre-commit stages the retirement
    assert code_repo.entries()[entry]["status"] == "revoked"
    assert subprocess.run(["git", "diff-index", "--quiet", "HEAD", "--"], cwd=code_repo.path).returncode == 0


def test_a_rename_the_hooks_did_not_see_is_followed_at_the_next_commit(code_repo):
    # `--no-verify` skipped the re-check: the next commit of the file catches up, and the anchor
    # follows the same body to its new name instead of being retired as gone
    entry = add(code_repo, "hazard", "retry() swallows errors", "app/service.py::retry")
    code_repo.write("app/service.py", SERVICE.replace("def retry(", "def retry_all("))
    code_repo.git("commit", "-q", "--no-verify", "-am", "rename retry")
    assert code_repo.entries()[entry]["anchor"] == "app/service.py::retry"  # stale, unchecked
    code_repo.write("app/service.py", SERVICE.replace("def retry(", "def retry_all(").replace('"ok"', '"fine"'))
    code_repo.git("commit", "-q", "-am", "status wording")
    after = code_repo.entries()[entry]
    assert after["status"] == "active" and after["anchor"] == "app/service.py::retry_all"


def test_a_name_moves_with_its_body_not_onto_an_unrelated_namesake(code_repo):
    entry = add(code_repo, "hazard", "retry() swallows errors", "app/service.py::retry")
    without = SERVICE.split("\n\ndef retry")[0] + "\n"
    # moved to another file and edited there: the name and most of the body's words followed it
    code_repo.write("app/service.py", without)
    code_repo.write("app/util.py", "def retry(fn, attempts=5):\n    for _ in range(attempts):\n        fn()\n"
                    "    log.debug('retried')\n")
    code_repo.git("add", "-A")
    code_repo.git("commit", "-q", "-m", "move retry")
    moved = code_repo.entries()[entry]
    assert moved["status"] == "active" and moved["anchor"] == "app/util.py::retry"
    # removed, while an unrelated function of the same name appears elsewhere: retired, not moved onto it
    other = add(code_repo, "hazard", "retry() swallows errors", "app/util.py::retry")
    code_repo.write("app/util.py", "\n")
    code_repo.write("app/cli.py", "def retry(argv):\n    parser = argparse.ArgumentParser(prog='again')\n"
                    "    return parser.parse_args(argv)\n")
    code_repo.git("add", "-A")
    code_repo.git("commit", "-q", "-m", "drop retry; a CLI subcommand")
    assert code_repo.entries()[other]["status"] == "revoked"


def test_an_entry_file_deleted_but_not_staged_is_still_rechecked(code_repo):
    # the commit holds the entry as staged: retiring it there keeps HEAD true of the code
    entry = add(code_repo, "hazard", "retry() swallows errors", "app/service.py::retry")
    (code_repo.path / f".gitmem/entries/{entry}.yaml").unlink()
    code_repo.write("app/service.py", SERVICE.split("\n\ndef retry")[0] + "\n")
    code_repo.git("add", "app/service.py")
    code_repo.git("commit", "-q", "-m", "drop retry")
    assert "status: revoked" in code_repo.git("show", f"HEAD:.gitmem/entries/{entry}.yaml")
    assert not (code_repo.path / f".gitmem/entries/{entry}.yaml").exists()  # their deletion stays theirs


@pytest.mark.parametrize("cut", [0, 20])
def test_a_list_of_anchored_paths_cut_short_neither_stops_commits_nor_skips_the_recheck(code_repo, cut):
    # what a crash mid-write can leave: sourced, a cut line stopped every commit with a syntax
    # error, and an empty one let a removal through unchecked
    entry = add(code_repo, "hazard", "retry() swallows errors", "app/service.py::retry")
    listed = code_repo.path / ".git/gitmem/anchored-paths.sh"
    assert listed.read_text().rstrip().endswith("# gitmem:end")
    with open(listed, "r+b") as handle:
        handle.truncate(cut)
    code_repo.write("docs/index.md", "more docs\n")
    code_repo.git("commit", "-q", "-am", "docs")
    code_repo.write("app/service.py", SERVICE.split("\n\ndef retry")[0] + "\n")
    code_repo.git("commit", "-q", "-am", "drop retry")
    assert code_repo.entries()[entry]["status"] == "revoked"


def test_function_moved_to_another_file_is_reanchored(code_repo):
    entry = add(code_repo, "hazard", "retry hammers the API", "app/service.py::retry")
    code_repo.write("app/service.py", SERVICE.split("def retry")[0].rstrip() + "\n")
    code_repo.write("app/util.py", "import time\n\n\ndef retry(fn, attempts=3):\n    for _ in range(attempts):\n        fn()\n")
    code_repo.commit_all("move retry to util")
    assert f".gitmem/entries/{entry}.yaml" in committed_files(code_repo)
    moved = code_repo.entries()[entry]
    assert moved["status"] == "active" and moved["anchor"] == "app/util.py::retry"
    shown = code_repo.gitmem("show", entry).stdout
    assert "app/service.py::retry -> app/util.py::retry" in shown


def test_rename_with_the_same_body_is_reanchored(code_repo):
    entry = add(code_repo, "hazard", "never call syncLedger from a request handler", "src/ledger/sync.js::syncLedger")
    code_repo.write("src/ledger/sync.js", LEDGER.replace("function syncLedger(", "function flushLedger("))
    code_repo.commit_all("rename")
    assert code_repo.entries()[entry]["anchor"] == "src/ledger/sync.js::flushLedger"


def test_method_moved_to_a_base_class_in_another_file(code_repo):
    entry = add(code_repo, "law", "sync must flush before returning", "app/service.py::Service.sync")
    code_repo.write("app/base.py", "class Base:\n    def sync(self, db):\n        db.flush()\n        return \"synced\"\n")
    code_repo.write("app/service.py", SERVICE.replace(
        "class Base:\n    pass\n\n\n", "from app.base import Base\n\n\n").replace(
        "    def sync(self, db):\n        db.flush()\n        return \"synced\"\n\n", ""))
    code_repo.commit_all("pull sync up into Base")
    assert code_repo.entries()[entry]["anchor"] == "app/base.py::Base.sync"


def test_whole_package_directory_move(code_repo):
    py = add(code_repo, "law", "status is polled by the LB", "app/service.py::Service.status")
    js = add(code_repo, "law", "format with two decimals", "src/ledger/sync.js::formatAmount")
    whole = add(code_repo, "law", "the ledger package is owned by payments", "src/ledger/sync.js")
    code_repo.git("mv", "app", "core")
    code_repo.git("mv", "src/ledger", "src/books")
    code_repo.git("commit", "-q", "-m", "rename packages")
    entries = code_repo.entries()
    assert entries[py]["anchor"] == "core/service.py::Service.status"
    assert entries[js]["anchor"] == "src/books/sync.js::formatAmount"
    assert entries[whole]["anchor"] == "src/books/sync.js"
    assert len([f for f in committed_files(code_repo) if f.startswith(".gitmem/")]) == 3


def test_deleted_file_retires_file_and_symbol_anchors(code_repo):
    sym = add(code_repo, "hazard", "retry hammers the API", "app/service.py::retry")
    whole = add(code_repo, "law", "service.py is generated, do not edit", "app/service.py")
    code_repo.git("rm", "-q", "app/service.py")
    code_repo.git("commit", "-q", "-m", "drop service")
    entries = code_repo.entries()
    assert entries[sym]["status"] == entries[whole]["status"] == "revoked"
    assert "app/service.py was deleted" in entries[whole]["revocation"]["reason"]


def test_commit_all_and_partial_paths_use_the_right_index(code_repo):
    entry = add(code_repo, "hazard", "retry hammers the API", "app/service.py::retry")
    code_repo.write("app/service.py", SERVICE.split("def retry")[0])
    code_repo.git("commit", "-q", "-a", "-m", "commit -a")
    assert code_repo.entries()[entry]["status"] == "revoked"
    assert f".gitmem/entries/{entry}.yaml" in committed_files(code_repo)


def test_a_partial_commit_of_named_paths_leaves_index_and_tree_in_step(code_repo):
    entry = add(code_repo, "hazard", "retry hammers the API", "app/service.py::retry")
    code_repo.write("app/service.py", SERVICE.split("def retry")[0])
    code_repo.write("docs/index.md", "docs, edited but not committed\n")
    code_repo.git("commit", "-q", "-m", "partial", "--", "app/service.py")
    assert f".gitmem/entries/{entry}.yaml" in committed_files(code_repo)
    assert "status: revoked" in code_repo.git("show", f"HEAD:.gitmem/entries/{entry}.yaml")
    # The retirement is in HEAD, in the index and in the work tree alike; only the file the
    # user left out of the commit is still modified.
    assert code_repo.git("status", "--porcelain").splitlines() == [" M docs/index.md"]


def test_existing_user_hook_still_runs_and_can_still_block(repo):
    hook = repo.path / ".git/hooks/pre-commit"
    original = "#!/bin/sh\necho ran >> \"$(git rev-parse --git-dir)/user-hook-ran\"\n[ ! -f BLOCK ]\n"
    hook.write_text(original)
    hook.chmod(0o755)
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit_all("first")  # the user's hook alone
    (repo.path / ".git/info").mkdir(exist_ok=True)
    (repo.path / ".git/info/attributes").write_text("*.bin binary")  # the user's own, no newline
    repo.gitmem("init")
    repo.gitmem("init")  # idempotent
    assert (repo.path / ".git/info/attributes").read_text() == "*.bin binary\n/AGENTS.md merge=gitmem-agents-md\n"
    assert (repo.path / ".git/hooks/pre-commit.gitmem-orig").read_text() == original
    assert not (repo.path / ".git/hooks/pre-commit.gitmem-orig.prev").exists()
    repo.write("a.py", "def f():\n    return 2\n")
    repo.commit_all("second")
    assert (repo.path / ".git/user-hook-ran").read_text() == "ran\nran\n"
    repo.write("BLOCK", "")
    repo.git("add", "-A")
    blocked = repo.git("commit", "-q", "-m", "blocked", check=False)
    assert repo.git("log", "-1", "--format=%s").strip() == "second", blocked
    repo.gitmem("uninstall")
    assert hook.read_text() == original
    assert stat.S_IMODE(hook.stat().st_mode) & 0o111
    assert not (repo.path / ".git/hooks/post-merge").exists()
    assert repo.git("config", "--get", "diff.gitmem.textconv", check=False) == ""
    assert (repo.path / ".git/info/attributes").read_text() == "*.bin binary"  # as it was: no newline


def test_hooks_other_tools_put_over_the_stub_are_each_kept(repo):
    """Each time another tool writes its pre-commit over gitmem's stub, `init` chains the new one
    and keeps the one chained before: none is ever overwritten, and uninstall names them."""
    hooks = repo.path / ".git/hooks"
    for version in "ABC":
        (hooks / "pre-commit").write_text(f"#!/bin/sh\necho HOOK-{version}\n")
        (hooks / "pre-commit").chmod(0o755)
        repo.gitmem("init")
    assert (hooks / "pre-commit.gitmem-orig").read_text() == "#!/bin/sh\necho HOOK-C\n"
    kept = sorted(p.read_text() for p in hooks.glob("pre-commit.gitmem-orig.prev*"))
    assert kept == ["#!/bin/sh\necho HOOK-A\n", "#!/bin/sh\necho HOOK-B\n"]
    # the same script written over the stub again (husky's shims, the framework's hook): one copy chained
    (hooks / "pre-commit").write_text("#!/bin/sh\necho HOOK-C\n")
    (hooks / "pre-commit").chmod(0o755)
    repo.gitmem("init")
    assert len(list(hooks.glob("pre-commit.gitmem-orig.prev*"))) == 2
    out = repo.gitmem("uninstall").stdout
    assert (hooks / "pre-commit").read_text() == "#!/bin/sh\necho HOOK-C\n"
    assert "pre-commit.gitmem-orig.prev" in out and "pre-commit.gitmem-orig.prev.2" in out
    assert "prev.3" not in out


def test_a_hook_whose_shebang_sets_e_still_stops_a_failing_commit(repo):
    """A `#!/bin/sh -e` hook that finds its files from $0 is executed, not sourced (sourcing drops
    -e: its failing check would let the commit through)."""
    hook = repo.path / ".git/hooks/pre-commit"
    hook.write_text('#!/bin/sh -e\nhere=$(dirname "$0")\nfalse\necho after >> "$here/../ran"\n')
    hook.chmod(0o755)
    repo.write("a.py", "x = 1\n")
    repo.git("add", "a.py")
    repo.gitmem("init")
    assert "GITMEM_ORIG_MODE=exec" in hook.read_text()
    assert subprocess.run(["git", "commit", "-qm", "x"], cwd=repo.path).returncode != 0
    assert not (repo.path / ".git/ran").exists()


FRAMEWORK_CONFIG = "repos:\n- repo: local\n  hooks:\n  - id: mark\n    name: mark\n    entry: sh -c 'echo ran >> .git/framework-ran'\n    language: system\n    pass_filenames: false\n"


def framework_repo(repo, monkeypatch, tmp_path, source: str, *hook_types: str) -> tuple[list[str], Path]:
    """A repository whose team uses the real pre-commit framework (the test extra): its
    `pre-commit install` command (for `hook_types`) and the hooks folder."""
    types = [arg for kind in hook_types for arg in ("-t", kind)]
    monkeypatch.setenv("PRE_COMMIT_HOME", str(tmp_path / "pre-commit-home"))
    repo.write(".pre-commit-config.yaml", FRAMEWORK_CONFIG)
    repo.write("a.py", source)
    repo.commit_all("first")
    return [str(Path(sys.executable).parent / "pre-commit"), "install", *types], repo.path / ".git/hooks"


def developers_hook(hooks: Path) -> str:
    mine = "#!/bin/sh\necho mine >> .git/developer-ran\n"
    (hooks / "pre-commit").write_text(mine)
    (hooks / "pre-commit").chmod(0o755)
    return mine


@pytest.mark.parametrize("order", ["gitmem first", "framework first", "developer's hook, framework, gitmem"])
def test_gitmem_runs_inside_the_pre_commit_framework_and_pre_commit_install_changes_nothing(repo, monkeypatch,
                                                                                             tmp_path, order):
    """The pre-commit framework keeps the hook it finds as `pre-commit.legacy` and runs it first.
    gitmem's stub in front of the framework was moved there by the next `pre-commit install`, over
    the developer's hook the framework kept there (lost), and ran the framework chained behind it
    inside itself, which refuses every commit ("installed in migration mode"). The stub stands in
    that slot: the framework's own `pre-commit install` finds its script in place and changes
    nothing; every commit runs the developer's hook, gitmem's re-check and the framework's hooks,
    each once; uninstall leaves what was there before gitmem. The real framework (test extra)."""
    framework, hooks = framework_repo(repo, monkeypatch, tmp_path, "def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    if order.startswith("developer"):
        developers_hook(hooks)
    if order != "gitmem first":
        subprocess.run(framework, cwd=repo.path, check=True, capture_output=True)
    before = {p.name: p.read_bytes() for p in hooks.iterdir() if not p.name.endswith(".sample")}
    repo.gitmem("init")
    entry = repo.gitmem("add", "hazard", "g is slow", "--anchor", "a.py::g").stdout.split()[0]
    subprocess.run(framework, cwd=repo.path, check=True, capture_output=True)  # a `make setup` run again
    settled = {p.name: p.read_bytes() for p in hooks.iterdir()}
    assert b"hook-impl" in settled["pre-commit"] and b"gitmem: managed hook stub" in settled["pre-commit.legacy"]
    assert repo.gitmem("init").stdout.count("installed") == 0  # as gitmem left it
    assert "pre-commit hook" not in repo.gitmem("status").stdout
    from gitmem.githooks.presence import hooks_not_run  # what a session start would warn of
    assert hooks_not_run(str(repo.path), str(repo.path / ".git"), str(repo.path / ".git")) is None
    subprocess.run(framework, cwd=repo.path, check=True, capture_output=True)
    assert {p.name: p.read_bytes() for p in hooks.iterdir()} == settled
    ran = {name: repo.path / ".git" / f"{name}-ran" for name in ("framework", "developer")}
    repo.write("a.py", "def f():\n    return 1\n")  # g dropped: gitmem's re-check retires its entry
    made = subprocess.run(["git", "commit", "-qam", "drop g"], cwd=repo.path, capture_output=True, text=True)
    assert made.returncode == 0 and "migration mode" not in made.stderr, made.stderr
    assert repo.entries()[entry]["status"] == "revoked"
    assert ran["framework"].read_text() == "ran\n"
    assert ran["developer"].read_text() == "mine\n" if order.startswith("developer") else not ran["developer"].exists()
    repo.gitmem("uninstall")
    assert {p.name: p.read_bytes() for p in hooks.iterdir() if not p.name.endswith(".sample")} == (
        before if order != "gitmem first" else {"pre-commit": settled["pre-commit"]})


def test_under_the_framework_post_rewrite_still_reads_what_was_rewritten(repo, monkeypatch, tmp_path):
    """The framework runs its legacy hook with no input: post-rewrite, which reads the rewritten
    commits on stdin, stands in front of the framework, so an amend that puts a removed
    declaration back restores its entry. `pre-commit install -f` empties the legacy slot: the
    developer's hook gitmem chained from it leaves the chain too (kept aside)."""
    framework, hooks = framework_repo(repo, monkeypatch, tmp_path, "def f():\n    return 1\n\n\ndef g():\n    return 2\n",
                                      "pre-commit", "post-rewrite")
    developers_hook(hooks)
    subprocess.run(framework, cwd=repo.path, check=True, capture_output=True)
    repo.gitmem("init")
    assert b"gitmem: managed hook stub" in (hooks / "post-rewrite").read_bytes()
    assert b"hook-impl" in (hooks / "post-rewrite.gitmem-orig").read_bytes()
    entry = repo.gitmem("add", "hazard", "g is slow", "--anchor", "a.py::g").stdout.split()[0]
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit_all("drop g")
    assert repo.entries()[entry]["status"] == "revoked"
    repo.write("a.py", "def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    repo.git("add", "-A")
    repo.git("commit", "-q", "--amend", "-m", "drop nothing after all")
    assert repo.entries()[entry]["status"] == "active"
    subprocess.run(framework, cwd=repo.path, check=True, capture_output=True)  # the stub into post-rewrite.legacy
    repo.gitmem("init")
    assert not (hooks / "post-rewrite.legacy").exists()  # else gitmem's post-rewrite ran twice, once with no input
    assert b"gitmem: managed hook stub" in (hooks / "post-rewrite").read_bytes()
    subprocess.run([*framework[:2], "-f"], cwd=repo.path, check=True, capture_output=True)  # "use only pre-commit"
    repo.gitmem("init")
    assert not (hooks / "pre-commit.gitmem-orig").exists() and (hooks / "pre-commit.gitmem-orig.prev").exists()
    (repo.path / ".git/developer-ran").unlink(missing_ok=True)
    repo.write("a.py", repo.read("a.py") + "\n\nx = 1\n")
    assert subprocess.run(["git", "commit", "-qam", "after -f"], cwd=repo.path, capture_output=True).returncode == 0
    assert not (repo.path / ".git/developer-ran").exists()


def test_an_earlier_layout_with_the_framework_chained_behind_gitmem_is_moved_into_its_slot(repo, monkeypatch, tmp_path):
    """Where an earlier gitmem chained the framework behind its stub (and the framework kept the
    developer's hook as pre-commit.legacy), `gitmem init` puts the framework back in front and the
    stub in its slot, chaining the developer's hook: every commit runs all three, once."""
    framework, hooks = framework_repo(repo, monkeypatch, tmp_path, "x = 1\n")
    mine = developers_hook(hooks)
    subprocess.run(framework, cwd=repo.path, check=True, capture_output=True)
    repo.gitmem("init")
    stub = (hooks / "pre-commit.legacy").read_bytes()
    # the earlier layout: the stub in front, the framework chained, the developer's hook kept by the framework
    (hooks / "pre-commit.gitmem-orig").rename(hooks / "keep")
    (hooks / "pre-commit").rename(hooks / "pre-commit.gitmem-orig")
    (hooks / "pre-commit.legacy").write_bytes((hooks / "keep").read_bytes())
    (hooks / "keep").unlink()
    (hooks / "pre-commit").write_bytes(stub)
    (hooks / "pre-commit").chmod(0o755)
    assert "moved gitmem's pre-commit hook into pre-commit.legacy" in repo.gitmem("init").stdout
    assert b"hook-impl" in (hooks / "pre-commit").read_bytes() and (hooks / "pre-commit.legacy").read_bytes() == stub
    assert (hooks / "pre-commit.gitmem-orig").read_text() == mine
    repo.write("a.py", "x = 2\n")
    made = subprocess.run(["git", "commit", "-qam", "second"], cwd=repo.path, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    assert (repo.path / ".git/framework-ran").read_text() == "ran\n"
    assert (repo.path / ".git/developer-ran").read_text() == "mine\n"


def test_uninstall_after_the_hooks_path_moved_removes_the_stubs_left_in_git_hooks(repo):
    repo.write("a.py", "x = 1\n")
    repo.commit_all("first")
    repo.gitmem("init")
    repo.git("config", "core.hooksPath", ".husky/_")  # husky arrives after gitmem
    repo.gitmem("uninstall")
    assert not [p.name for p in (repo.path / ".git/hooks").iterdir() if not p.name.endswith(".sample")]


DISPATCHERS = {  # one script linked as every hook, choosing its job by the name it was run as
    "bash": '#!/usr/bin/env bash\nhook=$(basename "$0")\ncase "$hook" in\n'
            '  pre-commit) echo "$hook" >> .git/dispatched ;;\n  post-commit) : ;;\n'
            '  *) echo "unknown hook type $hook" >&2; exit 69 ;;\nesac\n',
    "python": '#!/usr/bin/env python3\nimport os, sys\nhook = os.path.basename(sys.argv[0])\n'
              'if hook == "pre-commit":\n    open(".git/dispatched", "a").write(hook + "\\n")\n'
              'elif hook != "post-commit":\n    sys.exit(f"unknown hook type {hook}")\n',
}


@pytest.mark.parametrize("language", sorted(DISPATCHERS))
def test_a_chained_hook_that_dispatches_on_its_name_still_runs(repo, language):
    """Overcommit-style: run as `pre-commit.gitmem-orig`, such a script refused every commit."""
    repo.write("tools/githook", DISPATCHERS[language])
    os.chmod(repo.path / "tools/githook", 0o755)
    for name in ("pre-commit", "post-commit"):
        os.symlink("../../tools/githook", repo.path / ".git/hooks" / name)
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit_all("first")
    repo.gitmem("init")
    assert (repo.path / ".git/hooks.gitmem-orig/pre-commit").is_symlink()  # run under its name from there
    repo.write("b.py", "x = 1\n")
    repo.commit_all("second")  # raises if the commit is refused
    assert (repo.path / ".git/dispatched").read_text() == "pre-commit\npre-commit\n"
    repo.gitmem("uninstall")
    assert os.readlink(repo.path / ".git/hooks/pre-commit") == "../../tools/githook"
    assert not (repo.path / ".git/hooks.gitmem-orig").exists()


def test_a_hook_linked_to_another_hook_is_chained_and_put_back(repo):
    """`post-commit -> pre-commit`: gitmem wrote its post-commit stub through the link, over its
    own pre-commit stub, and the developer's hook ran as neither."""
    hooks = repo.path / ".git/hooks"
    (hooks / "pre-commit").write_text("#!/bin/sh\necho ran >> .git/ran\n")
    (hooks / "pre-commit").chmod(0o755)
    os.symlink("pre-commit", hooks / "post-commit")
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit_all("first")
    repo.gitmem("init")
    assert "GITMEM_HOOK=pre-commit" in (hooks / "pre-commit").read_text()
    assert "GITMEM_HOOK=post-commit" in (hooks / "post-commit").read_text()
    assert os.readlink(hooks / "post-commit.gitmem-orig") == "pre-commit.gitmem-orig"
    repo.write("b.py", "x = 1\n")
    repo.commit_all("second")
    assert (repo.path / ".git/ran").read_text() == "ran\n" * 4  # both commits, pre- and post-commit
    repo.gitmem("uninstall")
    assert os.readlink(hooks / "post-commit") == "pre-commit"
    assert (hooks / "pre-commit").read_text() == "#!/bin/sh\necho ran >> .git/ran\n"


# Pre-commit hooks that refuse a commit adding a file named `forbidden`, each finding its work its own way: from
# the folder it is in, through the link it was run by, by the name it was run as, or both.
REFUSING = {
    "runs pre-commit.d/ beside it": ('#!/bin/bash\nfor s in "$(dirname "$0")"/pre-commit.d/*; do "$s" || exit 1; done\n',
                                     "hooks"),
    "a library found through its link": ('#!/usr/bin/env bash\nhere="$(dirname "$(readlink -f "$0")")"\n'
                                         '. "$here/lib.sh"\nrun_checks\n', "tools"),
    "runs main when executed": ('#!/bin/bash\nmain() { ! git diff --cached --name-only | grep -q forbidden; }\n'
                                'if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then main "$@"; fi\n', "hooks"),
    "by name, the work tree two folders up": ('#!/bin/bash\nhook=$(basename "$0")\n'
                                              'root="$(cd "$(dirname "$0")/../.." && pwd)"\n'
                                              '"$root/tools/$hook.sh"\n', "tools"),
    "by name, from <name>.d beside it": ('#!/usr/bin/env python3\nimport os, subprocess, sys\n'
                                         'name = os.path.basename(sys.argv[0])\n'
                                         'folder = os.path.join(os.path.dirname(sys.argv[0]), name + ".d")\n'
                                         'for s in sorted(os.listdir(folder)):\n'
                                         '    subprocess.run([os.path.join(folder, s)], check=True)\n', "hooks"),
}
CHECK = "#!/bin/sh\n! git diff --cached --name-only | grep -q forbidden\n"


@pytest.mark.parametrize("how", sorted(REFUSING))
def test_a_chained_hook_still_does_its_work_however_it_finds_it(repo, how):
    script, place = REFUSING[how]
    hooks = repo.path / ".git/hooks"
    (hooks / "pre-commit.d").mkdir()
    (hooks / "pre-commit.d/check").write_text(CHECK)
    (hooks / "pre-commit.d/check").chmod(0o755)
    if how == "by name, the work tree two folders up":
        repo.write("tools/pre-commit.sh", CHECK)
        (repo.path / "tools/pre-commit.sh").chmod(0o755)
        (hooks / "pre-commit").write_text(script)
        (hooks / "pre-commit").chmod(0o755)
    elif place == "tools":  # the hook is a link into the repository's tools/, its library beside it there
        repo.write("tools/hooks/pre-commit", script)
        repo.write("tools/hooks/lib.sh", "run_checks() { ! git diff --cached --name-only | grep -q forbidden; }\n")
        (repo.path / "tools/hooks/pre-commit").chmod(0o755)
        os.symlink("../../tools/hooks/pre-commit", hooks / "pre-commit")
    else:
        (hooks / "pre-commit").write_text(script)
        (hooks / "pre-commit").chmod(0o755)
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit_all("first")
    repo.gitmem("init")
    repo.write("b.py", "x = 1\n")
    repo.commit_all("second")  # raises if the hook refuses a clean commit
    repo.write("forbidden", "x\n")
    repo.git("add", "forbidden")
    refused = subprocess.run(["git", "commit", "-qm", "third"], cwd=repo.path, capture_output=True, text=True)
    assert refused.returncode != 0, (how, refused)
    repo.gitmem("uninstall")
    assert not (repo.path / ".git/hooks.gitmem-orig").exists() and (hooks / "pre-commit").exists()


@pytest.mark.parametrize("shim", ['. "${0%/*}/h"', '. "$(dirname "$0")/h"'])
def test_husky_style_hooks_path_inside_the_repository(repo, shim):
    # husky v9 layout: core.hooksPath=.husky/_ holds shims (as husky 9 writes them: no word of
    # husky in them) that find .husky/<hook> from $0; git ignores the folder (husky's .gitignore)
    repo.write(".husky/_/.gitignore", "*\n")
    repo.write(".husky/_/h", 'n=$(basename "$0")\ns=$(dirname "$(dirname "$0")")/$n\n[ ! -f "$s" ] && exit 0\nsh -e "$s" "$@"\n')
    repo.write(".husky/_/pre-commit", f'#!/usr/bin/env sh\n{shim}\n')
    os.chmod(repo.path / ".husky/_/pre-commit", 0o755)
    repo.write(".husky/pre-commit", "echo husky >> .git/husky-ran\n")
    repo.git("config", "core.hooksPath", ".husky/_")
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit_all("first")
    assert (repo.path / ".git/husky-ran").read_text() == "husky\n"
    repo.gitmem("init")
    assert (repo.path / ".husky/_/pre-commit.gitmem-orig").exists()
    entry = add(repo, "law", "f must return an int", "a.py::f")
    repo.write("a.py", "X = 1\n")
    repo.commit_all("drop f")
    assert (repo.path / ".git/husky-ran").read_text() == "husky\nhusky\n"
    assert repo.entries()[entry]["status"] == "revoked"


def test_a_hooks_path_set_after_init_is_said_when_a_session_starts(repo):
    """husky installed after `gitmem init` points git at .husky/_: gitmem's stubs stop running and a
    removal retires nothing. The developer is told when their next session opens (a systemMessage,
    not the agent's context), and `gitmem init` installs the stubs where git now looks."""
    from delivery_support import ClaudeCode

    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit_all("first")
    repo.gitmem("init")
    repo.commit_all("set up gitmem")
    claude = ClaudeCode(repo.path)
    claude.start()
    assert claude.notices == []
    repo.write(".husky/_/.gitignore", "*\n")
    repo.git("config", "core.hooksPath", ".husky/_")
    entry = add(repo, "law", "f must return an int", "a.py::f")
    repo.write("a.py", "X = 1\n")
    repo.commit_all("drop f")
    assert repo.entries()[entry]["status"] == "active"  # nothing ran: that is what is to be said
    claude.start(source="compact")  # said once a session opens, not again after each compaction
    assert claude.notices == []
    context = claude.start()
    assert len(claude.notices) == 1 and "git runs hooks from .husky/_, which lacks gitmem's hooks" in claude.notices[0]
    assert "gitmem init" in claude.notices[0] and "husky" not in str(context)
    assert "(git runs hooks from .husky/_/); run `gitmem init`" in repo.gitmem("status").stdout
    repo.gitmem("init")
    claude.start(source="resume")
    assert len(claude.notices) == 1
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit_all("f again")
    repo.write("a.py", "Y = 2\n")
    repo.commit_all("drop f again")  # a declaration gone while the stubs run: retired
    assert repo.entries()[entry]["status"] == "revoked"
    # A hook manager that replaces pre-commit alone (lefthook install): said too.
    hooks = repo.path / ".husky/_"  # where git runs hooks from now, and init installed them
    (hooks / "pre-commit").rename(hooks / "pre-commit.old")
    (hooks / "pre-commit").write_text("#!/bin/sh\nlefthook run pre-commit\n")
    claude.start(source="resume")
    assert len(claude.notices) == 2 and "lacks gitmem's pre-commit hook" in claude.notices[1]
    # The team's committed hooks, to which they added gitmem's command as `init` asks: nothing to say.
    for name in ("pre-commit", "post-commit"):
        repo.write(f".githooks/{name}", f"#!/bin/sh\nmake -s lint-msg\npython3 -m gitmem.githooks.on_commit {name}\n")
    repo.git("config", "core.hooksPath", ".githooks")
    claude.start(source="resume")
    assert len(claude.notices) == 2


def test_shared_hooks_path_outside_the_repository_is_refused(repo, tmp_path):
    shared = tmp_path / "shared-hooks"
    shared.mkdir()
    repo.git("config", "core.hooksPath", str(shared))
    proc = repo.gitmem("init", check=False)
    assert proc.returncode == 1 and "core.hooksPath points outside this repository" in proc.stderr
    assert list(shared.iterdir()) == []
    assert not (repo.path / ".gitmem").exists()  # refused before anything was written


def test_a_hooks_path_the_repository_tracks_is_refused(repo):
    """Stubs naming this machine's interpreter replaced the team's committed hook (a change to
    commit, and a pull that changes the hook failed on it)."""
    repo.write(".githooks/pre-commit", "#!/bin/sh\necho team hook\n")
    os.chmod(repo.path / ".githooks/pre-commit", 0o755)
    repo.write(".gitmem/config.yaml", "agents: [claude-code]\n")  # a teammate's store, cloned
    repo.commit_all("team hooks")
    repo.git("config", "core.hooksPath", ".githooks")
    proc = repo.gitmem("init", check=False)
    assert proc.returncode == 1 and "core.hooksPath points at .githooks/, whose hooks are committed" in proc.stderr
    assert repo.read(".githooks/pre-commit") == "#!/bin/sh\necho team hook\n"
    assert sorted(p.name for p in (repo.path / ".githooks").iterdir()) == ["pre-commit"]
    assert "whose hooks are committed" in repo.gitmem("status").stdout


def test_merge_retires_in_one_follow_up_commit_naming_the_removing_commit(code_repo):
    entry = add(code_repo, "hazard", "retry hammers the API", "app/service.py::retry")
    moved = add(code_repo, "law", "formatAmount rounds half up", "src/ledger/sync.js::formatAmount")
    code_repo.git("checkout", "-q", "-b", "cleanup")
    code_repo.write("app/service.py", SERVICE.split("def retry")[0])
    code_repo.git("add", "-A")
    code_repo.git("commit", "-q", "--no-verify", "-m", "drop retry (hooks skipped)")
    removing = code_repo.git("rev-parse", "HEAD").strip()
    code_repo.write("src/ledger/format.js", "export const formatAmount = (cents) => (cents / 100).toFixed(2);\n")
    code_repo.write("src/ledger/sync.js", LEDGER.replace(
        "export const formatAmount = (cents) => (cents / 100).toFixed(2);\n", ""))
    code_repo.git("add", "-A")
    code_repo.git("commit", "-q", "--no-verify", "-m", "move formatAmount")
    code_repo.git("checkout", "-q", "main")
    code_repo.write("docs/index.md", "diverge\n")
    code_repo.commit_all("docs on main")
    code_repo.git("merge", "-q", "--no-edit", "cleanup")
    subjects = code_repo.git("log", "-3", "--format=%s").splitlines()
    assert subjects[0] == "gitmem: re-check anchors after merge: 1 retired, 1 re-anchored"
    assert subjects[1].startswith("Merge branch 'cleanup'")
    entries = code_repo.entries()
    assert entries[entry]["status"] == "revoked"
    assert entries[entry]["revocation"]["commit"] == removing
    assert entries[moved]["anchor"] == "src/ledger/format.js::formatAmount"
    body = code_repo.git("log", "-1", "--format=%B")
    assert f"Gitmem-Entry: {entry}" in body and f"Gitmem-Entry: {moved}" in body
    assert code_repo.git("status", "--porcelain") == ""


def test_fast_forward_pull_style_merge(code_repo):
    entry = add(code_repo, "hazard", "retry hammers the API", "app/service.py::retry")
    code_repo.git("checkout", "-q", "-b", "cleanup")
    code_repo.write("app/service.py", SERVICE.split("def retry")[0])
    code_repo.git("add", "-A")
    code_repo.git("commit", "-q", "--no-verify", "-m", "drop retry")
    code_repo.git("checkout", "-q", "main")
    code_repo.git("merge", "-q", "--ff-only", "cleanup")
    assert code_repo.entries()[entry]["status"] == "revoked"
    assert code_repo.git("log", "-1", "--format=%s").startswith("gitmem: re-check anchors after merge")


def test_rebase_onto_a_removal_retires_in_a_follow_up_commit(code_repo):
    entry = add(code_repo, "hazard", "retry hammers the API", "app/service.py::retry")
    code_repo.git("checkout", "-q", "-b", "feature")
    code_repo.write("docs/feature.md", "feature\n")
    code_repo.commit_all("feature docs")
    code_repo.git("checkout", "-q", "main")
    code_repo.write("app/service.py", SERVICE.split("def retry")[0])
    code_repo.git("add", "-A")
    code_repo.git("commit", "-q", "--no-verify", "-m", "drop retry upstream")
    code_repo.git("checkout", "-q", "feature")
    # Rebasing feature onto main brings in the removal; the entry on feature must retire.
    code_repo.git("rebase", "-q", "main")
    assert code_repo.entries()[entry]["status"] == "revoked"
    assert code_repo.git("log", "-1", "--format=%s").startswith("gitmem: re-check anchors after rebase")
    assert code_repo.git("status", "--porcelain") == ""


def test_non_utf8_and_huge_files_in_a_commit(code_repo):
    entry = add(code_repo, "law", "status is polled by the LB", "app/service.py::Service.status")
    code_repo.write("app/service.py", SERVICE.encode() + b"\n# caf\xe9 latin-1 comment\n")
    code_repo.write("app/huge.py", "def f():\n    return 1\n" * 150_000)  # ~3.3 MB
    code_repo.write("app/blob.bin", os.urandom(200_000))
    code_repo.commit_all("odd files")
    assert code_repo.entries()[entry]["status"] == "active"
    assert code_repo.git("status", "--porcelain") == ""


def test_hook_failure_never_blocks_the_commit(code_repo):
    entry = add(code_repo, "hazard", "retry hammers the API", "app/service.py::retry")
    cache = code_repo.path / ".git/gitmem/index.json"
    cache.write_text("{not json")
    code_repo.write(f".gitmem/entries/{entry}.yaml", "id: [broken\n")
    code_repo.write("app/service.py", SERVICE.split("def retry")[0])
    code_repo.git("add", "-A")
    code_repo.git("commit", "-q", "-m", "still commits")
    assert code_repo.git("log", "-1", "--format=%s").strip() == "still commits"


def test_check_rev_gates_pull_requests(code_repo):
    add(code_repo, "hazard", "retry hammers the API", "app/service.py::retry")
    base = code_repo.git("rev-parse", "HEAD").strip()
    assert code_repo.gitmem("check", "--rev", f"{base}..HEAD").returncode == 0
    code_repo.write("app/service.py", SERVICE.split("def retry")[0])
    code_repo.git("add", "-A")
    code_repo.git("commit", "-q", "--no-verify", "-m", "drop retry without hooks")
    proc = code_repo.gitmem("check", "--rev", f"{base}..HEAD", check=False)
    assert proc.returncode == 1 and "`retry` not found in app/service.py" in proc.stdout
    # a base CI has not fetched, or a typo, fails the check rather than passing every pull request
    typo = code_repo.gitmem("check", "--rev", "orign/main..HEAD", check=False)
    assert typo.returncode == 1 and "--rev: unknown revision 'orign/main'" in typo.stderr
    assert code_repo.gitmem("log", "-n", "0", check=False).returncode == 2


def test_check_staged_previews_the_hook(code_repo):
    entry = add(code_repo, "hazard", "retry hammers the API", "app/service.py::retry")
    code_repo.write("app/service.py", SERVICE.split("def retry")[0])
    code_repo.git("add", "-A")
    proc = code_repo.gitmem("check", "--staged", check=False)
    assert proc.returncode == 1 and entry in proc.stdout and "would be retired" in proc.stdout
    assert code_repo.entries()[entry]["status"] == "active"


def test_check_names_a_hand_written_entry_whose_anchor_does_not_resolve_before_it_is_committed(code_repo):
    """An entry written by hand (a typo in its symbol) would be retired by the commit that adds
    it: `check` names it while it is uncommitted, `check --staged` once it is staged, as the
    pre-commit hook would do; the work tree's code the next commit holds decides."""
    entry = "20261205-0000e002"
    code_repo.write(f".gitmem/entries/{entry}.yaml",
                    f"id: {entry}\nkind: hazard\nbody: retry hammers the API\nanchor: app/service.py::retri\n")
    proc = code_repo.gitmem("check", check=False)
    assert proc.returncode == 1 and f"{entry} (hazard) `retri` not found in app/service.py in the index" in proc.stdout
    code_repo.git("add", "-A")
    staged = code_repo.gitmem("check", "--staged", check=False)
    assert staged.returncode == 1 and f"{entry} (hazard) would be retired" in staged.stdout, staged.stdout
    code_repo.write(f".gitmem/entries/{entry}.yaml",
                    f"id: {entry}\nkind: hazard\nbody: retry hammers the API\nanchor: app/service.py::retry\n")
    code_repo.git("add", "-A")
    assert entry not in code_repo.gitmem("check", check=False).stdout
    assert entry not in code_repo.gitmem("check", "--staged", check=False).stdout


def test_diff_summarises_memory_changes_for_a_pull_request(code_repo):
    base = code_repo.git("rev-parse", "HEAD").strip()
    gone = add(code_repo, "hazard", "retry hammers the API", "app/service.py::retry")
    add(code_repo, "law", "sync must flush before returning", "app/service.py::Service.sync")
    add(code_repo, "law", "use integer cents", None)
    code_repo.write("app/service.py", SERVICE.split("def retry")[0].replace("def sync(", "def synchronise("))
    code_repo.commit_all("drop retry, rename sync")
    md = code_repo.gitmem("diff", f"{base}..HEAD").stdout
    assert md.startswith("## Memory changes")
    assert "### Added (2)" in md and "use integer cents" in md
    assert "### Retired (1)" in md and "\\`retry\\` was removed from app/service.py" in md
    step = code_repo.gitmem("diff", "HEAD~1..HEAD").stdout
    assert "### Re-anchored (1)" in step and "`app/service.py::Service.sync` → `app/service.py::Service.synchronise`" in step
    assert "### Retired (1)" in step
    log = code_repo.git("log", "-p", "-1", "--", f".gitmem/entries/{gone}.yaml")
    assert "+status: revoked" in log and "+revocation:" in log  # git's own diff shows the entry's fields
    # what renders in the pull request is the very words the agent gets: no markup of the entry's own
    add(code_repo, "law", "Totals use <b> tags in [the invoice](docs/invoice.md), and *net* amounts", None)
    shown = code_repo.gitmem("diff", "HEAD~1..HEAD").stdout
    assert "Totals use &lt;b&gt; tags in \\[the invoice\\](docs/invoice.md), and \\*net\\* amounts" in shown
    # an entry added and replaced within the range is shown superseded, by what replaced it
    start = code_repo.git("rev-parse", "HEAD").strip()
    npm = add(code_repo, "law", "use npm", None)
    pnpm = code_repo.gitmem("add", "correction", "use pnpm", "--supersedes", npm).stdout.split()[0]
    both = code_repo.gitmem("diff", f"{start}..HEAD").stdout
    assert "### Superseded (1)" in both and f"superseded by “use pnpm” <sub>{pnpm}</sub>" in both
    assert "### Retired" not in both and "### Added (1)" in both, both

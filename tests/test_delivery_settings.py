"""`gitmem init` merges gitmem's hooks into .claude/settings.json; `uninstall` removes only them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from delivery_support import ClaudeCode, add_entry

from gitmem.base.paths import find_repo
from gitmem.delivery import claude_settings

USER_SETTINGS = {
    "permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(.env)"]},
    "env": {"FOO": "1"},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./scripts/guard.sh"}]}],
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send claude"}]}],
    },
}


@pytest.fixture
def project(repo, monkeypatch):
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    repo.write(".claude/settings.json", json.dumps(USER_SETTINGS, indent=4) + "\n")
    repo.write("README.md", "hello\n")
    repo.commit_all("initial")
    return repo


def settings(repo) -> dict:
    return json.loads(repo.read(".claude/settings.json"))


def test_init_merges_idempotently_and_uninstall_restores(project):
    (project.path / ".claude/settings.json").chmod(0o600)  # kept private by its owner
    project.gitmem("init")
    assert (project.path / ".claude/settings.json").stat().st_mode & 0o777 == 0o600
    merged = settings(project)
    assert merged["permissions"] == USER_SETTINGS["permissions"] and merged["env"] == USER_SETTINGS["env"]
    hooks = merged["hooks"]
    assert hooks["PreToolUse"][0] == USER_SETTINGS["hooks"]["PreToolUse"][0]
    assert hooks["SessionStart"][0] == USER_SETTINGS["hooks"]["SessionStart"][0]
    assert hooks["Notification"] == USER_SETTINGS["hooks"]["Notification"]
    expected = {"SessionStart": None, "SubagentStart": None, "UserPromptSubmit": None,
                "PreToolUse": "Read|Edit|Write|MultiEdit|NotebookEdit|Bash|PowerShell",
                "PostToolUse": "Edit|Write|MultiEdit|NotebookEdit", "Stop": None, "SessionEnd": None}
    for event, matcher in expected.items():
        ours = [g for g in hooks[event] if claude_settings.SHIM_MARKER in json.dumps(g)]
        assert len(ours) == 1 and ours[0].get("matcher") == matcher
        assert ours[0]["hooks"][0]["type"] == "command"

    before = project.read(".claude/settings.json")
    second = project.gitmem("init").stdout
    assert "settings.json" not in second and project.read(".claude/settings.json") == before

    assert "removed gitmem's Claude Code hooks" in project.gitmem("uninstall").stdout
    assert settings(project) == USER_SETTINGS
    assert (project.path / ".claude/settings.json").stat().st_mode & 0o777 == 0o600
    assert not (project.path / ".git/gitmem/claude-hook").exists()


def test_the_committed_file_names_no_path_of_this_machine(project):
    project.gitmem("init")
    text = project.read(".claude/settings.json")
    for local in (str(project.path), sys.executable, os.environ["HOME"], sys.prefix, "/work", "/tmp"):
        assert local not in text
    shim = (project.path / ".git/gitmem/claude-hook").read_text()  # machine-local, under .git/
    assert os.path.samefile(claude_settings.shim_python(shim), sys.executable)
    assert shim.startswith(f"#!{claude_settings.shim_python(shim)} -IS\n")  # isolated, no site scan


def test_an_interpreter_path_the_shebang_cannot_hold_gets_a_shell_shim(project, tmp_path):
    odd = tmp_path / "my tools" / "python"
    odd.parent.mkdir()
    odd.symlink_to(sys.executable)
    shim = claude_settings.shim_text(str(odd))
    assert shim.startswith("#!/bin/sh\n")
    assert claude_settings.shim_python(shim) == str(odd)
    project.gitmem("init")
    law = add_entry(project, "law", "Use tabs.")
    claude_settings.install(find_repo(project.path), python=str(odd))
    assert (project.path / ".git/gitmem/claude-hook").read_text().startswith("#!/bin/sh\n")
    assert ClaudeCode(project.path).start().active == [law]  # through the shell shim


def test_init_repairs_a_moved_or_edited_gitmem_hook(project):
    project.gitmem("init")
    data = settings(project)
    # The user moved gitmem's hook into their own group and duplicated it elsewhere.
    ours = data["hooks"]["PreToolUse"].pop()["hooks"][0]
    data["hooks"]["PreToolUse"][0]["hooks"].append(ours)
    data["hooks"]["Stop"].append({"hooks": [dict(ours)]})
    project.write(".claude/settings.json", json.dumps(data))
    project.gitmem("init")
    hooks = settings(project)["hooks"]
    assert hooks["PreToolUse"][0] == USER_SETTINGS["hooks"]["PreToolUse"][0]
    assert sum(claude_settings.SHIM_MARKER in json.dumps(g) for g in hooks["Stop"]) == 1


def test_invalid_settings_are_left_alone(repo, monkeypatch):
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    repo.write(".claude/settings.json", "{ not json")
    repo.write("README.md", "x\n")
    repo.commit_all("initial")
    proc = repo.gitmem("init", check=False)
    assert "left .claude/settings.json alone" in proc.stdout
    # the agent would get nothing: init does not say "ready", and says so with its exit status
    assert proc.returncode == 1 and "gitmem is ready" not in proc.stdout and "not every agent" in proc.stderr
    assert repo.read(".claude/settings.json") == "{ not json"
    assert (repo.path / ".git/hooks/pre-commit").exists()


def test_a_fresh_repository_gets_a_settings_file_that_uninstall_removes(repo, monkeypatch):
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    repo.write("README.md", "x\n")
    repo.commit_all("initial")
    repo.gitmem("init")
    assert set(settings(repo)) == {"hooks"}
    repo.gitmem("uninstall")
    assert not (repo.path / ".claude").exists()


@pytest.mark.parametrize("hooks", ['"echo hooks"', '{"Stop": "echo not-a-list"}'])
def test_hooks_of_a_shape_gitmem_does_not_know_are_left_alone_and_said(repo, monkeypatch, hooks):
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    text = '{"env": {"A": "1"}, "hooks": ' + hooks + '}\n'
    repo.write(".claude/settings.json", text)
    repo.commit_all("initial")
    proc = repo.gitmem("init", check=False)
    assert proc.returncode == 1 and "not every agent's hooks are installed" in proc.stdout + proc.stderr
    assert 'left .claude/settings.json alone: its "hooks" is not an object of lists' in proc.stdout
    assert repo.read(".claude/settings.json") == text


def test_linked_worktrees_find_the_shim_in_the_common_git_dir(project, tmp_path):
    project.gitmem("init")
    law = add_entry(project, "law", "Use tabs.")
    project.commit_all("share settings")
    worktree = tmp_path / "wt"
    subprocess.run(["git", "worktree", "add", "-q", str(worktree)], cwd=project.path, check=True)
    assert (worktree / ".git").is_file()
    assert ClaudeCode(worktree).start().active == [law]

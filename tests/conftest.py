"""Shared fixtures: hermetic git repositories in temporary folders.

HOME, git's global config and author/committer identities and dates are fixed per test, so
nothing touches the developer's real home or git config and commit ids are reproducible.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# Read before any test swaps HOME: the embedded model is assembled once per machine and reused.
MODEL_CACHE = os.environ.get("GITMEM_MODEL_CACHE", str(Path.home() / ".cache" / "gitmem"))


@pytest.fixture(autouse=True)
def hermetic_env(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    gitconfig = home / ".gitconfig"
    gitconfig.write_text("[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n")
    for key in list(os.environ):
        if key.startswith("GIT_") or key.startswith("CLAUDE_"):
            monkeypatch.delenv(key)
    for key in ("CLAUDECODE", "GEMINI_CLI", "CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED"):
        monkeypatch.delenv(key, raising=False)  # an agent's shell: `gitmem add` would refuse
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))  # the machine's writer, per test
    monkeypatch.setenv("GITMEM_MODEL_CACHE", MODEL_CACHE)
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")  # tests drain explicitly; no stray daemons
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Dev")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "dev@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Dev")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "dev@example.com")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
    yield


class GitRepo:
    """A real repository in a temporary folder, driven through git and the gitmem CLI."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def git(self, *args: str, check: bool = True, input: str | None = None) -> str:
        proc = subprocess.run(["git", *args], cwd=self.path, capture_output=True, text=True, input=input)
        if check and proc.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc.stdout

    def gitmem(self, *args: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess:
        proc = subprocess.run([sys.executable, "-m", "gitmem.cli", *args], cwd=self.path,
                              capture_output=True, text=True, input=input)
        if check and proc.returncode != 0:
            raise AssertionError(f"gitmem {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    def write(self, rel: str, text: str | bytes) -> Path:
        path = self.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return path

    def read(self, rel: str) -> str:
        return (self.path / rel).read_text(encoding="utf-8")

    def commit_all(self, message: str) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD").strip()

    def with_gitmem(self, files: dict[str, str]) -> GitRepo:
        """Commit `files`, run `gitmem init` and commit what it set up: a project using gitmem."""
        for rel, text in files.items():
            self.write(rel, text)
        self.commit_all("initial")
        self.gitmem("init")
        self.commit_all("set up gitmem")
        return self

    def entries(self) -> dict[str, dict]:
        """`gitmem list --json`, keyed by id."""
        import json

        out = self.gitmem("list", "--json").stdout
        return {e["id"]: e for e in map(json.loads, out.splitlines())}


@pytest.fixture
def repo(tmp_path) -> GitRepo:
    path = tmp_path / "repo"
    path.mkdir()
    r = GitRepo(path)
    r.git("init", "-q", "-b", "main")
    return r

"""The command line is documented: every command has help text and appears in the README."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from gitmem.cli import main

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_every_command_has_help_and_is_in_the_readme():
    runner = CliRunner()
    for name, command in main.commands.items():
        assert command.help, f"`gitmem {name}` has no help text"
        result = runner.invoke(main, [name, "--help"])
        assert result.exit_code == 0, result.output
        assert f"gitmem {name}" in README or f"| {name}" in README, f"`gitmem {name}` is not in README.md"


def test_errors_are_one_line_with_exit_status_1(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["list"])
    assert result.exit_code == 1
    assert "is not inside a git work tree" in result.output


def test_a_repository_only_git_dir_names_is_said_to_be_unsupported(tmp_path, monkeypatch):
    import subprocess

    monkeypatch.setenv("GIT_DIR", str(tmp_path / "dotfiles.git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(tmp_path))
    subprocess.run(["git", "init", "-q"], check=True)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["list"])
    assert result.exit_code == 1 and "GIT_DIR/GIT_WORK_TREE set in the environment is not supported" in result.output


def test_closed_standard_streams_are_refused_or_read_as_empty_never_a_traceback(repo, monkeypatch):
    """`gitmem add ... >&-` recorded an entry and lost its id without a word (exit 0); `add -`
    and `judge -` with standard input closed were tracebacks."""
    import subprocess
    import sys

    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    repo.git("commit", "-q", "--allow-empty", "-m", "initial")
    repo.gitmem("init")
    gitmem = f"{sys.executable} -m gitmem.cli"
    for command, closed, said in ((f"{gitmem} add law 'Use tabs.'", ">&-", "standard output is closed"),
                                  (f"{gitmem} list", ">&-", "standard output is closed"),
                                  (f"{gitmem} add law -", "<&-", "no body on standard input"),
                                  (f"{gitmem} judge -", "<&-", "the packet is not JSON")):
        proc = subprocess.run(["sh", "-c", f"{command} {closed}"], cwd=repo.path, capture_output=True, text=True)
        assert proc.returncode == 1 and said in proc.stderr and "Traceback" not in proc.stderr, proc
    assert repo.gitmem("list").stdout == ""  # nothing recorded unseen

"""Whether git still runs gitmem's hooks: asked when a session starts (standard library only).

`core.hooksPath` set after `gitmem init` (installing husky does that), or a hooks folder emptied by
another tool, sends git elsewhere: gitmem's stubs never run again and anchors stop being
re-checked, with nothing said. Most repositories set no hooks path in any config file; that is
read from the files' text without starting a process, and only a config that names a hooks path
or includes another file (or git config given through the environment) makes git say where it
runs hooks from.
"""

from __future__ import annotations

import os

from gitmem.base.locate import inside

MARKER = "# gitmem: managed hook stub"  # the first lines of every stub gitmem installs
PROBES = ("pre-commit", "post-commit")  # hooks every `gitmem init` installs; a hook manager replaces pre-commit first
RUNS_GITMEM = "gitmem.githooks.on_commit"  # what `gitmem init` asks a team's own hooks to run
# The pre-commit framework's script (it runs `pre-commit hook-impl`): gitmem's stub stands in its
# legacy slot, `<hook>.legacy`, which the framework runs first.
FRAMEWORK_MARK = b"hook-impl"
_MOVES_HOOKS = (b"hookspath", b"include")  # config text that may put the hooks folder elsewhere
_CONFIG_ENV = ("GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT")  # `git -c` and its environment form


def is_stub(text: str) -> bool:
    return MARKER in text[:400]


def hooks_not_run(worktree: str, git_dir: str, common_dir: str) -> str | None:
    """A line for the developer when the folder git runs hooks from lacks gitmem's stubs; None when
    they are there or where git could not say."""
    folder = _hooks_folder(worktree, git_dir, common_dir)
    if folder is None:
        return None
    lacking = [name for name in PROBES if not _runs_gitmem(os.path.join(folder, name))]
    if not lacking:
        return None
    shown = os.path.relpath(folder, worktree) if inside(folder, os.path.normpath(worktree)) else folder
    which = "gitmem's hooks" if len(lacking) == len(PROBES) else f"gitmem's {lacking[0]} hook"
    return (f"gitmem: git runs hooks from {shown}, which lacks {which} (core.hooksPath set or the "
            "hooks replaced since `gitmem init`?): entries' anchors are not re-checked on commit, merge or "
            "rebase. Run `gitmem init` (`gitmem status` says more).")


def _runs_gitmem(path: str) -> bool:
    """The hook is gitmem's stub, or a shared or committed hook the team added gitmem to."""
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            text = file.read(64 * 1024)
    except OSError:
        return False
    if is_stub(text) or RUNS_GITMEM in text:
        return True
    return FRAMEWORK_MARK.decode() in text and _runs_gitmem(path + ".legacy")


def _hooks_folder(worktree: str, git_dir: str, common_dir: str) -> str | None:
    if not any(os.environ.get(name) for name in _CONFIG_ENV) and \
            not _may_move_hooks(_config_files(git_dir, common_dir)):
        return os.path.join(common_dir, "hooks")
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    try:
        proc = subprocess.run(["git", "rev-parse", "--git-path", "hooks"], cwd=worktree, env=env,
                              capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    path = proc.stdout.strip()
    if proc.returncode != 0 or not path:
        return None
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(worktree, path))


def _config_files(git_dir: str, common_dir: str) -> list[str]:
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    system = [] if os.environ.get("GIT_CONFIG_NOSYSTEM") else [os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"]
    return [*system,
            os.environ.get("GIT_CONFIG_GLOBAL") or os.path.join(home, ".gitconfig"),
            os.path.join(xdg, "git", "config"),
            os.path.join(common_dir, "config"),
            os.path.join(git_dir, "config.worktree")]


def _may_move_hooks(paths: list[str]) -> bool:
    for path in paths:
        try:
            with open(path, "rb") as file:
                text = file.read(1 << 20).lower()
        except OSError:
            continue
        if any(word in text for word in _MOVES_HOOKS):
            return True
    return False


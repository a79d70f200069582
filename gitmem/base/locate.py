"""Where the repository is and what a path is inside it, with os.path alone.

The one implementation of repository discovery and path relativising: the hook path calls it
directly (pathlib and dataclasses cost ≈ 25 ms there), gitmem.base.paths wraps it.
"""

from __future__ import annotations

import os


def locate(start: str) -> tuple[str, str, str] | None:
    """(work tree, git dir, common git dir) of the nearest work tree at or above `start`;
    linked worktrees (a `.git` file naming `gitdir:`) included. None outside any."""
    here = os.path.abspath(start)
    while True:
        dot_git = os.path.join(here, ".git")
        if os.path.isdir(dot_git):
            return here, dot_git, dot_git
        if os.path.isfile(dot_git):
            git_dir = gitfile_target(dot_git)
            if git_dir is not None:
                common = git_dir
                try:
                    with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as handle:
                        common = os.path.realpath(os.path.join(git_dir, handle.read().strip()))
                except OSError:
                    pass
                return here, git_dir, common
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def gitfile_target(path: str) -> str | None:
    """The git dir a `.git` file names (`gitdir: …`, relative to its folder: a linked worktree's,
    a submodule's), resolved; None when `path` is no such file."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read().strip()
    except OSError:  # a folder, or nothing there
        return None
    if not text.startswith("gitdir:"):
        return None
    return os.path.realpath(os.path.join(os.path.dirname(path), text[len("gitdir:"):].strip()))


def relative(worktree: str, path: str, cwd: str | None = None) -> str | None:
    """Repository-relative POSIX path of `path` (relative paths are taken from `cwd`, else the
    work tree), or None when it lies outside the work tree or inside `.git`, which git never
    tracks. Symlinked spellings of the work tree are recognised, and a link inside it names the
    file it leads to there (an edit through `src/alias.py` changes `src/a.py`). A path holding NUL
    names no file."""
    if "\0" in path:
        return None
    if not os.path.isabs(path):
        path = os.path.join(cwd or worktree, path)
    path = os.path.normpath(path)
    rel = None
    for tree, candidate in ((os.path.realpath(worktree), os.path.realpath(path)), (worktree, path)):
        prefix = tree.rstrip("/") + "/"
        if candidate.startswith(prefix):
            rel = candidate[len(prefix):]
            break
    if not rel or rel == ".git" or rel.startswith(".git/"):
        return None
    return rel


def inside(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or lies in it (both already normalised the same way)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def runner_problem(python: str | None, roots: list[str]) -> str | None:
    """Why `python`, with gitmem imported from one of `roots` ("" entries ignored), would not run
    gitmem: the interpreter is gone, or gitmem was uninstalled from its environment. None when it runs."""
    if not python or not os.access(python, os.X_OK):
        return f"its interpreter {python or '?'} is gone"
    folders = [r for r in roots if r]
    if folders and not any(os.path.isfile(os.path.join(r, "gitmem", "__init__.py")) for r in folders):
        return f"{python} no longer has gitmem"
    return None

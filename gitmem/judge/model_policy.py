"""Which model files the writer may load: never one the repository brings, unless the developer says so.

`writer.model` in .gitmem/config.yaml is committed, so a pull request can set it. The writer's
daemon starts by itself and parses the GGUF file it names (llama.cpp reads it natively, outside
Python); a file that lives in the repository is content someone else may have written. Such a
path is refused unless the developer opted in on this machine, where no commit can reach:

    git config gitmem.allowRepoModel true      # this clone's .git/config (or --global)

Paths outside the work tree (the embedded default, a file under ~/models) are not affected.
"""

from __future__ import annotations

from pathlib import Path

from gitmem.base.paths import RepoPaths

OPT_IN = "gitmem.allowRepoModel"


def inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def allowed(repo: RepoPaths) -> bool:
    """The developer's local opt-in (git config: local or global, never a committed file)."""
    from gitmem import git

    value = git.config_get(repo.worktree, OPT_IN)
    return (value or "").strip().lower() in ("true", "yes", "on", "1")


def refusal(repo: RepoPaths, path: Path) -> str | None:
    """Why a configured model file may not be loaded, or None."""
    if not inside(path, repo.worktree) or allowed(repo):
        return None
    return (f"writer.model in .gitmem/config.yaml points inside the repository ({path}); a committed "
            f"config cannot make the writer load a model file the repository brings. If this file is "
            f"yours, allow it on this machine: git config {OPT_IN} true")

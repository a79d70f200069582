"""Where things live, found without starting git or importing anything heavy.

Committed:      <worktree>/.gitmem/entries/<id>.yaml, <worktree>/.gitmem/config.yaml
Machine-local:  <git common dir>/gitmem/  (caches, queues, logs, compiled index)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from gitmem.errors import NotARepository

STORE_DIR = ".gitmem"
ENTRIES_DIR = ".gitmem/entries"
CONFIG_FILE = ".gitmem/config.yaml"


@dataclass(frozen=True, slots=True)
class RepoPaths:
    worktree: Path
    git_dir: Path      # per-worktree git dir (holds HEAD, index)
    common_dir: Path   # shared git dir (holds objects, refs, hooks)

    @property
    def store(self) -> Path:
        return self.worktree / STORE_DIR

    @property
    def entries(self) -> Path:
        return self.worktree / ENTRIES_DIR

    @property
    def config(self) -> Path:
        return self.worktree / CONFIG_FILE

    @property
    def state(self) -> Path:
        """Machine-local state; never committed because it sits inside .git."""
        return self.common_dir / "gitmem"

    def relative(self, path: str | os.PathLike[str]) -> str | None:
        """Repository-relative POSIX path, or None when `path` lies outside the work tree."""
        p = Path(path)
        if not p.is_absolute():
            p = Path.cwd() / p
        try:
            rel = Path(os.path.normpath(p)).relative_to(self.worktree)
        except ValueError:
            try:
                rel = p.resolve().relative_to(self.worktree.resolve())
            except ValueError:
                return None
        return rel.as_posix()


def find_repo(start: str | os.PathLike[str] | None = None) -> RepoPaths:
    """Walk up from `start` to the nearest work tree (handles linked worktrees)."""
    here = Path(start or os.getcwd()).absolute()
    for folder in (here, *here.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return RepoPaths(folder, dot_git, dot_git)
        if dot_git.is_file():
            text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
            if text.startswith("gitdir:"):
                git_dir = (folder / text[7:].strip()).resolve()
                common = git_dir
                commondir_file = git_dir / "commondir"
                if commondir_file.is_file():
                    common = (git_dir / commondir_file.read_text().strip()).resolve()
                return RepoPaths(folder, git_dir, common)
    raise NotARepository(f"{here} is not inside a git work tree")

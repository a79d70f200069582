"""Where things live, found without starting git or importing anything heavy.

Committed:      <worktree>/.gitmem/entries/<id>.yaml, <worktree>/.gitmem/config.yaml
Machine-local:  <git common dir>/gitmem/  (caches, queues, logs)
                <git dir>/gitmem/  (what depends on the worktree's own entries; the same folder in
                the main worktree, its own in a linked one)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from gitmem.base import locate
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

    @property
    def worktree_state(self) -> Path:
        """Machine-local state of this worktree's own entries (a linked worktree has its own)."""
        return self.git_dir / "gitmem"

    def on_disk(self) -> bool:
        """Whether the repository is still there (one deleted or moved keeps no HEAD at this path,
        whatever a writer that was busy with it wrote back under it)."""
        return os.path.isfile(os.path.join(self.common_dir, "HEAD")) and os.path.isdir(self.worktree)

    def relative(self, path: str | os.PathLike[str]) -> str | None:
        """Repository-relative POSIX path, or None outside the work tree or inside .git."""
        return locate.relative(str(self.worktree), os.fspath(path), os.getcwd())


def find_repo(start: str | os.PathLike[str] | None = None) -> RepoPaths:
    """The nearest work tree at or above `start` (handles linked worktrees)."""
    here = os.fspath(start or os.getcwd())
    found = locate.locate(here)
    if found is None:
        if os.environ.get("GIT_DIR"):  # a dotfiles setup: git finds it, the agents' hooks would not
            raise NotARepository(f"{os.path.abspath(here)} has no .git in it or above: gitmem finds a repository "
                                 "from the folder, as the agents' hooks do, and GIT_DIR/GIT_WORK_TREE set in the "
                                 "environment is not supported")
        raise NotARepository(f"{os.path.abspath(here)} is not inside a git work tree")
    return RepoPaths(*(Path(p) for p in found))

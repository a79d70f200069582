"""Entry changes waiting for a safe moment to be committed, kept where git never looks.

When the repository is busy (a merge, rebase, cherry-pick, revert, bisect or am in progress, a
detached HEAD, a held index or ref lock, a `git commit` waiting for its editor), gitmem neither
commits nor stages: the change is written here, under the worktree's own git dir
(`<git dir>/gitmem/pending/`), atomically and fsynced, one JSON file per commit to be made,
named so that they sort in the order they were made. git never reads or writes this folder, so
pending changes survive `git merge --abort` and `git rebase --abort`, and never reach the work
tree, where `git add -A` could fold them into the developer's commit. They are still delivered
locally (the compiled index reads them, marked pending) and count as recorded for the writer.
gitmem.store.commit commits them, each in a commit of its own and in order, at the next safe
moment: the post-commit, post-merge, post-rewrite and post-checkout hooks, the next gitmem
command, the writer.

Standard library only: the compiled index reads this folder on the hook path.
"""

from __future__ import annotations

import json
import os
import time

TYPE_CHECKING = False  # no typing import on the hook path
if TYPE_CHECKING:
    from typing import Any

    from gitmem.base.paths import RepoPaths

PENDING_DIR = "pending"
RECORD_VERSION = 1
SUFFIX = ".json"


def local_state(repo: RepoPaths) -> str:
    """The worktree's own machine-local state: `<git dir>/gitmem` (in the main worktree the same
    folder as the shared state; in a linked worktree its own)."""
    return os.path.join(os.fspath(repo.git_dir), "gitmem")


def folder(repo: RepoPaths) -> str:
    return os.path.join(local_state(repo), PENDING_DIR)


def names(repo: RepoPaths) -> list[str]:
    """Pending record files, oldest first."""
    try:
        return sorted(n for n in os.listdir(folder(repo)) if n.endswith(SUFFIX) and not n.startswith("."))
    except OSError:
        return []


def exists(repo: RepoPaths) -> bool:
    return bool(names(repo))


def read(repo: RepoPaths, name: str) -> dict[str, Any] | None:
    """One record, or None when it is unreadable (moved aside by the committer)."""
    try:
        with open(os.path.join(folder(repo), name), encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != RECORD_VERSION:
        return None
    return data


def records(repo: RepoPaths) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for name in names(repo):
        data = read(repo, name)
        if data is not None:
            out.append((name, data))
    return out


def write(repo: RepoPaths, record: dict[str, Any]) -> str:
    """Store one record durably (temporary file, fsync, rename, fsync of the folder); returns its name."""
    where = folder(repo)
    os.makedirs(where, exist_ok=True)
    name = f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(3).hex()}{SUFFIX}"
    data = json.dumps({**record, "version": RECORD_VERSION}, ensure_ascii=False, indent=1).encode("utf-8")
    tmp = os.path.join(where, f".{name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, os.path.join(where, name))
    _fsync_dir(where)
    return name


def remove(repo: RepoPaths, name: str) -> None:
    try:
        os.unlink(os.path.join(folder(repo), name))
    except FileNotFoundError:
        pass


def set_aside(repo: RepoPaths, name: str) -> None:
    """A record that cannot be committed (corrupt): kept for a person under pending/unreadable/."""
    aside = os.path.join(folder(repo), "unreadable")
    os.makedirs(aside, exist_ok=True)
    try:
        os.replace(os.path.join(folder(repo), name), os.path.join(aside, name))
    except FileNotFoundError:
        pass


def entries(repo: RepoPaths) -> list[dict[str, Any]]:
    """The entries as the pending records will commit them (latest record per id wins), each
    marked `"pending": True`."""
    latest: dict[str, dict[str, Any]] = {}
    for _, data in records(repo):
        for entry in data.get("entries") or []:
            if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                latest[entry["id"]] = {**entry, "pending": True}
    return list(latest.values())


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)

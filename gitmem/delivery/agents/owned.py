"""Files gitmem writes for other agents, and how to put back exactly what was there before.

The first time gitmem writes a path on this machine, what was there (the bytes, or nothing) is
kept under `.git/gitmem/agents/` (machine-local, never committed) with a digest of what gitmem
wrote. `restore()` puts the original bytes back, or removes the file when there was none, as
long as the file is still what gitmem last wrote; a file edited since is handed back to the
caller to undo structurally (only gitmem's part removed). Folders gitmem created are removed
again when they end up empty.

A generated file that arrived through git (a teammate's commit) has no record here: it counts
as gitmem's when it carries the generated-by-gitmem header. What such a file held when gitmem
first writes it on this machine is kept without gitmem's part (the caller's `theirs`): a whole
generated file as none, a section or hooks gitmem manages as the file without them, so an
uninstall never puts back a teammate's old rendering (a withdrawn entry delivered as standing).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeAlias

from gitmem.base import fastjson
from gitmem.base.files import read_plain, write_atomic
from gitmem.base.paths import RepoPaths

# (the file as it is now, what was there before gitmem, or None) -> what to leave (None: no file)
Undo: TypeAlias = Callable[[bytes, bytes | None], bytes | None]
# a file's bytes -> the developer's part of them (None: the file is all gitmem's)
Theirs: TypeAlias = Callable[[bytes], bytes | None]


def _all_theirs(data: bytes) -> bytes:
    return data

STATE = "agents"
MANIFEST = "written.json"
BACKUPS = "before"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _root(repo: RepoPaths) -> Path:
    return repo.state / STATE


def _manifest(repo: RepoPaths) -> dict[str, Any]:
    """{"files": {path: {"existed", "written"}}, "dirs": [folders gitmem created]}"""
    data = fastjson.read_file(str(_root(repo) / MANIFEST))
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        return {"files": {}, "dirs": []}
    if not isinstance(data.get("dirs"), list):
        data["dirs"] = []
    return data


def _save(repo: RepoPaths, manifest: dict[str, Any]) -> None:
    fastjson.write_file(str(_root(repo) / MANIFEST), manifest)


def read(repo: RepoPaths, rel: str) -> bytes | None:
    try:
        return read_plain(repo.worktree / rel)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def write(repo: RepoPaths, rel: str, data: bytes, theirs: Theirs = _all_theirs) -> bool:
    """Write `data` to `rel` (remembering `theirs` of what was there the first time); True when it
    changed. A new file gets the line ends git checks it out with (CRLF where `eol=crlf` or
    core.autocrlf says so: an LF file there is one `git add` refuses under core.safecrlf)."""
    from gitmem import git

    path = repo.worktree / rel
    if not (path.exists() or path.is_symlink()):
        data = git.as_checked_out(repo.worktree, rel, data.decode("utf-8", "surrogateescape")).encode(
            "utf-8", "surrogateescape")
    current = claim(repo, rel, data, theirs)
    if current == data:
        return False
    mode = path.stat().st_mode if current is not None else None
    write_atomic(path, data)
    if mode is not None:
        os.chmod(path, mode & 0o7777)
    return True


def claim(repo: RepoPaths, rel: str, data: bytes, theirs: Theirs = _all_theirs) -> bytes | None:
    """Record that gitmem is about to write `data` to `rel` (`theirs` of what is there now is kept
    the first time, to be put back by restore()); the caller writes the file. Returns what is there now."""
    current = read(repo, rel)
    manifest = _manifest(repo)
    record = manifest["files"].get(rel)
    if not isinstance(record, dict):
        original = theirs(current) if current is not None else None
        record = {"existed": original is not None}
        if original is not None:
            backup = _root(repo) / BACKUPS / rel
            write_atomic(backup, original)
        manifest["dirs"] = sorted(set(manifest["dirs"]) | set(_missing_dirs(repo, rel)))
    record["written"] = _digest(data)
    manifest["files"][rel] = record
    _save(repo, manifest)
    return current


def is_written(repo: RepoPaths, rel: str, data: bytes) -> bool:
    """`data` is exactly what gitmem last wrote to `rel` from this machine."""
    record = _manifest(repo)["files"].get(rel)
    return isinstance(record, dict) and _digest(data) == record.get("written")


def is_recorded(repo: RepoPaths, rel: str) -> bool:
    """gitmem wrote `rel` from this machine (and has not given it back since)."""
    return isinstance(_manifest(repo)["files"].get(rel), dict)


def is_unchanged(repo: RepoPaths, rel: str) -> bool:
    """The file is what gitmem last wrote there (from this machine)."""
    record = _manifest(repo)["files"].get(rel)
    current = read(repo, rel)
    return isinstance(record, dict) and current is not None and _digest(current) == record.get("written")


def known(repo: RepoPaths) -> list[str]:
    return sorted(_manifest(repo)["files"])


def restore(repo: RepoPaths, rel: str, undo: Undo | None = None) -> str:
    """Put back what was at `rel` before gitmem first wrote it: the bytes, or no file.

    When the file changed since gitmem wrote it (a teammate's regeneration, a hand edit),
    `undo(current, original)` says what to write instead (None: remove the file); without
    `undo` such a file is left as it is. Returns "restored", "removed", "undone", "left"
    or "" when nothing is recorded for `rel` on this machine.
    """
    manifest = _manifest(repo)
    record = manifest["files"].get(rel)
    if not isinstance(record, dict):
        return ""
    current = read(repo, rel)
    backup = _root(repo) / BACKUPS / rel
    original = backup.read_bytes() if record.get("existed") and backup.is_file() else None
    outcome = "restored" if original is not None else "removed"
    target: bytes | None = original
    if current is not None and _digest(current) != record.get("written"):
        if undo is None:
            forget(repo, rel, manifest)
            return "left"
        target, outcome = undo(current, original), "undone"
    path = repo.worktree / rel
    if target is None:
        if current is not None:
            path.unlink()
    elif current != target:
        write_atomic(path, target)
    if backup.exists():
        backup.unlink()
    forget(repo, rel, manifest)
    return outcome


def forget(repo: RepoPaths, rel: str, manifest: dict[str, Any] | None = None) -> None:
    """Drop the record of `rel`; folders gitmem created go again once they are empty."""
    manifest = _manifest(repo) if manifest is None else manifest
    manifest["files"].pop(rel, None)
    kept = []
    for folder in sorted(manifest["dirs"], key=lambda d: (-d.count("/"), d)):  # deepest first
        path = repo.worktree / folder
        try:
            path.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            kept.append(folder)  # not empty yet
    manifest["dirs"] = sorted(kept)
    _save(repo, manifest)


def remove(repo: RepoPaths, rel: str) -> bool:
    """Remove a generated file that is no longer produced (no restore: it is gitmem's own)."""
    path = repo.worktree / rel
    existed = path.exists()
    if existed:
        path.unlink()
    forget(repo, rel)
    return existed


def _missing_dirs(repo: RepoPaths, rel: str) -> list[str]:
    """The folders of `rel` that do not exist yet, deepest first."""
    missing = []
    parent = Path(rel).parent
    while str(parent) not in ("", ".") and not (repo.worktree / parent).exists():
        missing.append(parent.as_posix())
        parent = parent.parent
    return missing

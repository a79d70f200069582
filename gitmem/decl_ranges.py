"""Line ranges of anchored declarations, so the hook can tell whether an edit touches one.

The hook cannot afford tree-sitter (≈ 35 ms to import), so the ranges are computed off the hot
path and kept in .git/gitmem/decl-ranges.json, per file: the git blob id of the content they
were computed from, and each anchored symbol's line ranges (several for overloads). The hook
hashes the file it is about to edit (it reads it anyway to locate `old_string`) and uses the
ranges only when the blob id matches; otherwise they are stale, the entry fires for the whole
file (deliver rather than miss) and a refresh is started in the background.

Refreshes happen after an edit lands (PostToolUse), when the hook meets stale ranges, after
`gitmem init`/`add`/`revoke`, and after merges and rebases; each one parses only files whose
content changed, through the blob-keyed declaration cache.
"""

from __future__ import annotations

import json
import os

RANGES_FILE = "decl-ranges.json"
LOCK_FILE = "decl-ranges.lock"
MAX_BYTES = 2 * 1024 * 1024  # anchors.MAX_SOURCE_BYTES: bigger files have no declarations


def blob_id(content: bytes) -> str:
    """The id git gives this content (`git hash-object`), without starting git."""
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def read(state_dir: str) -> dict:
    try:
        with open(os.path.join(state_dir, RANGES_FILE), "rb") as handle:
            data = json.loads(handle.read())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def lookup(table: dict, path: str, symbol: str, content: bytes) -> list[list[int]] | None:
    """The symbol's line ranges in `content`, or None when not known for exactly this content."""
    record = table.get(path)
    if not isinstance(record, dict) or record.get("blob") != blob_id(content):
        return None
    ranges = (record.get("symbols") or {}).get(symbol)
    return ranges if isinstance(ranges, list) and ranges else None


def is_fresh(state_dir: str, worktree: str, path: str) -> bool:
    try:
        with open(os.path.join(worktree, path), "rb") as handle:
            content = handle.read()
    except OSError:
        return False
    record = read(state_dir).get(path)
    return isinstance(record, dict) and record.get("blob") == blob_id(content)


def refresh(repo, paths: list[str] | None = None) -> dict:
    """Recompute ranges for symbol-anchored files whose content changed (all of them, or `paths`).

    `repo` is a gitmem.paths.RepoPaths. Imports tree-sitter when something must be parsed.
    """
    import fcntl

    from gitmem import delivery_data
    from gitmem.anchors import DeclarationCache
    from gitmem.grammar import language_for_path

    state = str(repo.state)
    data = delivery_data.load(str(repo.worktree), str(repo.git_dir), str(repo.common_dir))
    wanted = delivery_data.symbol_anchored_paths(data)
    cache = DeclarationCache(repo.state / "decl-cache")
    os.makedirs(state, exist_ok=True)
    with open(os.path.join(state, LOCK_FILE), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        table = {p: r for p, r in read(state).items() if p in wanted}
        for path in (wanted if paths is None else [p for p in paths if p in wanted]):
            language = language_for_path(path)
            try:
                with open(os.path.join(str(repo.worktree), path), "rb") as handle:
                    content = handle.read(MAX_BYTES + 1)
            except OSError:
                table.pop(path, None)  # gone: the hook has nothing to compare, so it fires
                continue
            blob = blob_id(content)
            old = table.get(path) or {}
            if old.get("blob") == blob and all(s in (old.get("symbols") or {}) for s in wanted[path]):
                continue
            decls = [] if language is None or len(content) > MAX_BYTES else \
                cache.get(blob, language, lambda content=content: content)
            symbols = {}
            for symbol in wanted[path]:
                found = [[d.start_line, d.end_line] for d in decls if d.name == symbol]
                symbols[symbol] = found or None  # not declared (yet): the hook fires for the file
            table[path] = {"blob": blob, "symbols": symbols}
        delivery_data.write_json(os.path.join(state, RANGES_FILE), table)
    return table


def refresh_in_background(worktree: str, git_dir: str, common_dir: str, paths: list[str]) -> None:
    """Fork a detached child that refreshes `paths`; the hook returns without waiting.

    Called last in the hook, after every lock is released. The child gives up the hook's
    stdin/stdout/stderr at once, so Claude Code sees the hook finish when the parent exits.
    """
    try:
        pid = os.fork()
    except (OSError, AttributeError):
        return
    if pid:
        return
    try:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.closerange(3, 1024)
        from pathlib import Path

        from gitmem.paths import RepoPaths

        refresh(RepoPaths(Path(worktree), Path(git_dir), Path(common_dir)), paths)
    except BaseException:
        try:
            from pathlib import Path

            from gitmem import faillog

            faillog.record(Path(common_dir) / "gitmem", "declaration ranges refresh")
        except BaseException:
            pass
    finally:
        os._exit(0)

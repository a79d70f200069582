"""Line ranges of anchored declarations, so the hook can tell whether an edit touches one.

The hook cannot afford tree-sitter (≈ 35 ms to import), nor even hashlib (≈ 10 ms: it loads
OpenSSL), so the ranges are computed off the hot path and kept in .git/gitmem/decl-ranges.json,
per file: the mtime and size of the content they were computed from, its git blob id, and each
anchored symbol's line ranges (several for overloads). The hook stats the file it is about to
edit and uses the ranges only when mtime and size match; otherwise they are stale, the entry
fires for the whole file (deliver rather than miss) and a refresh starts in the background.

Racy content: a file modified again within the filesystem's timestamp granularity right after
it was read could keep mtime and size with new content. A record whose content was read less
than RACY_NS after its mtime is marked racy; the hook then compares blob ids, paying for a read
and a hash (well under a millisecond for source files) only in that case.

Refreshes happen after an edit lands (PostToolUse), when the hook meets stale ranges, after
`gitmem init`/`add`/`revoke`, and after merges and rebases; each one parses only files whose
content changed, through the blob-keyed declaration cache. A hook never waits for one: it
queues the paths in decl-ranges.pending and starts a detached refresher unless one is already
running (it holds decl-ranges.runner), so a burst of edits costs one refresher, not one each.
"""

from __future__ import annotations

import os
import sys
import time

from gitmem.base import fastjson

TYPE_CHECKING = False  # no typing import on the hook path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias, TypedDict

    from gitmem.base.paths import RepoPaths

    # (first, last) line, 1-based and inclusive: a JSON array in the file (a list once loaded),
    # a tuple when computed here; only ever unpacked.
    LineRange: TypeAlias = tuple[int, int]

    class RangeRecord(TypedDict):
        mtime_ns: int  # of the content the ranges were computed from
        size: int
        blob: str
        racy: bool  # read within RACY_NS of its mtime: compare blob ids too
        symbols: dict[str, list[LineRange] | None]  # None: not declared there

RANGES_FILE = "decl-ranges.json"
LOCK_FILE = "decl-ranges.lock"
PENDING_FILE = "decl-ranges.pending"  # paths waiting for the background refresher, one per line
RUNNER_LOCK = "decl-ranges.runner"  # held by the running background refresher
MAX_BYTES = 2 * 1024 * 1024  # anchors.MAX_SOURCE_BYTES: bigger files have no declarations
RACY_NS = 2_000_000_000  # covers coarse kernel clocks and 2-second filesystems


def blob_id(content: bytes) -> str:
    """The id git gives this content (`git hash-object`), without starting git."""
    try:
        from _sha1 import sha1  # the small built-in implementation, not OpenSSL
    except ImportError:
        from hashlib import sha1
    digest: str = sha1(b"blob %d\0" % len(content) + content).hexdigest()
    return digest


def read(state_dir: str) -> dict[str, RangeRecord]:
    """The table as refresh() wrote it; fresh() checks a record before the hook relies on it."""
    data = fastjson.read_file(os.path.join(state_dir, RANGES_FILE))
    return data if isinstance(data, dict) else {}


def fresh(record: object, st: os.stat_result, content: Callable[[], bytes | None] | None = None) -> bool:
    """Were the ranges in `record` computed from the file as it is now (stat `st`)?

    content: a callable returning the file's bytes, asked only for a racy record.
    """
    if not isinstance(record, dict):
        return False
    if record.get("mtime_ns") != st.st_mtime_ns or record.get("size") != st.st_size:
        return False
    if record.get("racy"):
        data = content() if content is not None else None
        return data is not None and record.get("blob") == blob_id(data)
    return True


def symbol_ranges(record: RangeRecord, symbol: str) -> list[LineRange] | None:
    """The symbol's ranges; None when it is not declared there (the hook then fires for the file)."""
    ranges = (record.get("symbols") or {}).get(symbol)
    return ranges if isinstance(ranges, list) and ranges else None


def is_fresh(state_dir: str, worktree: str, path: str) -> bool:
    full = os.path.join(worktree, path)
    try:
        st = os.stat(full)
    except OSError:
        return False
    record = read(state_dir).get(path)
    return fresh(record, st, lambda: _read_bytes(full))


def _read_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def refresh(repo: RepoPaths, paths: list[str] | None = None) -> dict[str, RangeRecord]:
    """Recompute ranges for symbol-anchored files (all of them, or `paths`); returns the table.

    `repo` is a gitmem.base.paths.RepoPaths. Imports tree-sitter when something must be parsed
    (only content not seen before).
    """
    from gitmem.base.files import FileLock
    from gitmem.code.anchors import DeclarationCache
    from gitmem.code.grammar import language_for_path
    from gitmem.delivery import compiled

    state = str(repo.state)
    data = compiled.load(str(repo.worktree), str(repo.git_dir), str(repo.common_dir))
    wanted = compiled.symbol_anchored_paths(data)
    targets = list(wanted) if paths is None else [p for p in paths if p in wanted]
    # Read first, then parse and write under the lock.
    snapshots = {p: _snapshot(os.path.join(str(repo.worktree), p)) for p in targets}
    cache = DeclarationCache(repo.state / "decl-cache")
    with FileLock(os.path.join(state, LOCK_FILE)):
        table = {p: r for p, r in read(state).items() if p in wanted}
        for path, snapshot in snapshots.items():
            if snapshot is None:
                table.pop(path, None)  # gone or changing: the hook has nothing to match, so it fires
                continue
            st, content, racy = snapshot
            blob = blob_id(content)
            old: RangeRecord | dict[str, None] = table.get(path) or {}
            symbols = old.get("symbols") or {}
            if old.get("blob") != blob or not all(s in symbols for s in wanted[path]):
                language = language_for_path(path)
                decls = [] if language is None or len(content) > MAX_BYTES else \
                    cache.get(blob, language, lambda: content)  # noqa: B023 - called before get() returns
                # A symbol not declared (yet) gets None: the hook fires for the whole file.
                symbols = {s: [(d.start_line, d.end_line) for d in decls if d.name == s] or None
                           for s in wanted[path]}
            table[path] = {"mtime_ns": st.st_mtime_ns, "size": st.st_size, "blob": blob, "racy": racy,
                           "symbols": symbols}
        fastjson.write_file(os.path.join(state, RANGES_FILE), table)
    return table


def _snapshot(path: str) -> tuple[os.stat_result, bytes, bool] | None:
    """(stat, content, racy) of a file read consistently; None when missing or always changing."""
    for _ in range(5):
        try:
            before = os.stat(path)
            with open(path, "rb") as handle:
                content = handle.read(MAX_BYTES + 1)
            after = os.stat(path)
        except OSError:
            return None
        if (before.st_mtime_ns, before.st_size) == (after.st_mtime_ns, after.st_size):
            return after, content, time.time_ns() - after.st_mtime_ns < RACY_NS
    return None


# -- the background refresher --------------------------------------------------------------------


# The refresher's own process: a fresh interpreter (below), given the runner lock's fd, the
# repository's folders and the hook's import path.
_RUNNER_CODE = ("import sys; sys.path += sys.argv[5:]; from gitmem.code.decl_ranges import run_refresher; "
                "run_refresher(int(sys.argv[1]), *sys.argv[2:5])")


def refresh_in_background(worktree: str, git_dir: str, common_dir: str, paths: list[str]) -> bool:
    """Queue `paths` and make sure a detached refresher runs; the hook returns without waiting.
    True when this call started the refresher.

    The refresher is a new interpreter started with posix_spawn, not a fork of the hook: a forked
    child shares the hook's pages, so the hook's own exit would copy them one page fault at a
    time (about 10 ms on every edit that leaves ranges stale). Its stdin, stdout and stderr are
    /dev/null, so Claude Code sees the hook finished when the hook exits.
    """
    from gitmem.base.files import lock

    state = os.path.join(common_dir, "gitmem")
    _queue(state, paths)
    runner = os.open(os.path.join(state, RUNNER_LOCK), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            lock(runner, blocking=False)
        except OSError:
            return False  # a refresher is running: it takes the queued paths before it stops
        os.set_inheritable(runner, True)  # the only descriptor the refresher inherits (PEP 446)
        quiet = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDWR, 0),
                 (os.POSIX_SPAWN_DUP2, 0, 1), (os.POSIX_SPAWN_DUP2, 0, 2)]
        os.posix_spawn(sys.executable, [sys.executable, "-I", "-S", "-c", _RUNNER_CODE, str(runner),
                                        worktree, git_dir, common_dir, *sys.path],
                       os.environ, file_actions=quiet, setsid=True)
        return True  # the refresher's copy keeps the lock
    except (OSError, AttributeError, NotImplementedError):  # no posix_spawn (Windows) or no setsid for it:
        # the next refresh point (gitmem add/revoke/init, a merge or rebase) tries again
        return False
    finally:
        os.close(runner)


def run_refresher(runner: int, worktree: str, git_dir: str, common_dir: str) -> None:
    """The detached refresher: holding the runner lock (`runner`, inherited), refresh what is
    queued until nothing is; never raises, and exits the process."""
    from gitmem.base.files import lock, unlock

    state = os.path.join(common_dir, "gitmem")
    try:
        os.set_inheritable(runner, False)
        os.nice(10)  # yield the CPU to the agent and to the next hook
        from pathlib import Path

        from gitmem.base.paths import RepoPaths

        repo = RepoPaths(Path(worktree), Path(git_dir), Path(common_dir))
        while True:
            queued = _take(state)
            if queued:
                refresh(repo, queued)
                continue
            # Paths queued after the last take by a hook that found the lock held: look once
            # more after letting go, and carry on if no other refresher took over.
            unlock(runner)
            if not _has_queued(state):
                break
            try:
                lock(runner, blocking=False)
            except OSError:
                break
    except BaseException:
        try:
            from pathlib import Path

            from gitmem.base import faillog

            faillog.record(Path(state), "declaration ranges refresh")
        except BaseException:
            pass
    finally:
        os._exit(0)


def _queue(state: str, paths: list[str]) -> None:
    from gitmem.base.files import lock

    fd = os.open(os.path.join(state, PENDING_FILE), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        lock(fd)
        os.write(fd, "".join(p + "\n" for p in paths).encode("utf-8", "surrogateescape"))
    finally:
        os.close(fd)


def _take(state: str) -> list[str]:
    """The queued paths, once each, emptying the queue."""
    from gitmem.base.files import lock

    fd = os.open(os.path.join(state, PENDING_FILE), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        lock(fd)
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read()
        os.ftruncate(fd, 0)
    finally:
        os.close(fd)
    return list(dict.fromkeys(p for p in data.decode("utf-8", "surrogateescape").split("\n") if p))


def _has_queued(state: str) -> bool:
    try:
        return os.stat(os.path.join(state, PENDING_FILE)).st_size > 0
    except OSError:
        return False

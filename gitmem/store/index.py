"""The compiled index: every entry as JSON under .git/gitmem/, so hooks never parse YAML.

Hooks run in front of every tool call and inside every commit; reading one JSON file
costs microseconds where loading YAML costs milliseconds per entry. The index is keyed
by a stat signature of the entry files and rebuilt incrementally (only files whose
size or mtime changed are re-parsed) whenever it is stale.

Pending entry changes (gitmem.store.pending: recorded while the repository was busy, not yet
committed) are part of the index, marked `"pending": true`, so they are delivered locally.
The index and the anchored-paths list the pre-commit stub sources live in the worktree's own
git dir: each linked worktree has its own entries, so one worktree's list never hides another's.

This module imports only the standard library; the YAML parser is imported lazily
when a rebuild is needed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from gitmem.base import fastjson
from gitmem.base.files import write_atomic
from gitmem.base.paths import ENTRIES_DIR, RepoPaths
from gitmem.base.signature import CONFIG_ROW, committed_part, store_signature
from gitmem.store import pending

if TYPE_CHECKING:
    from gitmem.base.signature import Signature
    from gitmem.store.entry import Entry

INDEX_VERSION = 4  # 3: "anchored"; 4: "stats" is gitmem.base.signature
INDEX_FILE = "index.json"
ANCHORED_PATHS_FILE = "anchored-paths.sh"


def _signature(repo: RepoPaths) -> Signature:
    return store_signature(os.fspath(repo.worktree), pending.local_state(repo))


def state_dir(repo: RepoPaths) -> str:
    """Where this worktree's index and anchored-paths list live."""
    return pending.local_state(repo)


def read_index(repo: RepoPaths) -> dict[str, Any] | None:
    try:
        with open(os.path.join(state_dir(repo), INDEX_FILE), encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("version") == INDEX_VERSION else None


def current(repo: RepoPaths) -> dict[str, Any]:
    """The index, rebuilt first if any entry file or the config changed since it was built."""
    stats = _signature(repo)
    index = read_index(repo)
    if index is not None and index.get("stats") == stats:
        return index
    return rebuild(repo, index, stats)


def rebuild(repo: RepoPaths, previous: dict[str, Any] | None = None,
            stats: Signature | None = None) -> dict[str, Any]:
    from gitmem.errors import EntryError
    from gitmem.store.yaml_files import check_anchor_inside, load_config, parse_entry_text, read_entry_file

    stats = stats if stats is not None else _signature(repo)
    old_rows = (previous or {}).get("stats") or []
    old_stats = {str(row[0]): row[1:] for row in old_rows if isinstance(row, list) and row}
    old_files = (previous or {}).get("files", {})
    files: dict[str, Any] = {}
    for row in committed_part(stats):
        name, stat = str(row[0]), row[1:]
        if name == CONFIG_ROW:
            continue
        if old_stats.get(name) == stat and name in old_files:
            files[name] = old_files[name]
            continue
        rel = f".gitmem/entries/{name}"
        try:
            entry = parse_entry_text(read_entry_file(repo.entries / name, rel), rel)
            check_anchor_inside(repo, entry, rel)
            files[name] = {"entry": entry.to_dict()}
        except EntryError as exc:
            files[name] = {"error": {"path": exc.path, "field": exc.field, "message": exc.message}}
    index = {
        "version": INDEX_VERSION,
        "stats": stats,
        "files": files,
        "pending": pending.entries(repo),
        "config": load_config(repo),
    }
    files_anchored = anchored_files(entries(index, committed_only=True))  # what the commit hooks re-check
    index["anchored"] = files_anchored
    index["half_edited"] = _half_edited(repo, [f"{ENTRIES_DIR}/{n}" for n, f in files.items() if "error" in f])
    try:
        fastjson.write_file(os.path.join(state_dir(repo), INDEX_FILE), index)
        # An entry file left half-edited may be anchored anywhere (its staged version is
        # re-checked): every commit starts the re-check while one is left so.
        anchored = sorted(files_anchored) + (["."] if index["half_edited"] else [])
        # Read by the pre-commit stub as one line it evals: `set -- ':(literal)path' ... # gitmem:end`
        # (the mark tells a whole line from one a crash cut short); it needs no process to read.
        quoted = " ".join("'" + (":(literal)" + p).replace("'", "'\\''") + "'" for p in anchored)
        write_atomic(os.path.join(state_dir(repo), ANCHORED_PATHS_FILE), f"set -- {quoted} # gitmem:end\n")
    except OSError:
        pass  # a read-only state folder: the index is still right for this process
    return index


def _half_edited(repo: RepoPaths, invalid: list[str]) -> bool:
    """Whether an entry file that does not parse differs from its staged version (one the
    developer is editing, whose staged version the commit hooks re-check instead). An invalid
    file as committed has nothing to fall back on: it costs no commit a re-check."""
    if not invalid:
        return False
    import subprocess

    from gitmem.git import env_without_index

    env = {**env_without_index(), "GIT_INDEX_FILE": os.path.join(os.fspath(repo.git_dir), "index")}
    done = subprocess.run(["git", "diff-files", "--quiet", "--", *(f":(literal){p}" for p in invalid)],
                          cwd=repo.worktree, env=env, stdin=subprocess.DEVNULL, capture_output=True)
    return done.returncode == 1


def anchored_files(entries: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """The files active entries are anchored to, each with its anchored symbols ([] when only the
    file is): the one answer to "which files are anchored" for the commit hooks (from the index),
    the delivery hook and the declaration-range refresher (from the compiled rules)."""
    found: dict[str, list[str]] = {}
    for e in entries:
        anchor = e.get("anchor")
        if e.get("status") != "active" or not isinstance(anchor, dict) or not isinstance(anchor.get("path"), str):
            continue
        symbols = found.setdefault(anchor["path"], [])
        symbol = anchor.get("symbol")
        if isinstance(symbol, str) and symbol and symbol not in symbols:
            symbols.append(symbol)
    return found


def entries(index: dict[str, Any], committed_only: bool = False) -> list[dict[str, Any]]:
    """Every entry of the index; a pending change (marked `"pending": True`) replaces the work
    tree's version of its entry. `committed_only`: the work tree's entries alone."""
    found = {}
    for f in index.get("files", {}).values():
        if "entry" in f:
            found[f["entry"].get("id")] = f["entry"]
    if not committed_only:
        for entry in index.get("pending") or []:
            found[entry.get("id")] = entry
    return list(found.values())


def stored(repo: RepoPaths, active_only: bool = False, committed_only: bool = False) -> list[Entry]:
    """The entries of the compiled index as Entry values (no YAML parsing); a record that does
    not validate is skipped (its file's error is in the index). `committed_only`: without
    pending changes (what the git hooks re-check)."""
    from gitmem.errors import GitmemError
    from gitmem.store.entry import Entry

    out: list[Entry] = []
    for data in entries(current(repo), committed_only=committed_only):
        try:
            entry = Entry.from_dict(data, f"{ENTRIES_DIR}/{data.get('id')}.yaml")
        except GitmemError:
            continue
        if entry.active or not active_only:
            out.append(entry)
    return out


def errors(index: dict[str, Any]) -> list[dict[str, Any]]:
    return [f["error"] for f in index.get("files", {}).values() if "error" in f]


def invalid_paths(index: dict[str, Any]) -> list[str]:
    """Repository-relative paths of the entry files that do not parse."""
    return [f".gitmem/entries/{name}" for name, f in index.get("files", {}).items() if "error" in f]




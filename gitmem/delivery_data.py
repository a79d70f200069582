"""The compiled delivery rules under .git/gitmem/delivery.json: what the hook reads.

Checking that the file is current costs one directory scan and one stat (the same inputs the
index is keyed on: the entry files and the config), then one JSON read. When it is stale it is
recompiled from the index (gitmem.index, which re-parses only changed YAML files); that is the
only path on which the hook imports more than the standard library and gitmem's delivery
modules, and it runs once after each change to the store.

Stdlib only at import time, and no json module, pathlib or dataclasses: see claude_hook.py.
"""

from __future__ import annotations

import os

from gitmem import fastjson

DATA_FILE = "delivery.json"
DATA_VERSION = 2
ENTRIES_DIR = os.path.join(".gitmem", "entries")
CONFIG_FILE = os.path.join(".gitmem", "config.yaml")


def signature(worktree: str) -> list:
    """What the compiled rules depend on: name, mtime and size of every entry file and the config."""
    sig: list = []
    try:
        with os.scandir(os.path.join(worktree, ENTRIES_DIR)) as it:
            for item in it:
                if item.name.endswith(".yaml") and not item.name.startswith("."):
                    st = item.stat()
                    sig.append([item.name, st.st_mtime_ns, st.st_size])
    except OSError:
        pass
    sig.sort()
    try:
        st = os.stat(os.path.join(worktree, CONFIG_FILE))
        sig.append(["<config>", st.st_mtime_ns, st.st_size])
    except OSError:
        pass
    return sig


def load(worktree: str, git_dir: str, common_dir: str) -> dict:
    """The compiled rules, recompiled first when an entry file or the config changed."""
    sig = signature(worktree)
    path = os.path.join(common_dir, "gitmem", DATA_FILE)
    try:
        with open(path, "rb") as handle:
            data = fastjson.loads(handle.read())
        if isinstance(data, dict) and data.get("version") == DATA_VERSION and data.get("signature") == sig:
            return data
    except (OSError, ValueError):
        pass
    return rebuild(worktree, git_dir, common_dir, sig)


def rebuild(worktree: str, git_dir: str, common_dir: str, sig: list | None = None) -> dict:
    from pathlib import Path

    from gitmem import deliver, index
    from gitmem.paths import RepoPaths

    sig = signature(worktree) if sig is None else sig  # taken first: a change racing us only causes another rebuild
    repo = RepoPaths(Path(worktree), Path(git_dir), Path(common_dir))
    idx = index.current(repo)
    data = deliver.compile_rules(index.entries(idx), idx.get("config") or {})
    data["version"] = DATA_VERSION
    data["signature"] = sig
    fastjson.write_file(os.path.join(common_dir, "gitmem", DATA_FILE), data)
    return data


def symbol_anchored_paths(data: dict) -> dict[str, list[str]]:
    """Files with symbol-anchored active entries, and those symbols."""
    found: dict[str, list[str]] = {}
    for entry in (data.get("active") or {}).values():
        anchor = entry.get("anchor")
        if anchor and anchor[1]:
            symbols = found.setdefault(anchor[0], [])
            if anchor[1] not in symbols:
                symbols.append(anchor[1])
    return found



"""The compiled delivery rules under .git/gitmem/delivery.json: what the hook reads.

Checking that the file is current costs one directory scan and one stat (the same inputs the
index is keyed on: the entry files and the config), then one JSON read. When it is stale it is
recompiled from the index (gitmem.store.index, which re-parses only changed YAML files); that is the
only path on which the hook imports more than the standard library and gitmem's delivery
modules, and it runs once after each change to the store.

Stdlib only at import time, and no json module, pathlib or dataclasses: see claude_hook.py.
"""

from __future__ import annotations

import os

from gitmem.base import fastjson

TYPE_CHECKING = False  # no typing import on the hook path
if TYPE_CHECKING:
    from typing import TypeAlias, TypeGuard

    from gitmem.delivery.rules import CompiledRules

    # [name, mtime_ns, size] per entry file, sorted, then ["<config>", mtime_ns, size]. Lists,
    # not tuples: it is compared with the copy loaded from JSON.
    Signature: TypeAlias = list[list[str | int]]

    class DeliveryData(CompiledRules):
        version: int
        signature: Signature

DATA_FILE = "delivery.json"
DATA_VERSION = 4  # 3: entries failing the gate are withheld (rules.compile_rules); 4: "anchored"
ENTRIES_DIR = os.path.join(".gitmem", "entries")
CONFIG_FILE = os.path.join(".gitmem", "config.yaml")


def signature(worktree: str, git_dir: str | None = None) -> Signature:
    """What the compiled rules depend on: name, mtime and size of every entry file and the config,
    and the entry changes waiting pending in the worktree's git dir (gitmem.store.pending)."""
    sig: Signature = []
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
    if git_dir:
        folder = os.path.join(git_dir, "gitmem", "pending")
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".json") and not n.startswith("."))
        except OSError:
            names = []
        for name in names:
            try:
                sig.append(["<pending>" + name, 0, os.stat(os.path.join(folder, name)).st_size])
            except OSError:
                continue
    return sig


def load(worktree: str, git_dir: str, common_dir: str) -> DeliveryData:
    """The compiled rules, recompiled first when an entry file or the config changed."""
    sig = signature(worktree, git_dir)
    path = os.path.join(common_dir, "gitmem", DATA_FILE)
    try:
        with open(path, "rb") as handle:
            data = fastjson.loads(handle.read())
        if _current(data, sig):
            return data
    except (OSError, ValueError):
        pass
    return rebuild(worktree, git_dir, common_dir, sig)


def _current(data: object, sig: Signature) -> TypeGuard[DeliveryData]:
    """Written by rebuild() for exactly these inputs (the version covers the shape)."""
    return isinstance(data, dict) and data.get("version") == DATA_VERSION and data.get("signature") == sig


def rebuild(worktree: str, git_dir: str, common_dir: str, sig: Signature | None = None) -> DeliveryData:
    from pathlib import Path

    from gitmem.base.paths import RepoPaths
    from gitmem.delivery import rules as delivery_rules
    from gitmem.store import index

    # taken first: a change racing us only causes another rebuild
    sig = signature(worktree, git_dir) if sig is None else sig
    repo = RepoPaths(Path(worktree), Path(git_dir), Path(common_dir))
    idx = index.current(repo)
    data: DeliveryData = {**delivery_rules.compile_rules(index.entries(idx), idx.get("config") or {}),
                          "version": DATA_VERSION, "signature": sig}
    fastjson.write_file(os.path.join(common_dir, "gitmem", DATA_FILE), data)
    return data


def symbol_anchored_paths(data: CompiledRules) -> dict[str, list[str]]:
    """Files with symbol-anchored active entries, and those symbols."""
    return {path: symbols for path, symbols in (data.get("anchored") or {}).items() if symbols}

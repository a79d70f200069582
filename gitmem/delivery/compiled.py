"""The compiled delivery rules in the worktree's `<git dir>/gitmem/delivery.json`: what the hook reads.

Per worktree, like the entries they are compiled from: two linked worktrees never recompile one
shared file over each other's.

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
from gitmem.base.files import is_locked
from gitmem.base.signature import GATE_LOCK, VERDICTS_FILE, main_checkout_state, store_signature

TYPE_CHECKING = False  # no typing import on the hook path
if TYPE_CHECKING:
    from typing import TypeGuard

    from gitmem.base.signature import Signature
    from gitmem.delivery.rules import CompiledRules

    class DeliveryData(CompiledRules):
        version: int
        signature: Signature

DATA_FILE = "delivery.json"
DATA_VERSION = 5  # 3: entries failing the gate are withheld (rules.compile_rules); 4: "anchored"; 5: verdicts


VERDICTS_ROW = "<verdicts>"
SHARED_VERDICTS_ROW = "<main checkout's verdicts>"
JUDGING_ROW = "<judging>"  # the store is being judged now (gitmem.judge.store_gate.awaiting)


def signature(worktree: str, git_dir: str | None = None, common_dir: str | None = None) -> Signature:
    """What the compiled rules depend on: the entry files, the config and, with `git_dir`, the
    entry changes waiting pending in the worktree's git dir (gitmem.base.signature), the gate's
    verdicts kept beside them and whether it is being judged now (gitmem.judge.store_gate); in a
    linked worktree, with `common_dir`, the main checkout's verdicts too."""
    local_state = os.path.join(git_dir, "gitmem") if git_dir else None
    sig = store_signature(worktree, local_state)
    if local_state:
        shared = main_checkout_state(git_dir, common_dir) if git_dir and common_dir else None
        for row, folder in ((VERDICTS_ROW, local_state), (SHARED_VERDICTS_ROW, shared)):
            if not folder:
                continue
            try:
                st = os.stat(os.path.join(folder, VERDICTS_FILE))
            except OSError:
                continue
            sig.append([row, st.st_mtime_ns, st.st_size])
        if is_locked(os.path.join(local_state, GATE_LOCK)):
            sig.append([JUDGING_ROW, 1, 0])
    return sig


def load(worktree: str, git_dir: str, common_dir: str) -> DeliveryData:
    """The compiled rules, recompiled first when an entry file, the config or a verdict changed."""
    sig = signature(worktree, git_dir, common_dir)
    path = os.path.join(git_dir, "gitmem", DATA_FILE)
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
    from gitmem.judge import safety, store_gate
    from gitmem.store import index

    # taken first: a change racing us only causes another rebuild
    sig = signature(worktree, git_dir, common_dir) if sig is None else sig
    repo = RepoPaths(Path(worktree), Path(git_dir), Path(common_dir))
    idx = index.current(repo)
    entries = index.entries(idx)
    judging = [JUDGING_ROW, 1, 0] in sig
    if not judging and store_gate.judge_arrivals_in_background(repo, entries):
        sig, judging = signature(worktree, git_dir, common_dir), True  # the job holds the lock now
    # what the detector objected to, then what waits while the store is being judged, and entries
    # from files whose id is not gitmem's (`gitmem check` fails them; an id of words is no place
    # for text to reach the agent by)
    withheld = {**safety.withheld_by_detector(repo), **safety.awaiting(repo, entries, judging=judging),
                **safety.misnamed(entries)}
    rules = delivery_rules.compile_rules(entries, idx.get("config") or {}, withheld)
    data: DeliveryData = {**rules, "version": DATA_VERSION, "signature": sig}
    fastjson.write_file(os.path.join(git_dir, "gitmem", DATA_FILE), data)
    return data


def symbol_anchored_paths(data: CompiledRules) -> dict[str, list[str]]:
    """Files with symbol-anchored active entries, and those symbols."""
    return {path: symbols for path, symbols in (data.get("anchored") or {}).items() if symbols}

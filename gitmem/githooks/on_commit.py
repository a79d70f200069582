"""What gitmem's git hooks do: re-check anchors touched by a commit, merge or rebase.

pre-commit re-resolves anchors in the STAGED content and stages entry changes into the
same commit, so a pull request shows a code removal and the memory retirement together.
A partial commit (`git commit -- PATH`) is built in a temporary index, and git updates the
main index afterwards only for the named paths; so pre-commit notes the files it staged and
post-commit brings them in step in the main index (else the next plain `git commit` would
commit the old entry back).
post-merge and post-rewrite cannot change the commit that triggered them, so they
commit their entry changes as one follow-up commit. Every path fails open.

Run as `python -I -m gitmem.githooks.on_commit HOOK [ARGS...]` by the stubs written from
gitmem/githooks/git-hook.sh.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gitmem.base import faillog, fastjson
from gitmem.base.paths import RepoPaths, find_repo

if TYPE_CHECKING:
    from gitmem.githooks.recheck import Outcome
    from gitmem.store.entry import Entry


def _entries(repo: RepoPaths) -> list[Entry]:
    from gitmem.store import index

    return index.stored(repo)


def _apply(repo: RepoPaths, outcomes: Sequence[Outcome]) -> list[str]:
    from gitmem.store.yaml_files import Store

    store = Store(repo)
    paths = []
    for outcome in outcomes:
        store.write(outcome.entry)
        paths.append(store.relpath_of(outcome.entry.id))
        print(f"gitmem: {outcome.action} {outcome.entry.id} ({outcome.detail})", file=sys.stderr)
    return paths


def pre_commit(repo: RepoPaths) -> None:
    from gitmem import git
    from gitmem.githooks.recheck import Snapshot, recheck
    from gitmem.store import index

    if not git.has_head(repo.worktree):
        return  # a first commit cannot remove anything an entry is anchored to
    changes = git.staged_changes(repo.worktree)
    outcomes = recheck(repo, _entries(repo), changes, Snapshot(repo, "HEAD"), Snapshot(repo, None))
    if outcomes:
        staged = _apply(repo, outcomes)
        git.stage(repo.worktree, staged)
        index.current(repo)
        refreshed = _refresh_delivery(repo)
        git.stage(repo.worktree, refreshed)
        if os.path.basename(os.environ.get("GIT_INDEX_FILE", "")).startswith("next-index-"):
            fastjson.write_file(str(repo.state / PARTIAL_COMMIT), staged + refreshed)


PARTIAL_COMMIT = "partial-commit.json"  # files pre-commit staged into a partial commit's index


def post_commit(repo: RepoPaths) -> None:
    """After a partial commit: the main index takes the committed version of the files
    pre-commit staged, where the work tree has that version too (nothing of the user's lost)."""
    from gitmem import git

    marker = repo.state / PARTIAL_COMMIT
    paths = fastjson.read_file(str(marker))
    marker.unlink(missing_ok=True)
    if not isinstance(paths, list) or not paths:
        return
    committed = git.tree_blob_ids(repo.worktree, "HEAD", paths)
    present = [p for p in paths if p in committed and (repo.worktree / p).is_file()]
    if not present:
        return
    in_tree = git.git_text(repo.worktree, "hash-object", "--", *present).split()
    in_step = [p for p, blob in zip(present, in_tree, strict=False) if committed[p] == blob]
    if in_step:
        git.git(repo.worktree, "reset", "-q", "HEAD", "--", *in_step)


def after_history_change(repo: RepoPaths, base: str | None, what: str) -> None:
    """post-merge / post-rewrite: check anchors between `base` and the new HEAD."""
    from dataclasses import replace

    from gitmem import git
    from gitmem.githooks.recheck import Snapshot, recheck
    from gitmem.store import index
    from gitmem.store.commit import commit_files

    head = git.rev_parse(repo.worktree, "HEAD")
    base = base and git.rev_parse(repo.worktree, base)
    if not base or not head or base == head:
        index.current(repo)
        return
    changes = git.changes_between(repo.worktree, base, head)
    outcomes = recheck(repo, _entries(repo), changes, Snapshot(repo, base), Snapshot(repo, head))
    # The commit that removed a retired entry's subject is knowable here: the last one
    # between base and head that touched the anchored file.
    for i, outcome in enumerate(outcomes):
        if outcome.action == "retired" and outcome.entry.anchor and outcome.entry.revocation:
            sha = git.git_text(repo.worktree, "log", "-1", "--format=%H", f"{base}..{head}",
                               "--", outcome.entry.anchor.path, check=False) or head
            entry = replace(outcome.entry, revocation=replace(outcome.entry.revocation, commit=sha))
            outcomes[i] = replace(outcome, entry=entry)
    if outcomes:
        paths = _apply(repo, outcomes) + _refresh_delivery(repo)
        trailers = [("Gitmem-Entry", o.entry.id) for o in outcomes]
        retired = sum(o.action == "retired" for o in outcomes)
        moved = len(outcomes) - retired
        subject = f"gitmem: re-check anchors after {what}: {retired} retired, {moved} re-anchored"
        result = commit_files(repo, paths, subject, trailers, finishing=True)
        print(f"gitmem: {result.note}", file=sys.stderr)
    else:
        _refresh_delivery(repo)
    index.current(repo)


def _refresh_delivery(repo: RepoPaths) -> list[str]:
    """AGENTS.md's managed section and declaration ranges follow memory changes (see delivery.py)."""
    from gitmem.delivery.upkeep import after_memory_change

    return after_memory_change(repo)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    hook = argv[0] if argv else ""
    repo = None
    try:
        repo = find_repo()
        if hook == "pre-commit":
            pre_commit(repo)
        elif hook == "post-commit":
            post_commit(repo)
        elif hook == "post-merge":
            if argv[1:2] != ["1"]:  # a squash merge commits nothing; pre-commit will see it
                after_history_change(repo, "ORIG_HEAD", "merge")
        elif hook == "post-rewrite":
            sys.stdin.read()
            if argv[1:2] == ["rebase"]:  # an amend already went through pre-commit
                after_history_change(repo, "ORIG_HEAD", "rebase")
    except Exception:
        faillog.record(repo.state if repo else None, f"git hook {hook}")
        print(f"gitmem: {hook} check failed (logged under .git/gitmem/errors.log); commit unaffected",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

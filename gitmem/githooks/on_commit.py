"""What gitmem's git hooks do: re-check anchors touched by a commit, merge or rebase.

pre-commit re-resolves anchors in the STAGED content and stages entry changes into the
same commit, so a pull request shows a code removal and the memory retirement together.
A partial commit (`git commit -- PATH`) is built in a temporary index, and git updates the
main index afterwards only for the named paths; so pre-commit notes the files it staged and
post-commit brings them in step in the main index (else the next plain `git commit` would
commit the old entry back).
post-merge and post-rewrite cannot change the commit that triggered them, so they
commit their entry changes as one follow-up commit. After a commit, a merge, a rebase or a
checkout, entries the gate's learned detector has not judged on this machine (a teammate's, brought
in by a pull; one written by hand and committed) are judged by a detached job
(gitmem.judge.store_gate). Every path fails open.

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
    """The entries the hooks re-check: the work tree's (pending changes are not committed yet)."""
    from gitmem.store import index

    return index.stored(repo, committed_only=True)


def _local(repo: RepoPaths) -> str:
    from gitmem.store.pending import local_state

    return local_state(repo)


def _changes(old: Entry, new: Entry) -> dict[str, object]:
    before, after = old.to_dict(), new.to_dict()
    changes: dict[str, object] = {k: v for k, v in after.items() if before.get(k) != v}
    changes.update({k: None for k in before if k not in after})
    return changes


def _stage_outcomes(repo: RepoPaths, outcomes: Sequence[Outcome], old: dict[str, Entry]) -> list[str]:
    """pre-commit: each entry change is made on the STAGED version of its file (in the index the
    commit is built from) and staged there; the work-tree file follows only where it had that
    staged version, so an unstaged edit of the developer's stays unstaged."""
    from gitmem import git
    from gitmem.base.files import write_atomic
    from gitmem.store.commit import blob_id as _blob_id
    from gitmem.store.yaml_files import Store, overlay_text

    store = Store(repo)
    paths = [store.relpath_of(o.entry.id) for o in outcomes]
    staged = git.index_blob_ids(repo.worktree, paths)  # GIT_INDEX_FILE: the commit's own index
    contents = git.read_blobs(repo.worktree, staged.values())
    lines = []
    worktree: list[tuple[str, str, str | None]] = []
    for outcome, path in zip(outcomes, paths, strict=True):
        blob = staged.get(path)
        current = contents.get(blob, b"").decode("utf-8", "replace") if blob else None
        before = old.get(outcome.entry.id, outcome.entry)
        sets = _changes(before, outcome.entry)
        text = overlay_text(current, sets) if current else store.render_onto(None, outcome.entry)
        new_blob = git.git(repo.worktree, "hash-object", "-w", "--stdin", input=text.encode("utf-8")).decode().strip()
        lines.append(f"100644 {new_blob}\t{path}\n")
        worktree.append((path, text, blob))
        print(f"gitmem: {outcome.action} {outcome.entry.id} ({outcome.detail})", file=sys.stderr)
    git.git(repo.worktree, "update-index", "--index-info", input="".join(lines).encode("utf-8"))
    for path, text, blob in worktree:
        file = repo.worktree / path
        try:
            data = file.read_bytes() if file.is_file() else None
        except OSError:
            continue
        if (data is None and blob is None and not file.exists()) or (data is not None and _blob_id(data) == blob):
            write_atomic(file, text)
    return paths


def pre_commit(repo: RepoPaths) -> None:
    from gitmem import git
    from gitmem.githooks.recheck import Snapshot, recheck
    from gitmem.store import index

    if not git.has_head(repo.worktree):
        return  # a first commit cannot remove anything an entry is anchored to
    changes = git.staged_changes(repo.worktree)
    entries = _entries(repo)
    outcomes = recheck(repo, entries, changes, Snapshot(repo, "HEAD"), Snapshot(repo, None))
    if outcomes:
        staged = _stage_outcomes(repo, outcomes, {e.id: e for e in entries})
        index.current(repo)
        refreshed = _refresh_delivery(repo)
        git.stage(repo.worktree, refreshed)
        if os.path.basename(os.environ.get("GIT_INDEX_FILE", "")).startswith("next-index-"):
            fastjson.write_file(os.path.join(_local(repo), PARTIAL_COMMIT), staged + refreshed)


PARTIAL_COMMIT = "partial-commit.json"  # files pre-commit staged into a partial commit's index


def post_commit(repo: RepoPaths) -> None:
    """After a partial commit: the main index takes the committed version of the files
    pre-commit staged, where the work tree has that version too (nothing of the user's lost).
    Then entries kept pending while the repository was busy are committed."""
    from gitmem import git

    marker = os.path.join(_local(repo), PARTIAL_COMMIT)
    paths = fastjson.read_file(marker)
    if os.path.exists(marker):
        os.unlink(marker)
    if isinstance(paths, list) and paths:
        committed = git.tree_blob_ids(repo.worktree, "HEAD", paths)
        present = [p for p in paths if p in committed and (repo.worktree / p).is_file()]
        if present:
            in_tree = git.git_text(repo.worktree, "hash-object", "--", *present).split()
            in_step = [p for p, blob in zip(present, in_tree, strict=False) if committed[p] == blob]
            if in_step:
                git.git(repo.worktree, "reset", "-q", "HEAD", "--", *in_step)
    commit_pending(repo)


def commit_pending(repo: RepoPaths, finishing: Sequence[str] = ()) -> None:
    """A hook's safe moment: commit what is pending, without waiting for quiet (the git command
    that runs this hook is waiting for it); if the moment is still busy for a while (a lock),
    a background process retries for a bounded time."""
    from gitmem.store import commit, index, pending

    if not pending.exists(repo):
        return
    reason = commit.flush_quietly(repo, finishing=finishing, quiet=0.0, wait=0.3)
    index.current(repo)
    if reason is None:
        _refresh_delivery(repo)
    elif any(word in reason for word in (*commit.TRANSIENT, "another gitmem")):
        commit.retry_in_background(repo)


def after_history_change(repo: RepoPaths, base: str | None, what: str, finishing: Sequence[str] = ()) -> None:
    """post-merge / post-rewrite: check anchors between `base` and the new HEAD."""
    from dataclasses import replace

    from gitmem import git
    from gitmem.githooks.recheck import Snapshot, recheck
    from gitmem.store import index
    from gitmem.store.commit import Change, FileChange, record
    from gitmem.store.yaml_files import Store, overlay_text

    commit_pending(repo, finishing)
    head = git.rev_parse(repo.worktree, "HEAD")
    base = base and git.rev_parse(repo.worktree, base)
    if not base or not head or base == head:
        index.current(repo)
        return
    changes = git.changes_between(repo.worktree, base, head)
    entries = _entries(repo)
    outcomes = recheck(repo, entries, changes, Snapshot(repo, base), Snapshot(repo, head))
    # The commit that removed a retired entry's subject is knowable here: the last one
    # between base and head that touched the anchored file.
    for i, outcome in enumerate(outcomes):
        if outcome.action == "retired" and outcome.entry.anchor and outcome.entry.revocation:
            sha = git.git_text(repo.worktree, "log", "-1", "--format=%H", f"{base}..{head}",
                               "--", outcome.entry.anchor.path, check=False) or head
            entry = replace(outcome.entry, revocation=replace(outcome.entry.revocation, commit=sha))
            outcomes[i] = replace(outcome, entry=entry)
    if outcomes:
        store = Store(repo)
        old = {e.id: e for e in entries}
        paths = [store.relpath_of(o.entry.id) for o in outcomes]
        committed = git.tree_blob_ids(repo.worktree, head, paths)
        contents = git.read_blobs(repo.worktree, committed.values())
        files = []
        for outcome, path in zip(outcomes, paths, strict=True):
            blob = committed.get(path)
            current = contents.get(blob, b"").decode("utf-8", "replace") if blob else None
            sets = _changes(old.get(outcome.entry.id, outcome.entry), outcome.entry)
            text = overlay_text(current, sets) if current else store.render_onto(None, outcome.entry)
            files.append(FileChange(path, text, blob, sets))
            print(f"gitmem: {outcome.action} {outcome.entry.id} ({outcome.detail})", file=sys.stderr)
        trailers = [("Gitmem-Entry", o.entry.id) for o in outcomes]
        retired = sum(o.action == "retired" for o in outcomes)
        moved = len(outcomes) - retired
        subject = f"gitmem: re-check anchors after {what}: {retired} retired, {moved} re-anchored"
        result = record(repo, Change(subject, files, trailers, [o.entry.to_dict() for o in outcomes]),
                        finishing=finishing, quiet=0.0, wait=0.3)
        print(f"gitmem: {result.note}", file=sys.stderr)
        if result.pending:
            from gitmem.store.commit import retry_in_background

            retry_in_background(repo)
    index.current(repo)
    _refresh_delivery(repo)


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
                after_history_change(repo, "ORIG_HEAD", "merge", finishing=("merge",))
            else:
                commit_pending(repo, ("merge",))
        elif hook == "post-rewrite":
            sys.stdin.read()
            if argv[1:2] == ["rebase"]:  # an amend already went through pre-commit
                after_history_change(repo, "ORIG_HEAD", "rebase", finishing=("rebase", "am"))
        elif hook == "post-checkout":
            commit_pending(repo)
        if hook in ("post-commit", "post-merge", "post-rewrite", "post-checkout"):
            # a teammate's entries may have come in, or entries written by hand been committed
            from gitmem.judge.store_gate import judge_in_background

            judge_in_background(repo)
    except Exception:
        faillog.record(repo.state if repo else None, f"git hook {hook}")
        print(f"gitmem: {hook} check failed (logged under .git/gitmem/errors.log); commit unaffected",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

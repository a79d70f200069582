"""Entries land as their own commits on the current branch, never mixed with the user's work.

The commit is built from HEAD's tree plus the entry files only (not from the index), so
whatever the user has staged or left unstaged stays exactly as it was. Afterwards the
index is updated for the entry files alone, so they do not show up as staged reverts.
A lock under .git/gitmem/ serialises concurrent writers; libgit2 additionally refuses to
move the branch unless it still points at the parent we built on.
"""

from __future__ import annotations

import fcntl
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Sequence

from gitmem.git import operation_in_progress
from gitmem.paths import RepoPaths

AUTHOR_NAME = "gitmem"


@dataclass(frozen=True, slots=True)
class CommitResult:
    committed: bool          # False: staged only
    commit: str | None
    note: str                # what happened, for the person


@contextmanager
def repo_lock(repo: RepoPaths, name: str = "commit.lock") -> Iterator[None]:
    repo.state.mkdir(parents=True, exist_ok=True)
    with open(repo.state / name, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def commit_files(repo: RepoPaths, paths: Sequence[str], subject: str,
                 trailers: Sequence[tuple[str, str]] = (), *, finishing: bool = False) -> CommitResult:
    """Commit the working-tree content of `paths` (repo-relative) as one commit.

    `finishing`: called from post-merge/post-rewrite, where git still has MERGE_HEAD or
    rebase-merge/ in place although the operation's commits are already made.
    """
    import pygit2

    message = subject.strip() + "\n"
    if trailers:
        message += "\n" + "".join(f"{k}: {v}\n" for k, v in trailers)

    with repo_lock(repo):
        r = pygit2.Repository(str(repo.worktree))
        blobs = {p: r.create_blob_fromworkdir(p) for p in paths}
        busy = None if finishing else operation_in_progress(repo.git_dir)
        if busy or r.head_is_detached:
            _stage(r, blobs)
            why = f"a {busy} is in progress" if busy else "HEAD is detached"
            return CommitResult(False, None, f"staged, not committed: {why}")

        parents = [] if r.head_is_unborn else [r.head.target]
        tree = pygit2.Index()
        if parents:
            tree.read_tree(r[parents[0]].tree)
        for path, oid in blobs.items():
            tree.add(pygit2.IndexEntry(path, oid, pygit2.enums.FileMode.BLOB))
        tree_id = tree.write_tree(r)
        if parents and tree_id == r[parents[0]].tree_id:
            return CommitResult(False, None, "nothing to commit: the entries are already committed")

        committer = _committer(r)
        author = pygit2.Signature(AUTHOR_NAME, committer.email)
        oid = r.create_commit("HEAD", author, committer, message, tree_id, parents)
        _stage(r, blobs)
        return CommitResult(True, str(oid), f"committed {str(oid)[:10]}")


def _stage(r, blobs) -> None:
    # Add from the working tree (not from the blob id) so the index records stat data and
    # git does not see the file as modified afterwards.
    index = r.index
    index.read()
    for path in blobs:
        index.add(path)
    index.write()


def _committer(r):
    import pygit2

    try:
        return r.default_signature
    except (KeyError, pygit2.GitError):
        return pygit2.Signature(AUTHOR_NAME, "gitmem@localhost")


def subject_for(action: str, kind: str, body: str, limit: int = 72) -> str:
    """`gitmem: record hazard: heads up, syncLedger() took prod down…` on one line."""
    head = f"gitmem: {action} {kind}: "
    text = " ".join(body.split())
    room = limit - len(head)
    return head + (text if len(text) <= room else text[: room - 1].rstrip() + "…")



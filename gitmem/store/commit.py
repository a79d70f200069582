"""Entries land as their own commits on the current branch, never mixed with the user's work.

The commit is built from HEAD's tree plus the entry files only (not from the index), so
whatever the user has staged or left unstaged stays exactly as it was. Afterwards the
index is updated for the entry files alone, so they do not show up as staged reverts.
A lock under .git/gitmem/ serialises concurrent writers; libgit2 additionally refuses to
move the branch unless it still points at the parent we built on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitmem.base.files import FileLock
from gitmem.base.paths import RepoPaths
from gitmem.git import operation_in_progress

if TYPE_CHECKING:
    import pygit2  # imported where used: ≈100 ms

AUTHOR_NAME = "gitmem"


@dataclass(frozen=True, slots=True)
class CommitResult:
    committed: bool          # False: staged only
    commit: str | None
    note: str                # what happened, for the person


def repo_lock(repo: RepoPaths, name: str = "commit.lock") -> FileLock:
    """gitmem's own writers of this repository, one at a time."""
    return FileLock(repo.state / name)


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
        parent = r[parents[0]].peel(pygit2.Commit) if parents else None
        tree = pygit2.Index()
        if parent is not None:
            tree.read_tree(parent.tree)
        for path, oid in blobs.items():
            tree.add(pygit2.IndexEntry(path, oid, pygit2.enums.FileMode.BLOB))
        tree_id = tree.write_tree(r)
        if parent is not None and tree_id == parent.tree_id:
            return CommitResult(False, None, "nothing to commit: the entries are already committed")

        committer = _committer(r)
        author = pygit2.Signature(AUTHOR_NAME, committer.email)
        oid = r.create_commit("HEAD", author, committer, message, tree_id, parents)
        _stage(r, blobs)
        return CommitResult(True, str(oid), f"committed {str(oid)[:10]}")


def _stage(r: pygit2.Repository, blobs: Mapping[str, pygit2.Oid]) -> None:
    # Add from the working tree (not from the blob id) so the index records stat data and
    # git does not see the file as modified afterwards.
    index = r.index
    index.read()
    for path in blobs:
        index.add(path)
    index.write()


def _committer(r: pygit2.Repository) -> pygit2.Signature:
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



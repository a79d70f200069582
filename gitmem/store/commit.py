"""The one write path: entry changes land as commits of their own, or wait pending, never half.

`gitmem add`, the writer, `gitmem revoke` and the post-merge / post-rewrite re-checks all call
`record()`. A change is a set of files given as TEXT (never read back from the work tree). It is
committed as a transaction, the way git itself does it:

1. the blobs, a tree (HEAD's tree plus those files) and the commit object are written to the
   object database; nothing visible has changed yet;
2. `<git dir>/index.lock` is taken with O_CREAT|O_EXCL, exactly as git takes it, and the new
   index (the old one with entries for those paths only) is written into it;
3. the branch moves by compare-and-swap (`git update-ref HEAD NEW OLD`: git takes the ref's own
   lock and refuses if the branch moved or the lock is held);
4. the lock is renamed over the index (git's commit of a lock file);
5. only then the work-tree files are written where the developer had no unstaged edit of them;
   where they have their own (staged or unstaged) version of an entry file, gitmem's field
   changes go onto it (onto_theirs, as in pre-commit), or, when they changed the same fields, it
   stays as it is and a warning names it.

A failure before 4 undoes what was done (the ref goes back by compare-and-swap, our lock is
removed; the index is untouched), so the entry file, its index entry and the commit succeed
together or not at all. A journal (`<git dir>/gitmem/transaction.json`) lets the next writer
finish or undo a transaction whose process was killed between 3 and 5.

When the repository is busy — an index or ref lock held by someone else, a merge, rebase,
cherry-pick, revert, bisect or am in progress, a detached HEAD, or a `git commit` waiting for
its editor (the pre-commit stub leaves its pid in `<git dir>/gitmem/committing`) — nothing is
committed or staged: the change is kept pending (gitmem.store.pending) and committed at the next
safe moment, pending changes first and in order. An anchor re-check's change carries its premise
(the commit it was computed for, the blobs of the files it read, the state of each entry it
changes): at that moment it is committed only where the premise still holds, and otherwise
dropped with a note, so a re-check computed on a detached HEAD is never replayed onto a branch it
is not true of. A lock that was just released may belong to a series of git commands (a commit
loop, a rebase), so a command waits until the repository has been quiet for QUIET_S, for at most
WAIT_S; gitmem never deletes or breaks a lock it did not take. gitmem's own writers of one
worktree take turns on an flock.

What agents read from the store rides along, rendered for the store after the change: AGENTS.md's
managed section and the files generated for the repository's other agents (_agents_md,
_agent_files), each only where HEAD holds it (or, for a new generated file, the agent's others)
and the developer has no staged or unstaged change of it, and only while the store itself has
no uncommitted change.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem import git
from gitmem.base import faillog, fastjson, files
from gitmem.base.files import FileLock, in_line_ends_of, write_atomic
from gitmem.base.paths import ENTRIES_DIR, RepoPaths
from gitmem.errors import GitmemError
from gitmem.store import pending

if TYPE_CHECKING:
    import pygit2  # imported where used: ≈100 ms

AUTHOR_NAME = "gitmem"
ZERO = "0" * 40
QUIET_S = 0.25    # the repository must have been quiet this long before gitmem takes its locks
WAIT_S = 1.0      # how long a command waits for that before keeping its change pending
POLL_S = 0.01
COMMITTING = "committing"         # the pid of a `git commit` between its pre-commit and post-commit
JOURNAL = "transaction.json"
LOCK_NAME = "commit.lock"
TRANSIENT = ("locked", "git commit")  # busy reasons worth waiting for
# What the background retry waits out: those, another gitmem committing, a cherry-pick or revert
# and a `git am` (series that go on from their own copy of the index: a commit of ours between two
# of their commits would make git refuse the next, or leave the index behind the work tree).
RETRY_WHILE = (*TRANSIENT, "another gitmem", "a cherry-pick", "a revert", "a am ", "autostash")
# A rebase's or merge's --autostash, re-applied once its post-rewrite or post-merge hook is over:
# a commit of ours before that would make the developer's stashed edits conflict with it.
AUTOSTASH_MARKERS = ("rebase-merge/autostash", "rebase-apply/autostash", "MERGE_AUTOSTASH")


class Busy(GitmemError):
    """The repository is in a state in which gitmem must not commit."""


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str                                  # repository-relative
    text: str                                  # the whole new file, as made from `base`
    base: str | None = None                    # blob id `text` was made from (None: not committed)
    changes: Mapping[str, Any] | None = None   # entry fields it sets, to re-apply onto another version
    create: bool = False                       # a new file: where it exists already, it stays as it is
    # The entry fields (status; anchor path and symbol) the version it goes onto must have for the
    # change to still be true there (an anchor re-check's premise); None: any version.
    expect: Mapping[str, Any] | None = None

    def apply(self, blob: str | None, current: str | None) -> str:
        """This change made against the version `blob` (text `current`) of the file."""
        if current is None or blob == self.base:
            return self.text
        if self.create:
            return current  # created already (a redone job, a pending change committed twice)
        if self.changes is not None:
            from gitmem.store.yaml_files import overlay_text

            try:
                return overlay_text(current, self.changes)
            except GitmemError:
                return self.text
        return self.text

    def holds_on(self, current: str | None) -> bool:
        """Whether the entry file `current` (a branch's version of it) is in the state this change
        was computed from (always, for a change without `expect`)."""
        if self.expect is None:
            return True
        if current is None:
            return False
        return _entry_state(current) == _entry_state_of(self.expect)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "text": self.text, "base": self.base, "create": self.create,
                "changes": dict(self.changes) if self.changes is not None else None,
                "expect": dict(self.expect) if self.expect is not None else None}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FileChange:
        changes, expect = data.get("changes"), data.get("expect")
        return cls(str(data["path"]), str(data["text"]), data.get("base"),
                   dict(changes) if isinstance(changes, dict) else None, bool(data.get("create")),
                   dict(expect) if isinstance(expect, dict) else None)


def _plain(value: object) -> object:
    """A YAML value as plain dicts and lists (ruamel's round-trip types compare by order)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _fields(text: str) -> dict[str, object] | None:
    from gitmem.store.yaml_files import MAX_ENTRY_BYTES, _yaml

    if len(text) > MAX_ENTRY_BYTES:
        return None
    try:
        doc = _yaml().load(text)
    except Exception:
        return None
    plain = _plain(doc)
    return plain if isinstance(plain, dict) else None


def onto_theirs(base: str, theirs: str, sets: Mapping[str, object]) -> str | None:
    """gitmem's field changes `sets` (made on `base`) applied onto the developer's version
    `theirs` of the same entry file, keeping their other edits; None when they changed one of
    those fields themselves (a conflict, for the developer to settle). The one way gitmem's
    change goes onto the developer's staged or unstaged version: in pre-commit, after a partial
    commit and in a follow-up commit (_transaction, _write_worktree)."""
    from gitmem.store.yaml_files import overlay_text

    mine, yours = _fields(base), _fields(theirs)
    if mine is None or yours is None:
        return None
    if any(yours.get(k) != mine.get(k) and yours.get(k) != _plain(v) for k, v in sets.items()):
        return None
    try:
        return overlay_text(theirs, {k: v for k, v in sets.items() if yours.get(k) != _plain(v)})
    except GitmemError:
        return None


def warn_unmerged(path: str, which: str, sets: Mapping[str, object]) -> None:
    fields = ", ".join(sorted(sets))
    print(f"gitmem: WARNING: {path}: your {which} version of this entry changes the fields gitmem "
          f"changed ({fields}), so gitmem's change (committed) is not in it; merge it in "
          f"(`git diff HEAD -- {path}`) before you commit it, or your commit undoes gitmem's change",
          file=sys.stderr)


def _entry_state_of(fields: Mapping[str, Any]) -> tuple[Any, ...]:
    anchor = fields.get("anchor")
    anchor = anchor if isinstance(anchor, Mapping) else {}
    return fields.get("status"), anchor.get("path"), anchor.get("symbol")


def _entry_state(text: str) -> tuple[Any, ...] | None:
    """(status, anchor path, anchor symbol) of an entry file's text; None when it does not parse."""
    fields = _fields(text)
    return _entry_state_of(fields) if fields is not None else None


@dataclass(slots=True)
class Change:
    """One commit to be: its message and files, and the entries as they will be stored."""

    subject: str
    files: list[FileChange]
    trailers: list[tuple[str, str]] = field(default_factory=list)
    entries: list[dict[str, Any]] = field(default_factory=list)   # Entry.to_dict() of what it writes
    agents_md: bool = True   # AGENTS.md's managed section joins the commit when it can
    # An anchor re-check's premise: the commit it was computed for, and the blob (None: absent)
    # each file it read had there. Kept pending (a detached HEAD, a rebase in progress), the
    # change is committed only onto a HEAD whose tree still has those blobs, and only for the
    # entries still in the state it was computed from (FileChange.expect); else it is dropped,
    # never replayed onto a branch where it is not true.
    computed_for: str | None = None
    holds: dict[str, str | None] | None = None

    @property
    def message(self) -> str:
        text = self.subject.strip() + "\n"
        if self.trailers:
            text += "\n" + "".join(f"{k}: {v}\n" for k, v in self.trailers)
        return text

    def to_json(self) -> dict[str, Any]:
        return {"subject": self.subject, "trailers": [list(t) for t in self.trailers],
                "files": [f.to_json() for f in self.files], "entries": self.entries,
                "agents_md": self.agents_md, "recorded": time.time(),
                "computed_for": self.computed_for, "holds": self.holds}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Change:
        holds = data.get("holds")
        return cls(str(data["subject"]), [FileChange.from_json(f) for f in data["files"]],
                   [(str(k), str(v)) for k, v in data.get("trailers") or []],
                   list(data.get("entries") or []), bool(data.get("agents_md", True)),
                   data.get("computed_for"),
                   {str(k): (str(v) if v else None) for k, v in holds.items()} if isinstance(holds, dict) else None)


@dataclass(frozen=True, slots=True)
class CommitResult:
    committed: bool          # False: pending, staged or nothing to do
    commit: str | None
    note: str                # what happened, for the person
    pending: bool = False    # kept under .git/gitmem/pending/ until the next safe moment


# -- the state of the repository ------------------------------------------------------------------

def local(repo: RepoPaths) -> Path:
    return Path(pending.local_state(repo))


def repo_lock(repo: RepoPaths) -> FileLock:
    """gitmem's own writers of this worktree, one at a time."""
    return FileLock(local(repo) / LOCK_NAME)


def head_ref(repo: RepoPaths) -> str | None:
    """The branch HEAD is attached to (`refs/heads/main`), None when detached."""
    try:
        text = (repo.git_dir / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return text[4:].strip() if text.startswith("ref:") else None


def busy(repo: RepoPaths, finishing: Sequence[str] = (), *, own_index_lock: bool = False) -> str | None:
    """Why gitmem must not commit or stage now, or None. `finishing`: operations whose own hook
    is running (their markers are still in place although their commits are made)."""
    if not own_index_lock and (repo.git_dir / "index.lock").exists():
        return "the index is locked by another git process"
    operation = git.operation_in_progress(repo.git_dir, finishing)
    if operation:
        return f"a {operation} is in progress"
    if any((repo.git_dir / marker).exists() for marker in AUTOSTASH_MARKERS):
        return "the developer's autostash waits to be applied"
    ref = head_ref(repo)
    if ref is None:
        return "HEAD is detached"
    if (repo.git_dir / "HEAD.lock").exists() or (repo.common_dir / f"{ref}.lock").exists():
        return f"{ref} is locked by another git process"
    if _unborn_beside_others(repo, ref):
        return "HEAD is on a branch with no commit yet (git switch --orphan)"
    if committing_pid(repo) is not None:
        return "a git commit is in progress"
    return None


def _unborn_beside_others(repo: RepoPaths, ref: str) -> bool:
    """HEAD on a branch with no commit while the repository has others (`git switch --orphan`): a
    commit of gitmem's would become the root of the developer's new history. (A new repository's
    first commit may be gitmem's.) Files only: this is asked while polling."""
    if (repo.common_dir / ref).exists():
        return False
    packed = repo.common_dir / "packed-refs"
    try:
        text = packed.read_text(encoding="utf-8", errors="replace") if packed.exists() else ""
    except OSError:
        return False
    if f" {ref}\n" in text:
        return False
    heads = repo.common_dir / "refs" / "heads"
    return "refs/heads/" in text or (heads.is_dir() and any(heads.iterdir()))


def noted_committer(repo: RepoPaths) -> int:
    """The pid the stub noted for the `git commit` whose hooks ran last (0: none noted)."""
    try:
        text = (local(repo) / COMMITTING).read_text(encoding="ascii", errors="replace").strip()
        return int(text.split()[0]) if text else 0
    except (OSError, ValueError, IndexError):
        return 0


def committing_pid(repo: RepoPaths) -> int | None:
    """The `git commit` that ran gitmem's pre-commit stub and has not reached post-commit yet."""
    pid = noted_committer(repo)
    if pid <= 1 or pid == os.getpid() or not _alive(pid):
        return None
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            if b"git" not in handle.read():
                return None  # the pid was reused by something else
    except OSError:
        pass
    return pid


def _alive(pid: int) -> bool:
    """Whether process `pid` runs. On Windows os.kill(pid, 0) would terminate it: ask the kernel."""
    if sys.platform == "win32":
        import ctypes

        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
        handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return ctypes.get_last_error() == 5  # ERROR_ACCESS_DENIED: it exists
        try:
            code = ctypes.c_ulong()
            return bool(kernel32.GetExitCodeProcess(handle, ctypes.byref(code))) and code.value == 259  # STILL_ACTIVE
        finally:
            kernel32.CloseHandle(handle)
    else:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True


def wait_until_quiet(repo: RepoPaths, finishing: Sequence[str], quiet: float, wait: float) -> str | None:
    """None once the repository has been quiet for `quiet` seconds; the reason it is busy when
    `wait` runs out first (or at once, for a state no wait will end: a merge, a detached HEAD)."""
    start = time.monotonic()
    quiet_since: float | None = None
    while True:
        reason = busy(repo, finishing)
        now = time.monotonic()
        if reason is None:
            quiet_since = now if quiet_since is None else quiet_since
            if now - quiet_since >= quiet:
                return None
        else:
            quiet_since = None
            if not any(word in reason for word in TRANSIENT) or now - start >= wait:
                return reason
        if now - start >= wait and reason is None:
            return None
        time.sleep(POLL_S)


# -- recording -------------------------------------------------------------------------------------

def record(repo: RepoPaths, change: Change, *, finishing: Sequence[str] = (),
           quiet: float = QUIET_S, wait: float = WAIT_S) -> CommitResult:
    """Commit `change` as a commit of its own (pending changes first), or keep it pending."""
    with repo_lock(repo):
        recover(repo)
        reason = _flush_locked(repo, finishing, quiet, wait)
        if reason is None:
            try:
                sha = _commit(repo, change, finishing, quiet, wait)
            except Busy as exc:
                reason = str(exc)
            else:
                if sha is None:
                    return CommitResult(False, None, "nothing to commit: the entries are already committed")
                return CommitResult(True, sha, f"committed {sha[:10]}")
        pending.write(repo, change.to_json())
        return CommitResult(False, None, f"pending, not committed: {reason}; it is committed on its "
                                         "own once that is over", pending=True)


def flush(repo: RepoPaths, *, finishing: Sequence[str] = (), quiet: float = QUIET_S,
          wait: float = WAIT_S, blocking: bool = True) -> str | None:
    """Commit every pending change, in order; None when none is left, else why some wait."""
    if not pending.exists(repo) and not (local(repo) / JOURNAL).exists():
        return None
    try:
        with FileLock(local(repo) / LOCK_NAME, blocking=blocking):
            recover(repo)
            return _flush_locked(repo, finishing, quiet, wait)
    except BlockingIOError:
        return "another gitmem process is committing"


def unsettled(repo: RepoPaths) -> bool:
    """Pending changes wait, or a writer died in the middle of a transaction."""
    return pending.exists(repo) or (local(repo) / JOURNAL).exists()


def flush_quietly(repo: RepoPaths, **kwargs: Any) -> str | None:
    """flush() for hooks and commands that must never fail because of it (errors are logged)."""
    try:
        return flush(repo, **kwargs)
    except Exception:
        faillog.record(repo.state, "committing pending entries")
        return "an error (logged)"


def _flush_locked(repo: RepoPaths, finishing: Sequence[str], quiet: float, wait: float) -> str | None:
    for name, data in pending.records(repo):
        try:
            change = Change.from_json(data)
        except (KeyError, TypeError, ValueError):
            pending.set_aside(repo, name)
            continue
        notes: list[str] = []
        try:
            if busy(repo, finishing) is None:  # else nothing is committed now: no need to look
                change, notes = _where_it_lands(repo, change)
            sha = _commit(repo, change, finishing, quiet, wait)
        except Busy as exc:
            return str(exc)
        pending.remove(repo, name)
        if sha:
            print(f"gitmem: committed pending {change.subject!r} ({sha[:10]})", file=sys.stderr)
            for note in notes:
                print(f"gitmem: {note}", file=sys.stderr)
    for name in pending.names(repo):  # unreadable records: kept aside for a person
        if pending.read(repo, name) is None:
            pending.set_aside(repo, name)
    return None


def _where_it_lands(repo: RepoPaths, change: Change) -> tuple[Change, list[str]]:
    """A new entry kept pending (recorded on a detached HEAD, in a rebase stopped at an `edit`) and
    anchored to a declaration the work tree no longer has where it is finally committed (the
    branch it lands on never had it, a later commit removed or renamed it): re-anchored to the one
    declaration of its file with the same body, or else recorded retired, with a note saying why,
    rather than committed as true of code that is not there, or lost."""
    from gitmem.code.resolve import anchor_of, file_declarations, resolve
    from gitmem.errors import AnchorError
    from gitmem.store.entry import RETIRED_NOTE, Entry
    from gitmem.store.yaml_files import Store

    store, files, entries, notes = Store(repo), list(change.files), list(change.entries), []
    for k, data in enumerate(entries):
        anchor = data.get("anchor") if isinstance(data, dict) else None
        if not isinstance(anchor, dict) or not anchor.get("path") or data.get("status") != "active":
            continue
        path = store.relpath_of(str(data.get("id")))
        at = next((i for i, f in enumerate(files) if f.path == path and f.create), None)
        if at is None:
            continue
        text = f"{anchor.get('path')}::{anchor.get('symbol')}" if anchor.get("symbol") else str(anchor.get("path"))
        try:
            resolve(repo.worktree, text)
            continue
        except AnchorError as exc:
            why = str(exc).partition(": ")[2] or str(exc)
        except Exception:
            continue  # cannot tell (no grammar installed): committed as recorded
        entry = Entry.from_dict(data, f"{data.get('id')}.yaml")
        file = str(anchor["path"])
        try:
            language, decls = file_declarations(repo.worktree, file)
        except AnchorError:
            language, decls = None, []
        same = [d for d in decls if anchor.get("fingerprint") and d.fingerprint == anchor.get("fingerprint")]
        if len(same) == 1:
            moved = anchor_of(file, language, same[0])
            entry = entry.reanchored(moved, "same body found where it was committed (it waited pending)")
            notes.append(f"{entry.id} re-anchored to {moved}: {why} where it was committed")
        else:
            entry = entry.revoked(
                f"{why} where this entry was committed (it waited pending while the repository was busy). "
                + RETIRED_NOTE.format(anchor=text))
            notes.append(f"{entry.id} recorded retired: {why} where it was committed")
        files[at] = replace(files[at], text=store.render_onto(None, entry))
        entries[k] = entry.to_dict()
    return replace(change, files=files, entries=entries), notes


def _commit(repo: RepoPaths, change: Change, finishing: Sequence[str], quiet: float, wait: float) -> str | None:
    """One transaction; raises Busy (nothing done) when the repository is busy."""
    for _attempt in range(5):
        reason = wait_until_quiet(repo, finishing, quiet, wait)
        if reason:
            raise Busy(reason)
        try:
            return _transaction(repo, change, finishing)
        except _Moved:
            continue  # the branch moved under us: build again on the new HEAD
    raise Busy("the branch keeps moving")


class _Moved(Exception):
    pass


SIGNING_TIMEOUT_S = 120


def _signed_commit(repo: RepoPaths, author: Any, committer: Any, message: str, tree: str, parent: str | None) -> str:
    """The commit signed as the developer's own are (commit.gpgsign: git signs with their key and
    program); Busy when it cannot be signed, so the entry waits pending and is tried again."""
    env = {**os.environ, "GIT_AUTHOR_NAME": author.name, "GIT_AUTHOR_EMAIL": author.email,
           "GIT_COMMITTER_NAME": committer.name, "GIT_COMMITTER_EMAIL": committer.email}
    import subprocess

    try:  # a signing program may ask for a passphrase: a while, not forever
        proc = subprocess.run(["git", "commit-tree", "-S", tree, *(["-p", parent] if parent else [])],
                              cwd=repo.worktree, input=message.encode("utf-8"), env=env, capture_output=True,
                              timeout=SIGNING_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise Busy("the commit could not be signed in time (commit.gpgsign is set)") from None
    if proc.returncode != 0:
        why = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise Busy("the commit could not be signed (commit.gpgsign is set)" + (f": {why[-1]}" if why else ""))
    return proc.stdout.decode().strip()


def _transaction(repo: RepoPaths, change: Change, finishing: Sequence[str]) -> str | None:
    import pygit2

    r = pygit2.Repository(str(repo.worktree))
    ref = head_ref(repo)
    if ref is None:
        raise Busy("HEAD is detached")
    old = git.rev_parse(repo.worktree, "HEAD")
    parent = r[old].peel(pygit2.Commit) if old else None
    head_blobs = _tree_blobs(r, parent.tree if parent else None, [f.path for f in change.files])
    if change.holds is not None:
        change = _still_true(r, parent, change, head_blobs, ref)
        if not change.files:
            return None
    texts: dict[str, str | None] = {
        f.path: f.apply(head_blobs.get(f.path), _blob_text(r, head_blobs.get(f.path))) for f in change.files}
    joined: dict[str, str | None] = {}  # what agents read, carried along: path -> text (None: removed)
    joined_head: dict[str, str] = {}    # their blobs in HEAD
    if change.agents_md and parent is not None and _store_committed(repo, change):
        found = _agents_md(repo, r, parent, change)
        if found is not None:
            joined[found[0]] = found[1]
            joined_head[found[0]] = str(parent.tree[found[0]].id)
        generated, generated_head = _agent_files(repo, r, parent, change)
        joined.update(generated)
        joined_head.update(generated_head)
    texts.update(joined)
    blobs = {p: str(r.create_blob(t.encode("utf-8"))) for p, t in texts.items() if t is not None}
    tree = pygit2.Index()
    if parent is not None:
        tree.read_tree(parent.tree)
    for path, blob in blobs.items():
        tree.add(pygit2.IndexEntry(path, pygit2.Oid(hex=blob), pygit2.enums.FileMode.BLOB))
    for path in (p for p, t in texts.items() if t is None):
        tree.remove(path)
    tree_id = tree.write_tree(r)
    if parent is not None and tree_id == parent.tree_id:
        return None
    committer = _committer(repo)
    author = pygit2.Signature(AUTHOR_NAME, committer.email)
    if git.git_text(repo.worktree, "config", "--type=bool", "--get", "commit.gpgsign", check=False) == "true":
        new = _signed_commit(repo, author, committer, change.message, str(tree_id), str(parent.id) if parent else None)
    else:
        new = str(r.create_commit(None, author, committer, change.message, tree_id, [parent.id] if parent else []))

    with _signals_held(), _IndexLock(repo) as lock:
        # Noted before anything else: a writer killed while it holds git's lock leaves this, by
        # which the next gitmem command (any hook's flush) removes the lock; without it git would
        # refuse every command that writes the index until a person deleted the file.
        fastjson.write_file(str(local(repo) / JOURNAL), {"pid": os.getpid(), "lock": lock.inode,
                                                            "lock_made_ns": lock.made_ns})
        try:
            reason = busy(repo, finishing, own_index_lock=True)
            if reason:
                raise Busy(reason)
            if git.rev_parse(repo.worktree, "HEAD") != old:
                raise _Moved()
            staged = git.index_blob_ids_of(repo, list(texts))
            if any(staged.get(p) != joined_head.get(p) for p in joined):
                raise _Moved()  # the developer staged a file that was to join: build again without it
            index_texts: dict[str, str | None] = {}
            for path, text in texts.items():
                before = head_blobs.get(path)
                if path in joined or staged.get(path) == before:
                    index_texts[path] = text
                    continue
                # The developer staged another version of it: the change goes onto that one, or
                # (they changed the same fields) their version stays staged as it is, named.
                fc = next(f for f in change.files if f.path == path)
                carried = _onto_staged(r, fc, before, staged.get(path))
                if carried is None:
                    warn_unmerged(path, "staged", fc.changes or {})
                else:
                    index_texts[path] = carried
            index_blobs = {p: (ZERO if t is None else blobs[p] if t == texts[p]
                               else str(r.create_blob(t.encode("utf-8")))) for p, t in index_texts.items()}
            lock.write(_new_index(repo, index_blobs))
        except BaseException:
            _remove_journal(repo)  # nothing moved: the lock goes with the context
            raise
        # What an unstaged version of the developer's takes (_write_worktree): the fields each
        # change sets, and the version it was made on (HEAD's, which theirs was made from).
        carry = {f.path: {"sets": dict(f.changes), "base": head_blobs.get(f.path) or f.base}
                 for f in change.files if f.changes is not None and f.path in index_texts}
        journal = {"pid": os.getpid(), "ref": ref, "old": old, "new": new, "lock": lock.inode,
                   "lock_made_ns": lock.made_ns,
                   "index": index_blobs, "before": {p: staged.get(p) for p in index_texts},
                   "texts": index_texts, "owned": sorted(p for p in joined if p != _AGENTS),
                   "carry": carry}
        fastjson.write_file(str(local(repo) / JOURNAL), journal)
        problem = git.update_ref(repo.worktree, "HEAD", new, old or ZERO, _reflog(change.subject))
        if problem and git.rev_parse(repo.worktree, "HEAD") == new:
            problem = None  # it moved, and git was stopped before it could say so
        if problem:
            _remove_journal(repo)
            raise Busy(f"the branch could not be moved ({problem})")
        try:
            lock.commit()
        except OSError:
            git.update_ref(repo.worktree, "HEAD", old or ZERO, new, "gitmem: undo")  # compare-and-swap back
            _remove_journal(repo)
            raise
        unwritten = _write_worktree(repo, journal)
        if unwritten:  # the journal stays: the next gitmem command, or the next commit's pre-commit, writes them
            print(f"gitmem: committed, but could not write {', '.join(unwritten)} in the work tree; gitmem "
                  "writes it at its next command, and a commit made meanwhile keeps it", file=sys.stderr)
        else:
            _remove_journal(repo)
    return new


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Ctrl-C, a hangup or a kill that can be caught waits until the branch, the index and the work
    tree all hold the commit, then takes effect: stopped between them, the developer's next `git
    commit` would delete the entry. Handlers, not a signal mask: a mask holds only the thread that
    sets it, and the model's threads would take the signal. Python sets handlers in the main thread only."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    before = {sig: signal.signal(sig, lambda number, _frame: caught.append(number))
              for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT") if (sig := getattr(signal, name, None))}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        if caught:
            signal.raise_signal(caught[0])


def stage(repo: RepoPaths, change: Change) -> None:
    """The change into the index and the work tree, uncommitted (`gitmem add --stage-only`): made
    onto the developer's own staged and unstaged versions of its files as a commit's is (their
    edits kept; where they changed the same fields, theirs stays and a warning names it)."""
    import pygit2

    r = pygit2.Repository(str(repo.worktree))
    staged = git.index_blob_ids_of(repo, [f.path for f in change.files])
    index_texts: dict[str, str] = {}
    for fc in change.files:
        carried = _onto_staged(r, fc, fc.base, staged.get(fc.path))
        if carried is None:
            warn_unmerged(fc.path, "staged", fc.changes or {})
        else:
            index_texts[fc.path] = carried
    blobs = {path: str(r.create_blob(text.encode("utf-8"))) for path, text in index_texts.items()}
    git.git(repo.worktree, "update-index", "--index-info",
            input="".join(f"100644 {blob}\t{path}\n" for path, blob in blobs.items()).encode("utf-8"))
    for fc in change.files:
        file = repo.worktree / fc.path
        data = file.read_bytes() if file.is_file() else None
        if data is None and file.exists():
            continue  # a folder or something else stands there: not ours to replace
        if data is None or blob_id(data) in (staged.get(fc.path), fc.base):
            if fc.path in index_texts:
                write_atomic(file, index_texts[fc.path])
        elif fc.changes is not None:
            _onto_unstaged(repo, fc.path, data, {"sets": dict(fc.changes), "base": fc.base})


def _onto_staged(r: pygit2.Repository, fc: FileChange, head_blob: str | None, blob: str | None) -> str | None:
    """`fc` made on the version the developer staged (blob `blob`; HEAD has `head_blob`): its
    fields carried onto theirs (onto_theirs), None when they changed the same fields."""
    current = _blob_text(r, blob)
    if current is None or blob == fc.base or fc.create or fc.changes is None:
        return fc.apply(blob, current)
    base = _blob_text(r, head_blob) or _blob_text(r, fc.base)
    return onto_theirs(base, current, fc.changes) if base is not None else None


def _still_true(r: pygit2.Repository, parent: Any, change: Change, head_blobs: Mapping[str, str],
                ref: str) -> Change:
    """`change` without the files whose re-check does not hold on `parent` (HEAD now): all of them
    when a file the re-check read differs from what it had where it was computed, else those whose
    entry is no longer in the state the re-check started from (retired or moved here already)."""
    from dataclasses import replace

    holds = change.holds or {}
    here = _tree_blobs(r, parent.tree if parent else None, list(holds))
    where = (change.computed_for or "another commit")[:10]
    if any(here.get(path) != blob for path, blob in holds.items()):
        print(f"gitmem: dropped {change.subject!r}: computed for {where}, it does not hold on "
              f"{ref.removeprefix('refs/heads/')} (the anchored files differ); the hooks re-check "
              "anchors there when they change", file=sys.stderr)
        return replace(change, files=[])
    kept = [f for f in change.files if f.holds_on(_blob_text(r, head_blobs.get(f.path)))]
    if len(kept) == len(change.files):
        return change
    dropped = [f.path for f in change.files if f not in kept]
    print(f"gitmem: left out of {change.subject!r}: {', '.join(dropped)} (that entry changed since the re-check)",
          file=sys.stderr)
    gone = {Path(p).stem for p in dropped}
    return replace(change, subject=f"{change.subject} ({len(dropped)} left out: changed since)", files=kept,
                   trailers=[t for t in change.trailers if t[1] not in gone],
                   entries=[e for e in change.entries if e.get("id") not in gone])


_AGENTS = "AGENTS.md"


def _reflog(subject: str) -> str:
    return "commit: " + " ".join(subject.split())[:200]


def _agents_md(repo: RepoPaths, r: pygit2.Repository, parent: Any, change: Change) -> tuple[str, str] | None:
    """AGENTS.md with its managed section rendered for the store after `change`, when the file is
    committed with a section and the developer has no staged or unstaged change of it."""
    try:
        from gitmem.delivery import agents_md
    except ImportError:
        return None
    if parent is None:
        return None
    try:
        entry = parent.tree[_AGENTS]
    except KeyError:
        return None
    committed = _blob_text(r, str(entry.id))
    if committed is None or not agents_md.has_section(committed):
        return None
    if git.index_blob_ids_of(repo, [_AGENTS]).get(_AGENTS) != str(entry.id):
        return None
    on_disk = repo.worktree / _AGENTS
    try:
        if not as_stored(repo, _AGENTS, on_disk.read_bytes(), str(entry.id)):
            return None
    except OSError:
        return None
    try:
        updated = agents_md.replace_section(committed, agents_md.section_for(repo, change.entries))
    except Exception:
        faillog.record(repo.state, "AGENTS.md section")
        return None
    return (_AGENTS, updated) if updated != committed else None


def _agent_files(repo: RepoPaths, r: pygit2.Repository, parent: Any,
                 change: Change) -> tuple[dict[str, str | None], dict[str, str]]:
    """The files gitmem generates for the repository's agents (gitmem.delivery.agents.channels),
    rendered for the store after `change`, that join the commit: (path -> text, None where the
    file goes; path -> its blob in HEAD). A file joins when HEAD holds it and the developer has no
    staged or unstaged change of it (the work tree as HEAD has it, or as gitmem last wrote it), or
    when it is new (neither staged nor in the work tree, or there exactly as gitmem last wrote it)
    and HEAD holds the agent's other generated files."""
    try:
        from gitmem.delivery.agents import channels, generated, owned
    except ImportError:
        return {}, {}
    import pygit2

    head: dict[str, str] = {}
    for folder, suffix, _ in channels.OWNED.values():
        try:
            tree = parent.tree[folder].peel(pygit2.Tree)
        except (KeyError, ValueError, pygit2.GitError):
            continue
        for item in tree:
            rel = f"{folder}/{item.name}"
            if item.type_str == "blob" and channels.is_generated_path(rel, folder, suffix):
                head[rel] = str(item.id)
    try:
        head[generated.GEMINI_FILE] = str(parent.tree[generated.GEMINI_FILE].id)
    except KeyError:
        pass
    texts = {p: t for p, b in head.items() if (t := _blob_text(r, b)) is not None}
    try:
        wanted = channels.for_commit(repo, texts, change.entries)
    except Exception:
        faillog.record(repo.state, "agent files")
        return {}, {}
    staged = git.index_blob_ids_of(repo, list(wanted))
    out: dict[str, str | None] = {}
    for path, text in wanted.items():
        file = repo.worktree / path
        try:
            data = file.read_bytes() if file.is_file() else None
        except OSError:
            continue
        if data is None and file.exists():
            continue  # a folder or something else stands there
        blob = head.get(path)
        if blob is not None:
            ours = data is not None and (as_stored(repo, path, data, blob) or owned.is_written(repo, path, data))
            if staged.get(path) != blob or not ours:
                continue  # the developer changed it (or removed it): theirs to commit
        elif path in staged or text is None:
            continue
        elif data is not None and data != text.encode("utf-8") and not owned.is_written(repo, path, data):
            continue  # untracked, and not as gitmem wrote it
        out[path] = text
    return out, {p: head[p] for p in out if p in head}


def _store_committed(repo: RepoPaths, change: Change) -> bool:
    """The store in the work tree is as HEAD has it (apart from the files `change` writes), so
    what agents read, rendered from it, holds only committed entries and this change."""
    own = {f.path for f in change.files}
    changed = git.git(repo.worktree, "diff", "--name-only", "-z", "--no-ext-diff", "--no-renames", "HEAD", "--",
                      ".gitmem/", check=False).decode("utf-8", "surrogateescape").split("\0")
    untracked = git.git(repo.worktree, "ls-files", "-z", "--others", "--exclude-standard", "--", ".gitmem/",
                        check=False).decode("utf-8", "surrogateescape").split("\0")
    return not [p for p in changed + untracked if p and p not in own]


def _tree_blobs(r: pygit2.Repository, tree: Any, paths: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    if tree is None:
        return out
    for path in paths:
        try:
            out[path] = str(tree[path].id)
        except KeyError:
            continue
    return out


def _blob_text(r: pygit2.Repository, blob: str | None) -> str | None:
    if not blob:
        return None
    import pygit2

    try:
        return bytes(r[blob].peel(pygit2.Blob).data).decode("utf-8")
    except (KeyError, ValueError, UnicodeDecodeError, pygit2.GitError):
        return None


_IDENT = re.compile(r"^(.*) <(.*)> \d+ [+-]\d{4}$")


def _committer(repo: RepoPaths) -> pygit2.Signature:
    """The developer's committer identity as git itself resolves it (GIT_COMMITTER_* and
    EMAIL, then the config files, GIT_CONFIG_GLOBAL included); Busy where git would refuse to
    commit for want of one: the change waits pending until one is set."""
    import pygit2

    proc = git.run(repo.worktree, "var", "GIT_COMMITTER_IDENT")
    match = _IDENT.match(proc.stdout.decode("utf-8", "replace").strip()) if proc.returncode == 0 else None
    if match is None:
        raise Busy("git has no committer identity here (set user.name and user.email)")
    return pygit2.Signature(match.group(1), match.group(2))


# -- the index, as git writes it -------------------------------------------------------------------

class _IndexLock:
    """`<git dir>/index.lock`, created with O_CREAT|O_EXCL as git creates it; the new index is
    written into it and renamed over the index. Held by someone else: Busy (never broken)."""

    def __init__(self, repo: RepoPaths) -> None:
        self.path = repo.git_dir / "index.lock"
        self.index = repo.git_dir / "index"
        self.fd: int | None = None
        self.inode = 0
        self.made_ns = 0
        self.done = False

    def __enter__(self) -> _IndexLock:
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            raise Busy("the index is locked by another git process") from None
        made = os.fstat(self.fd)
        self.inode = made.st_ino
        # With the inode, what tells this lock from a later one git made after someone deleted it
        # (file systems reuse inode numbers at once): its change time, to the nanosecond.
        self.made_ns = made.st_ctime_ns
        return self

    def write(self, data: bytes) -> None:
        assert self.fd is not None
        os.write(self.fd, data)
        os.fsync(self.fd)
        self.made_ns = os.fstat(self.fd).st_ctime_ns  # written: the journal that follows records this

    def commit(self) -> None:
        assert self.fd is not None
        os.close(self.fd)
        self.fd = None
        os.replace(self.path, self.index)
        self.done = True

    def __exit__(self, *exc: Any) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if not self.done:
            _unlink_if_ours(self.path, self.inode)


def _unlink_if_ours(path: Path, inode: int) -> None:
    with contextlib.suppress(OSError):
        if inode and os.stat(path).st_ino == inode:
            os.unlink(path)


def _new_index(repo: RepoPaths, blobs: Mapping[str, str]) -> bytes:
    """The current index with `blobs` set for their paths (stage 0), written by git itself on a copy."""
    tmp = local(repo) / f"index.{os.getpid()}.tmp"
    with _removing(tmp):
        if (repo.git_dir / "index").exists():
            shutil.copyfile(repo.git_dir / "index", tmp)
        env = {**git.env_without_index(), "GIT_INDEX_FILE": str(tmp)}
        lines = "".join(f"{'0' if blob == ZERO else '100644'} {blob}\t{path}\n" for path, blob in blobs.items())
        proc = git.run(repo.worktree, "update-index", "--index-info", input=lines.encode("utf-8"), env=env)
        if proc.returncode != 0:
            raise GitmemError("git update-index failed: " + proc.stderr.decode("utf-8", "replace").strip())
        return tmp.read_bytes()


@contextlib.contextmanager
def _removing(path: Path) -> Iterator[None]:
    try:
        yield
    finally:
        for p in (path, path.with_name(path.name + ".lock")):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()


def _write_worktree(repo: RepoPaths, journal: Mapping[str, Any]) -> list[str]:
    """The files as the index now has them, where the work tree had the index's old version; the
    paths that could not be written (a read-only folder, a full disk), each with why.
    Where the developer has an unstaged version of an entry file of their own, gitmem's field
    changes go onto it (onto_theirs: their edits kept), or it stays as it is and a warning names
    it (they changed the same fields); else their next `git commit -a` would undo gitmem's change.
    Agent files (journal "owned") are noted as gitmem's (gitmem.delivery.agents.owned), so
    `gitmem uninstall` knows what it wrote."""
    before: Mapping[str, str | None] = journal.get("before") or {}
    carry: Mapping[str, Any] = journal.get("carry") or {}
    owned_paths = set(journal.get("owned") or [])
    in_index: list[str] = []  # files written as the index has them: their stat data is recorded
    unwritten: list[str] = []
    for path, text in (journal.get("texts") or {}).items():
        file = repo.worktree / path
        try:
            data = file.read_bytes() if file.is_file() else None
        except OSError:
            continue
        old = before.get(path)
        if data is None and file.exists():
            continue  # a folder or something else stands there: not ours to replace
        in_step = (data is None and old is None) or (data is not None and as_stored(repo, path, data, old))
        if old is None and data is not None and isinstance(carry.get(path), Mapping):
            # Not in the index: a file written by hand, which the change was made on as it is here.
            in_step = blob_id(data) == carry[path].get("base")
        if not in_step:
            if data is not None and text is not None and isinstance(carry.get(path), Mapping):
                _onto_unstaged(repo, path, data, carry[path])
            continue
        if text is not None:  # the line ends git checks the file out with (a new one's: core.safecrlf)
            text = git.as_checked_out(repo.worktree, path, text) if data is None else in_line_ends_of(data, text)
        if path in owned_paths:
            _note_owned(repo, path, text)
        try:
            if text is None:
                if data is not None:
                    file.unlink()
            else:
                write_atomic(file, text)
                in_index.append(path)
        except OSError as exc:
            unwritten.append(f"{path} ({exc.strerror or exc})")
            continue
        if text is None and path in owned_paths:
            _forget_owned(repo, path)
    git.refresh_index(repo.worktree, in_index)
    return unwritten


def _onto_unstaged(repo: RepoPaths, path: str, data: bytes, carry: Mapping[str, Any]) -> None:
    """gitmem's change (journal "carry": the fields it sets, the blob it was made on) onto the
    developer's unstaged version `data` of the entry file `path`, or a warning naming it."""
    sets, base = carry.get("sets"), carry.get("base")
    if not isinstance(sets, Mapping):
        return
    texts = git.read_blobs(repo.worktree, [base]) if isinstance(base, str) and base else {}
    try:
        theirs = data.decode("utf-8")
    except UnicodeDecodeError:
        theirs = None
    merged = (onto_theirs(texts[base].decode("utf-8", "replace"), theirs, sets)
              if theirs is not None and base in texts else None)
    if merged is None:
        warn_unmerged(path, "unstaged", sets)
    elif merged != theirs:
        write_atomic(repo.worktree / path, merged)


def _note_owned(repo: RepoPaths, path: str, text: str | None) -> None:
    from gitmem.delivery.agents import owned
    from gitmem.delivery.agents.channels import developers_part

    if text is not None:
        owned.claim(repo, path, text.encode("utf-8"), developers_part)


def _forget_owned(repo: RepoPaths, path: str) -> None:
    from gitmem.delivery.agents import owned

    owned.forget(repo, path)


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def as_stored(repo: RepoPaths, path: str, data: bytes, blob: str | None) -> bool:
    """Whether the work tree's `data` at `path` is the blob `blob` as git checks it out: the same
    bytes, or, where they hold a carriage return, the bytes core.autocrlf or an `eol` attribute
    would store (a checkout's CRLF is no change of the developer's; `git hash-object --path`
    converts as `git add` would, except for a blob stored with CRLF, which the bytes match)."""
    if blob is None or blob_id(data) == blob:
        return blob is not None
    if b"\r" not in data:
        return False
    out = git.git(repo.worktree, "hash-object", f"--path={path}", "--stdin", input=data, check=False)
    return out.decode("ascii", "replace").strip() == blob



def _remove_journal(repo: RepoPaths) -> None:
    with contextlib.suppress(FileNotFoundError):
        (local(repo) / JOURNAL).unlink()


def recover(repo: RepoPaths) -> None:
    """Finish or undo a transaction whose writer died (called holding the worktree's gitmem lock,
    so no live writer owns the journal: one that holds only the lock's inode died before it moved
    anything, and its lock is removed), and remove the temporaries a dead writer left beside the
    entry files (`git add -A` would commit them) and its copy of the index."""
    _remove_stray_temporaries(repo)
    for copy in local(repo).glob("index.*.tmp"):
        pid = copy.name.split(".")[1]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                copy.unlink()
    path = local(repo) / JOURNAL
    journal = fastjson.read_file(str(path))
    if not isinstance(journal, dict):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return
    lock = repo.git_dir / "index.lock"
    head = git.rev_parse(repo.worktree, "HEAD")
    inode = int(journal.get("lock") or 0)
    ours = False
    with contextlib.suppress(OSError, TypeError, ValueError):
        found = os.stat(lock)
        made = journal.get("lock_made_ns")
        ours = bool(inode) and found.st_ino == inode and (made is None or found.st_ctime_ns == int(made))
    if journal.get("new") and head == journal.get("new"):
        if ours:
            os.replace(lock, repo.git_dir / "index")  # its content was complete before the ref moved
        else:
            _ensure_index(repo, journal)
        if _write_worktree(repo, journal):
            return  # kept: written once the work tree can be
    elif ours:
        _unlink_if_ours(lock, inode)
    path.unlink()


def keep_committed_entries(repo: RepoPaths) -> None:
    """pre-commit: a gitmem commit whose work tree was never written (stopped by `kill -9`, a
    read-only folder) leaves its entry files missing or old there, which `git commit -a` takes for
    the developer's deletion or revert: the commit being made gets them as gitmem committed them,
    and the work tree where it can be written. Only files still as they were before gitmem's change."""
    if not (local(repo) / JOURNAL).exists():
        return
    try:
        with FileLock(local(repo) / LOCK_NAME, blocking=False):  # held: its writer is alive and finishes it
            _keep_committed_entries(repo)
    except BlockingIOError:
        pass


def _keep_committed_entries(repo: RepoPaths) -> None:
    journal = fastjson.read_file(str(local(repo) / JOURNAL))
    if not isinstance(journal, dict) or not journal.get("new") or journal["new"] != git.rev_parse(repo.worktree,
                                                                                                     "HEAD"):
        return
    wanted: Mapping[str, str] = journal.get("index") or {}
    before: Mapping[str, str | None] = journal.get("before") or {}
    staged = git.index_blob_ids(repo.worktree, list(wanted))  # the index being committed
    lines = [f"100644 {blob}\t{path}\n" if blob != ZERO else f"0 {ZERO}\t{path}\n"
             for path, blob in wanted.items()
             if staged.get(path, ZERO) != blob and staged.get(path) == before.get(path)]
    if lines:
        git.git(repo.worktree, "update-index", "--index-info", input="".join(lines).encode("utf-8"))
    if not _write_worktree(repo, journal):
        _remove_journal(repo)


def _remove_stray_temporaries(repo: RepoPaths) -> None:
    """What a writer killed inside its atomic write left beside the entries, never a file git
    tracks (a pull request can commit any name)."""
    stray = files.stray_temporaries(repo.entries)
    if not stray:
        return
    rels = [f"{ENTRIES_DIR}/{name}" for name in stray]
    listed = git.git_text(repo.worktree, "ls-files", "-z", "--", *(f":(literal){r}" for r in rels), check=False)
    tracked = set(listed.split("\0"))
    for rel in rels:
        if rel not in tracked:
            with contextlib.suppress(OSError):
                (repo.worktree / rel).unlink()


def _ensure_index(repo: RepoPaths, journal: Mapping[str, Any]) -> None:
    """After a crash: give the index the committed entries where it still has the old ones."""
    wanted: Mapping[str, str] = journal.get("index") or {}
    before: Mapping[str, str | None] = journal.get("before") or {}
    staged = git.index_blob_ids_of(repo, list(wanted))
    todo = {p: b for p, b in wanted.items() if staged.get(p) == before.get(p) and staged.get(p) != b}
    if not todo:
        return
    try:
        with _IndexLock(repo) as lock:
            lock.write(_new_index(repo, todo))
            lock.commit()
    except Busy:
        pass


RETRY_LOCK = "retry.lock"
# The background retry has no terminal: its warnings (the developer's own version of an entry file
# lacks gitmem's change) wait here, and the git-hook.sh stub's pre-commit shows them, when it matters.
WARNINGS_FILE = "warnings"
WARNINGS_KEPT = 20  # the latest warnings, should no pre-commit run for a long while (--no-verify, another hook)
RETRY_FOR_S = 60.0


def retry_in_background(repo: RepoPaths) -> None:
    """Start one detached process that retries committing what is pending for RETRY_FOR_S (a
    hook's moment was busy); a second one is not started while one runs."""
    import subprocess

    from gitmem.base.files import is_locked

    if is_locked(local(repo) / RETRY_LOCK):
        return
    subprocess.Popen([sys.executable, "-I", "-m", "gitmem.store.commit", os.fspath(repo.worktree)],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True, close_fds=True, cwd=repo.worktree)


def _retry(worktree: str) -> int:
    import contextlib
    import io

    from gitmem.base.paths import find_repo

    repo = find_repo(worktree)
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            _retry_for(repo)
    finally:
        keep_warnings(repo, said.getvalue())
    return 0


def _retry_for(repo: RepoPaths) -> None:
    try:
        with FileLock(local(repo) / RETRY_LOCK, blocking=False):
            deadline = time.monotonic() + RETRY_FOR_S
            lasting: str | None = None
            while time.monotonic() < deadline:
                reason = flush_quietly(repo)
                if reason is None:
                    from gitmem.store import index

                    index.current(repo)
                    return
                if any(word in reason for word in RETRY_WHILE):
                    lasting = None
                elif reason == lasting:
                    return  # a merge or a detached HEAD: its own hook commits it later
                else:
                    # Seen once, it may be git tidying up: a finishing `git am` deletes its state
                    # folder file by file and reads, for a moment, as a rebase. Given up if it lasts.
                    lasting = reason
                time.sleep(1.0)
    except BlockingIOError:
        pass


def keep_warnings(repo: RepoPaths, said: str) -> None:
    """Add the warnings among what the background retry said to the worktree's warnings file,
    the latest WARNINGS_KEPT of them (its notes of what it committed are left out)."""
    new = [line for line in said.splitlines() if line.startswith("gitmem: WARNING:")]
    if not new:
        return
    path = local(repo) / WARNINGS_FILE
    try:
        kept = path.read_text(encoding="utf-8", errors="replace").splitlines() if path.exists() else []
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{line}\n" for line in (kept + new)[-WARNINGS_KEPT:]), encoding="utf-8")
    except OSError:
        pass  # a warning lost, never the retry's work


def subject_for(action: str, kind: str, body: str, limit: int = 72) -> str:
    """`gitmem: record hazard: heads up, syncLedger() took prod down…` on one line."""
    head = f"gitmem: {action} {kind}: "
    text = " ".join(body.split())
    room = limit - len(head)
    return head + (text if len(text) <= room else text[: room - 1].rstrip() + "…")


if __name__ == "__main__":
    sys.exit(_retry(sys.argv[1] if len(sys.argv) > 1 else os.getcwd()))

"""What gitmem's git hooks do: re-check anchors touched by a commit, merge or rebase.

pre-commit re-resolves anchors in the STAGED content and stages entry changes into the
same commit, so a pull request shows a code removal and the memory retirement together.
A partial commit (`git commit -- PATH`) is built in a temporary index, and git updates the
main index afterwards only for the named paths; so pre-commit notes the files it staged and
post-commit brings them in step in the main index (else the next plain `git commit` would
commit the old entry back).
Where the developer has their own unstaged (or, after a partial commit, staged) version of an
entry file, gitmem's change is re-applied onto it (their other edits kept), or a warning names
the file when they changed the same fields.
post-merge and post-rewrite cannot change the commit that triggered them, so they
commit their entry changes as one follow-up commit; so do post-commit after a commit made by
`git cherry-pick` or `git revert`, and post-applypatch after each patch of `git am` (neither runs
pre-commit). After an amend or a squash, a retirement whose declaration the final commit still
has is undone (post-rewrite). A follow-up kept pending (a detached HEAD, an operation in
progress) records the commit and file versions it was computed for, and is committed only onto a
HEAD where it still holds (gitmem.store.commit). After a commit, a merge, a rebase or a
checkout, entries the gate's learned detector has not judged on this machine (a teammate's, brought
in by a pull; one written by hand and committed) are judged by a detached job
(gitmem.judge.store_gate). Every path fails open.

Run as `python -I -m gitmem.githooks.on_commit HOOK [ARGS...]` by the stubs written from
gitmem/githooks/git-hook.sh.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from gitmem.base import faillog, fastjson
from gitmem.base.paths import RepoPaths, find_repo
from gitmem.githooks import STAGED_BY_PRE_COMMIT

if TYPE_CHECKING:
    from gitmem.git import Change
    from gitmem.githooks.recheck import Outcome, Snapshot
    from gitmem.store.entry import Anchor, Entry


def _entries(repo: RepoPaths) -> list[Entry]:
    """The entries the hooks re-check: the work tree's (pending changes are not committed yet);
    for an entry file the developer left half-edited (it does not parse) or deleted without
    staging it, its staged version, which is what the commit holds and what a change is made on
    (_stage_outcomes)."""
    from gitmem import git
    from gitmem.errors import GitmemError
    from gitmem.store import index
    from gitmem.store.yaml_files import parse_entry_text

    found = index.stored(repo, committed_only=True)
    broken = index.invalid_paths(index.current(repo))
    broken += [p for p in git.git_text(repo.worktree, "ls-files", "--deleted", "--", ".gitmem/entries/",
                                       check=False).splitlines() if p.endswith(".yaml") and p not in broken]
    if broken:
        known = {e.id for e in found}
        staged = git.index_blob_ids(repo.worktree, broken)
        contents = git.read_blobs(repo.worktree, staged.values())
        for path, blob in staged.items():
            try:
                entry = parse_entry_text(contents.get(blob, b"").decode("utf-8"), path)
            except (GitmemError, UnicodeDecodeError):
                continue  # broken as staged too: nothing to re-check (status and check name it)
            if entry.id not in known:
                found.append(entry)
    return found


def _local(repo: RepoPaths) -> str:
    from gitmem.store.pending import local_state

    return local_state(repo)


def _changes(old: Entry, new: Entry) -> dict[str, object]:
    before, after = old.to_dict(), new.to_dict()
    changes: dict[str, object] = {k: v for k, v in after.items() if before.get(k) != v}
    changes.update({k: None for k in before if k not in after})
    return changes


def _stage_outcomes(repo: RepoPaths, outcomes: Sequence[Outcome],
                    old: dict[str, Entry]) -> dict[str, dict[str, object]]:
    """pre-commit: each entry change is made on the STAGED version of its file (in the index the
    commit is built from) and staged there; the work-tree file follows only where it had that
    staged version, so an unstaged edit of the developer's stays unstaged (gitmem's field changes
    are re-applied onto it). Returns the fields set, by file."""
    from gitmem import git
    from gitmem.base.files import write_atomic
    from gitmem.store.commit import blob_id as _blob_id
    from gitmem.store.commit import onto_theirs, warn_unmerged
    from gitmem.store.yaml_files import Store, overlay_text

    store = Store(repo)
    paths = [store.relpath_of(o.entry.id) for o in outcomes]
    sets_of: dict[str, dict[str, object]] = {}
    staged = git.index_blob_ids(repo.worktree, paths)  # GIT_INDEX_FILE: the commit's own index
    contents = git.read_blobs(repo.worktree, staged.values())
    lines = []
    worktree: list[tuple[str, str, str | None, str | None, dict[str, object]]] = []
    for outcome, path in zip(outcomes, paths, strict=True):
        blob = staged.get(path)
        current = contents.get(blob, b"").decode("utf-8", "replace") if blob else None
        before = old.get(outcome.entry.id, outcome.entry)
        sets = _changes(before, outcome.entry)
        if outcome.action == "restored":  # fields go away: render, so no `revocation: null` is left
            text = store.render_onto(current, outcome.entry)
        else:
            text = overlay_text(current, sets) if current else store.render_onto(None, outcome.entry)
        new_blob = git.git(repo.worktree, "hash-object", "-w", "--stdin", input=text.encode("utf-8")).decode().strip()
        lines.append(f"100644 {new_blob}\t{path}\n")
        worktree.append((path, text, blob, current, sets))
        sets_of[path] = sets
        print(f"gitmem: {outcome.action} {outcome.entry.id} ({outcome.detail})", file=sys.stderr)
    git.git(repo.worktree, "update-index", "--index-info", input="".join(lines).encode("utf-8"))
    in_index = []  # files written as the index now has them: their stat data is recorded
    for path, text, blob, current, sets in worktree:
        file = repo.worktree / path
        try:
            data = file.read_bytes() if file.is_file() else None
        except OSError:
            continue
        if (data is None and blob is None and not file.exists()) or (data is not None and _blob_id(data) == blob):
            write_atomic(file, text)
            in_index.append(path)
        elif data is not None and current is not None:
            # The developer's unstaged version: gitmem's change goes onto it too, or their next
            # `git commit -a` would commit the entry back as it was.
            merged = onto_theirs(current, data.decode("utf-8", "replace"), sets)
            if merged is None:
                warn_unmerged(path, "unstaged", sets)
            else:
                write_atomic(file, merged)
    git.refresh_index(repo.worktree, in_index)
    return sets_of


def pre_commit(repo: RepoPaths) -> None:
    from gitmem import git
    from gitmem.store import index

    if not git.has_head(repo.worktree):
        return  # a first commit cannot remove anything an entry is anchored to
    if (repo.git_dir / "sequencer").is_dir():
        # This commit concludes one pick (or revert) of a series stopped on a conflict: after it,
        # git's sequencer goes on from its own copy of the index, and an entry staged into it here
        # makes the next pick refuse ("your local changes would be overwritten"). post-commit
        # re-checks the commit instead, kept pending until the series is over.
        what = "revert" if (repo.git_dir / "REVERT_HEAD").exists() else "cherry-pick"
        fastjson.write_file(os.path.join(_local(repo), IN_SERIES),
                            {"what": what, "from": git.rev_parse(repo.worktree, "CHERRY_PICK_HEAD") or ""})
        return
    _undo_a_commit_that_never_happened(repo)
    from gitmem.store.commit import keep_committed_entries

    keep_committed_entries(repo)
    entries = _entries(repo)
    outcomes = staged_outcomes(repo, entries)
    if outcomes:
        from gitmem.store.yaml_files import Store

        paths = [Store(repo).relpath_of(o.entry.id) for o in outcomes]
        before = _index_and_files(repo, paths)
        staged = _stage_outcomes(repo, outcomes, {e.id: e for e in entries})
        from gitmem.base.files import write_atomic
        from gitmem.store.commit import noted_committer

        note = {"head": git.rev_parse(repo.worktree, "HEAD"),
                "files": {p: [before[p], after] for p, after in _index_and_files(repo, paths).items()}}
        write_atomic(os.path.join(_local(repo), STAGED_BY_PRE_COMMIT),
                     f"{noted_committer(repo)}\n{fastjson.dumps(note)}\n")
        index.current(repo)
        refreshed = _refresh_delivery(repo)
        git.stage(repo.worktree, refreshed)
        if os.path.basename(os.environ.get("GIT_INDEX_FILE", "")).startswith("next-index-"):
            fastjson.write_file(os.path.join(_local(repo), PARTIAL_COMMIT),
                                {"paths": [*staged, *refreshed], "sets": staged})


def staged_outcomes(repo: RepoPaths, entries: Sequence[Entry] | None = None) -> list[Outcome]:
    """What the commit being made (the index) does to `entries` (by default the hooks' own,
    _entries): re-anchored or retired where the staged code moved or removed a declaration, and
    where an entry file it adds or makes active again lands. `gitmem check --staged` shows this."""
    from gitmem import git
    from gitmem.githooks.recheck import Snapshot, landed, recheck

    entries = _entries(repo) if entries is None else entries
    changes = git.staged_changes(repo.worktree)
    committing = Snapshot(repo, None)
    at_head = Snapshot(repo, "HEAD")
    outcomes = recheck(repo, entries, changes, at_head, committing)
    # An entry file this commit adds came from elsewhere (`git cherry-pick -n`, a patch, a file
    # checked out of another branch) or was written by hand: checked against the code it lands on,
    # as `git am`'s are. A merge's or a conflicted pick's are checked after the commit, from the
    # side they came from. One it makes active again (a revert of a retirement), where it lands.
    done = {o.entry.id for o in outcomes}
    known_side = any((repo.git_dir / name).exists() for name in ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD"))
    added = (set() if known_side else _entry_ids(changes, ("A", "C"))) | _reactivated(repo, changes)
    outcomes += landed([e for e in entries if e.id in added and e.id not in done], committing, "this commit")
    outcomes += [o for o, _ in _retirements_not_holding(repo, changes, at_head, committing, entries,
                                                         {o.entry.id for o in outcomes})]
    return outcomes


def _reactivated(repo: RepoPaths, changes: Sequence[Change]) -> set[str]:
    """Ids of entries this commit makes active again (`git revert -n` of a retirement, a file
    checked out of an older commit): checked against the code they land on, as added ones are."""
    from gitmem import git

    modified = sorted(_entry_ids(changes, ("M",)))
    if not modified:
        return set()
    from gitmem.errors import GitmemError
    from gitmem.store.yaml_files import Store, parse_entry_text

    store = Store(repo)
    paths = {store.relpath_of(i): i for i in modified}
    head = git.tree_blob_ids(repo.worktree, "HEAD", list(paths))
    staged = git.index_blob_ids(repo.worktree, list(paths))
    texts = git.read_blobs(repo.worktree, [*head.values(), *staged.values()])

    def active(path: str, blob: str | None) -> bool:
        try:
            return blob is not None and parse_entry_text(texts.get(blob, b"").decode("utf-8", "replace"), path).active
        except GitmemError:
            return False

    return {i for p, i in paths.items() if active(p, staged.get(p)) and not active(p, head.get(p))}


def _entry_ids(changes: Sequence[Change], statuses: tuple[str, ...]) -> set[str]:
    """Ids of the entry files `changes` give one of `statuses` (A, M, R, C as git names them)."""
    from gitmem.githooks.review import ENTRIES_PREFIX

    return {c.path[len(ENTRIES_PREFIX):-len(".yaml")] for c in changes
            if c.status in statuses and c.path.startswith(ENTRIES_PREFIX) and c.path.endswith(".yaml")}


PARTIAL_COMMIT = "partial-commit.json"  # files pre-commit staged into a partial commit's index


def _index_and_files(repo: RepoPaths, paths: Sequence[str]) -> dict[str, list[str | None]]:
    """Each path's blob in the index the commit is built from and in the work tree (written to
    the object database, so either can be brought back); None where it has none."""
    from gitmem import git

    staged = git.index_blob_ids(repo.worktree, paths)
    files = [p for p in paths if (repo.worktree / p).is_file()]
    written = git.git_text(repo.worktree, "hash-object", "-w", "--", *files).split() if files else []
    in_tree = dict(zip(files, written, strict=False))
    return {p: [staged.get(p), in_tree.get(p)] for p in paths}


def _undo_a_commit_that_never_happened(repo: RepoPaths) -> None:
    """An earlier pre-commit's changes whose commit was never made: each file gitmem staged or
    wrote that still is as gitmem left it goes back to what it was (an entry is never retired by
    a commit that does not exist, nor carried into the next, unrelated one)."""
    from gitmem import git
    from gitmem.store.commit import _alive

    path = os.path.join(_local(repo), STAGED_BY_PRE_COMMIT)
    try:
        with open(path, encoding="utf-8") as handle:
            owner, _, rest = handle.read().partition("\n")
        data = fastjson.loads(rest) if rest.strip() else None
    except (OSError, ValueError):
        return
    if not isinstance(data, dict):
        return
    if owner.strip().isdigit() and int(owner) > 1 and _alive(int(owner)):
        return  # that commit is still being made (its editor open, in another terminal)
    files = data.get("files")
    plan = {p: v for p, v in files.items() if isinstance(v, list) and len(v) == 2} if isinstance(files, dict) else {}
    if plan and data.get("head") != git.rev_parse(repo.worktree, "HEAD"):
        # HEAD moved since (`gitmem add`, a switch, a pull), the change still staged: a file is
        # taken back where HEAD has the version the index had then (else the next, unrelated
        # commit would carry a retirement of code the developer kept)
        at_head = git.tree_blob_ids(repo.worktree, "HEAD", sorted(plan))
        plan = {f: v for f, v in plan.items() if v[0][0] is not None and at_head.get(f) == v[0][0]}
    now = _index_and_files(repo, sorted(plan))
    restore = {f for f, (before, after) in plan.items() if now[f][1] == after[1] and after[1] != before[1]}
    texts = git.read_blobs(repo.worktree, [plan[f][0][1] for f in restore if plan[f][0][1]])
    lines, undone = [], []
    for file, (before, after) in plan.items():
        if now[file][0] == after[0] and after[0] != before[0]:
            lines.append(f"100644 {before[0]}\t{file}\n" if before[0] else f"0 {'0' * 40}\t{file}\n")
            undone.append(file)
        if file in restore:
            target = repo.worktree / file
            if before[1]:
                target.write_bytes(texts.get(before[1], b""))
            else:
                target.unlink(missing_ok=True)
            undone.append(file)
    if lines:
        git.git(repo.worktree, "update-index", "--index-info", input="".join(lines).encode("utf-8"))
    with open(path, "w", encoding="utf-8"):
        pass  # emptied, as the stub empties it: nothing to take back
    if undone:
        print(f"gitmem: the last commit was not made: took back what its pre-commit changed in "
              f"{', '.join(sorted(set(undone)))}", file=sys.stderr)
        from gitmem.store import index

        index.current(repo)
        git.stage(repo.worktree, _refresh_delivery(repo))
IN_SERIES = "in-series.json"  # pre-commit left a series' commit to post-commit: {"what", "from"}
# pre-commit saw entry files staged: post-commit starts the gate's job (the file holds the commit a
# cherry-pick that stopped on a conflict copied them from, when this commit concludes one)
ENTRIES_COMMITTED = "entries-committed"


def post_commit(repo: RepoPaths, concluded_pick: str | None = None,
                in_series: Mapping[str, object] | None = None) -> None:
    """After a partial commit: the main index takes the committed version of the files
    pre-commit staged, where the work tree has that version too (nothing of the user's lost), or
    where the developer staged nothing of them; where they staged their own version of an entry
    file, gitmem's change goes onto it. After a commit made by `git cherry-pick` or `git revert`
    (no pre-commit ran): its anchors are re-checked, as after a merge; after `git commit` concludes a
    cherry-pick that stopped on a conflict (`concluded_pick`, the commit it copied: pre-commit
    checked the change), the entries it brought in are; the whole commit when it concluded one
    pick of a series (`in_series`: pre-commit left it alone, see there). Then entries kept pending
    while the repository was busy are committed."""
    from gitmem import git

    marker = os.path.join(_local(repo), PARTIAL_COMMIT)
    data = fastjson.read_file(marker)
    if os.path.exists(marker):
        os.unlink(marker)
    paths: object = data.get("paths") if isinstance(data, dict) else data
    sets: object = data.get("sets") if isinstance(data, dict) else None
    if isinstance(paths, list) and paths and all(isinstance(p, str) for p in paths):
        _after_partial_commit(repo, paths, sets if isinstance(sets, dict) else {})
    picked = _picked(repo)
    if in_series:  # first: its `--continue` may be the one that made the commit
        # Nothing is committed from this hook: the `--continue` that made this commit goes on when
        # the hook returns (even after the series' last commit), from its own copy of the index.
        source = in_series.get("from")
        after_history_change(repo, git.rev_parse(repo.worktree, "HEAD~1"), str(in_series.get("what")),
                             brought_from=git.rev_parse(repo.worktree, source)
                             if isinstance(source, str) and source else None, defer=True)
    elif picked:
        # One pick: its follow-up is committed now, as after a merge. A series (git's sequencer
        # goes on from its own copy of the index, and would refuse the next pick): kept pending,
        # each pick's re-check holding only if later picks leave its files alone, and committed by
        # the background retry once the series is over.
        series = (repo.git_dir / "sequencer").exists()
        after_history_change(repo, git.rev_parse(repo.worktree, "HEAD~1"), picked,
                             finishing=PICKING[:2] if series else PICKING,
                             # a revert's entries (a retirement it undoes) are checked where they land
                             brought_from=(_pick_source(repo) or "") if picked == "cherry-pick" else "")
    elif concluded_pick and _reflog_subject(repo).startswith("commit (cherry-pick): "):
        series = (repo.git_dir / "sequencer").exists()
        after_history_change(repo, git.rev_parse(repo.worktree, "HEAD~1"), "cherry-pick",
                             finishing=PICKING[:2] if series else PICKING,
                             brought_from=git.rev_parse(repo.worktree, concluded_pick) or "")
    elif git.rev_parse(repo.worktree, "HEAD^2"):
        # A merge concluded by `git commit` (after conflicts, or --no-commit): pre-commit checked
        # it against the first parent only; what the other parents bring is checked here.
        after_history_change(repo, git.rev_parse(repo.worktree, "HEAD^1"), "merge", finishing=("merge",))
    elif _series_pending(repo):
        # A re-check a pick of a series left pending: this commit may be the series' last, made by
        # a `--continue` that checks the index once this hook returns. The retry commits it then.
        from gitmem.store.commit import retry_in_background

        retry_in_background(repo)
    else:
        commit_pending(repo)


PICKING = ("cherry-pick", "revert", "cherry-pick or revert")
SERIES_SUBJECTS = tuple(f"gitmem: re-check anchors after {what}:" for what in (*PICKING[:2], "am"))


def _series_pending(repo: RepoPaths) -> bool:
    from gitmem.store import pending

    return any(str(data.get("subject", "")).startswith(SERIES_SUBJECTS) for _, data in pending.records(repo))


def post_applypatch(repo: RepoPaths) -> None:
    """After each patch `git am` commits (it runs no pre-commit): its anchors are re-checked, the
    follow-up kept pending (git am goes on from its own copy of the index, after the last patch
    too) and committed by the background retry once the am is over. (The
    stub answers in shell, without Python, for a patch that touches no anchored file and no entry
    while nothing is pending: gitmem/githooks/git-hook.sh.)"""
    from gitmem import git

    state = repo.git_dir / "rebase-apply"
    try:
        last = (state / "next").read_text().strip() == (state / "last").read_text().strip()
    except OSError:
        last = False
    # Never committed from this hook: git am goes on from its own copy of the index when it
    # returns, after the last patch too (`git am --continue` then checks the index is clean).
    after_history_change(repo, git.rev_parse(repo.worktree, "HEAD~1"), "am",
                         finishing=("am", "rebase") if last else (), brought_from="", defer=True)


def _rebase_with_nothing_to_replay(repo: RepoPaths) -> None:
    """A rebase that checks out its base with nothing left to replay (a fast-forward, or every
    commit dropped) ends without post-rewrite: the branch moved from its old head to the base, and
    its anchors are re-checked here, the follow-up kept pending until the rebase is over."""
    from gitmem import git

    state = repo.git_dir / "rebase-merge"
    try:
        if (state / "git-rebase-todo").read_text(encoding="utf-8").strip():
            return  # commits to replay: post-rewrite re-checks them
        old = (state / "orig-head").read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return
    if old and git.rev_parse(repo.worktree, old):
        after_history_change(repo, old, "rebase", defer=True)


def _pick_source(repo: RepoPaths) -> str | None:
    """The commit a cherry-pick copied: git keeps CHERRY_PICK_HEAD while post-commit runs."""
    from gitmem import git

    return git.rev_parse(repo.worktree, "CHERRY_PICK_HEAD")


def _picked(repo: RepoPaths) -> str | None:
    """"cherry-pick" or "revert" when HEAD's last move is a commit git's sequencer made without
    running pre-commit (its reflog message; a conflict resolved by `git commit` runs pre-commit
    and reads `commit (cherry-pick): …`)."""

    subject = _reflog_subject(repo)
    return next((what for what in ("cherry-pick", "revert") if subject.startswith(what + ": ")), None)


def _reflog_subject(repo: RepoPaths) -> str:
    from gitmem import git

    return git.git_text(repo.worktree, "reflog", "-1", "--format=%gs", "HEAD", check=False)


def _after_partial_commit(repo: RepoPaths, paths: list[str], sets: Mapping[str, object]) -> None:
    from gitmem import git
    from gitmem.store.commit import onto_theirs, warn_unmerged

    committed = git.tree_blob_ids(repo.worktree, "HEAD", paths)
    present = [p for p in paths if p in committed and (repo.worktree / p).is_file()]
    if not present:
        return
    parent = git.rev_parse(repo.worktree, "HEAD~1")
    before = git.tree_blob_ids(repo.worktree, parent, present) if parent else {}
    staged = git.index_blob_ids_of(repo, present)  # the main index, which git left as it was
    # A version the developer staged of their own (neither the one the commit was made from nor
    # the committed one) stays staged, whatever the work tree has: gitmem's change goes onto it,
    # or a warning names it. (Only the commit's temporary index had the committed version.)
    theirs = [p for p in present if p in staged and staged[p] not in (before.get(p), committed[p])]
    rest = [p for p in present if p not in theirs]
    in_tree = git.git_text(repo.worktree, "hash-object", "--", *rest).split() if rest else []
    in_step = [p for p, blob in zip(rest, in_tree, strict=False) if committed[p] == blob]
    # The developer's unstaged version (pre-commit put gitmem's change onto it) with nothing of
    # theirs staged: the index takes the commit's version.
    in_step += [p for p in rest if p not in in_step and isinstance(sets.get(p), dict)
                and staged.get(p) == before.get(p)]
    carried = [p for p in theirs if isinstance(sets.get(p), dict)]
    texts = git.read_blobs(repo.worktree, [*(before[p] for p in carried if p in before),
                                           *(staged[p] for p in carried)])
    lines = []
    for path in carried:
        base = texts.get(before.get(path, ""), b"").decode("utf-8", "replace")
        change = sets[path]
        assert isinstance(change, dict)
        mine = texts.get(staged[path], b"").decode("utf-8", "replace")
        merged = onto_theirs(base, mine, change) if base else None
        if merged is None:
            warn_unmerged(path, "staged", change)
            continue
        blob = git.git(repo.worktree, "hash-object", "-w", "--stdin", input=merged.encode("utf-8")).decode().strip()
        lines.append(f"100644 {blob}\t{path}\n")
    if lines:
        env = {**git.env_without_index(), "GIT_INDEX_FILE": os.fspath(repo.git_dir / "index")}
        git.run(repo.worktree, "update-index", "--index-info", input="".join(lines).encode("utf-8"), env=env)
    if in_step:
        git.git(repo.worktree, "reset", "-q", "HEAD", "--", *in_step)


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
    elif any(word in reason for word in commit.RETRY_WHILE):
        commit.retry_in_background(repo)


def after_history_change(repo: RepoPaths, base: str | None, what: str, finishing: Sequence[str] = (),
                         rewritten: Sequence[str] = (), brought_from: str | None = None,
                         defer: bool = False) -> None:
    """post-merge / post-rewrite (and post-commit after a cherry-pick or revert, post-applypatch):
    check anchors between `base` and the new HEAD; `rewritten`: the commits a rewrite made
    (post-rewrite's new ids), whose retirements are undone where they still have the declaration;
    `brought_from`: where the entries the change brought in were checked against their code (the
    commit a cherry-pick copied; "" where that is not here, a patch's: checked where they land);
    `defer`: nothing is committed now, the change waits pending for the background retry."""
    from dataclasses import replace

    from gitmem import git
    from gitmem.githooks.recheck import Snapshot, recheck
    from gitmem.store import index

    # Restorations only where this repository resolved history, a merge commit made here or a
    # pick (asked before pending entries are committed on top): history taken as it is (a
    # fast-forward, to a merge commit made elsewhere too; a rebase onto it) keeps its
    # retirements, as its authors have them, and a revert is the developer's own word.
    resolved = what == "cherry-pick" or (what == "merge" and "fast-forward" not in _reflog_subject(repo).lower()
                                         and len(git.git_text(repo.worktree, "rev-list", "--parents", "-n", "1",
                                                              "HEAD", check=False).split()) > 2)
    if not defer:
        commit_pending(repo, finishing)
    head = git.rev_parse(repo.worktree, "HEAD")
    base = base and git.rev_parse(repo.worktree, base)
    if not head or ((not base or base == head) and not rewritten):
        index.current(repo)
        return
    before: dict[str, Entry] = {}
    outcomes: list[Outcome] = []
    store_changed = False
    if base and base != head:
        entries = _entries(repo)
        before.update((e.id, e) for e in entries)
        changes = git.changes_between(repo.worktree, base, head)
        store_changed = any(c.path.startswith(".gitmem/") for c in changes)
        then, now = Snapshot(repo, base), Snapshot(repo, head)
        checked = [(base, o) for o in recheck(repo, entries, changes, then, now)]
        checked += _brought_in(repo, base, head, entries, changes, {o.entry.id for _, o in checked}, rewritten,
                               brought_from, what)
        # The commit that removed a retired entry's subject is knowable here: the last one
        # between the side it was checked from and head that touched the anchored file.
        for side, outcome in checked:
            if outcome.action == "retired" and outcome.entry.anchor and outcome.entry.revocation:
                sha = git.git_text(repo.worktree, "log", "-1", "--format=%H", f"{side}..{head}",
                                   "--", outcome.entry.anchor.path, check=False) or head
                entry = replace(outcome.entry, revocation=replace(outcome.entry.revocation, commit=sha))
                outcome = replace(outcome, entry=entry)
            outcomes.append(outcome)
        for outcome, was in _retirements_not_holding(repo, changes, then, now, entries,
                                                     {o.entry.id for o in outcomes}) if resolved else []:
            outcomes.append(outcome)
            before[outcome.entry.id] = was
    if rewritten:
        done = {o.entry.id for o in outcomes}
        for outcome, was in _restorations(repo, rewritten, head):
            if outcome.entry.id not in done:
                outcomes.append(outcome)
                before[outcome.entry.id] = was
    if outcomes:
        _commit_outcomes(repo, outcomes, before, head, what, finishing, defer)
    elif store_changed and what == "merge":
        _commit_regenerated(repo, what, finishing)
    index.current(repo)
    if outcomes or (base and base != head):  # an amend that changed no entry leaves all as it was
        _refresh_delivery(repo)


def _brought_in(repo: RepoPaths, base: str, head: str, entries: Sequence[Entry], changes: Sequence[Change],
                done: set[str], rewritten: Sequence[str], brought_from: str | None,
                what: str) -> list[tuple[str, Outcome]]:
    """Entries that came from another line of history were checked only against that side's code:
    a merge's other parents (an octopus may have fast-forwarded to its first), the upstream a
    rebase replayed local commits onto (`git pull --rebase`), or the commit a cherry-pick copied.
    Each entry the change brought in is re-checked across what changed from its side to `head`
    (the side that stayed may have removed or moved its declaration); one a patch brought in
    (`git am`, or a pick whose commit is not known), against the code it landed on."""
    from gitmem import git
    from gitmem.githooks.recheck import Snapshot, landed, recheck

    parents = git.git_text(repo.worktree, "rev-list", "--parents", "-n", "1", head, check=False).split()[1:]
    if brought_from:
        sides = [brought_from]
    elif len(parents) >= 2:
        sides = [p for p in parents if p != base]
    elif rewritten:
        onto = git.rev_parse(repo.worktree, f"{rewritten[0]}~1")
        sides = [onto] if onto and onto != base else []
    else:
        sides = []
    arrived = _entry_ids(changes, ("A", "M", "R", "C"))
    found: list[tuple[str, Outcome]] = []
    for side in sides:
        theirs = [e for e in entries if e.id in arrived and e.id not in done and e.active and e.anchor]
        if not theirs:
            break
        after_side = git.changes_between(repo.worktree, side, head)
        for outcome in recheck(repo, theirs, after_side, Snapshot(repo, side), Snapshot(repo, head)):
            found.append((side, outcome))
            done.add(outcome.entry.id)
    if brought_from == "":
        theirs = [e for e in entries if e.id in arrived and e.id not in done]
        found += [(base, outcome) for outcome in landed(theirs, Snapshot(repo, head), f"git {what}")]
    return found


def _commit_outcomes(repo: RepoPaths, outcomes: Sequence[Outcome], before: Mapping[str, Entry], head: str,
                     what: str, finishing: Sequence[str], defer: bool = False) -> None:
    """The entry changes as one follow-up commit on `head`, or pending with the premise they were
    computed from (the commit, the blobs of the files the re-check read, each entry's state)."""
    from gitmem import git
    from gitmem.store.commit import Change, FileChange, record
    from gitmem.store.yaml_files import Store, overlay_text

    store = Store(repo)
    paths = [store.relpath_of(o.entry.id) for o in outcomes]
    committed = git.tree_blob_ids(repo.worktree, head, paths)
    contents = git.read_blobs(repo.worktree, committed.values())
    read: set[str] = set()
    files = []
    for outcome, path in zip(outcomes, paths, strict=True):
        blob = committed.get(path)
        current = contents.get(blob, b"").decode("utf-8", "replace") if blob else None
        was = before.get(outcome.entry.id, outcome.entry)
        sets = _changes(was, outcome.entry)
        if outcome.action == "restored":  # fields go away: render, so no `revocation: null` is left
            text = store.render_onto(current, outcome.entry)
        else:
            text = overlay_text(current, sets) if current else store.render_onto(None, outcome.entry)
        expect = {"status": was.status,
                  "anchor": {"path": was.anchor.path, "symbol": was.anchor.symbol} if was.anchor else None}
        files.append(FileChange(path, text, blob, sets, expect=expect))
        read.update(a.path for a in (was.anchor, outcome.entry.anchor) if a)
        print(f"gitmem: {outcome.action} {outcome.entry.id} ({outcome.detail})", file=sys.stderr)
    blobs = git.tree_blob_ids(repo.worktree, head, sorted(read))
    holds: dict[str, str | None] = {p: blobs.get(p) for p in sorted(read)}
    trailers = [("Gitmem-Entry", o.entry.id) for o in outcomes]
    retired = sum(o.action == "retired" for o in outcomes)
    restored = sum(o.action == "restored" for o in outcomes)
    moved = len(outcomes) - retired - restored
    subject = f"gitmem: re-check anchors after {what}: {retired} retired, {moved} re-anchored"
    if restored:
        subject += f", {restored} restored"
    change = Change(subject, files, trailers, [o.entry.to_dict() for o in outcomes], computed_for=head, holds=holds)
    if defer:
        from gitmem.store import pending
        from gitmem.store.commit import retry_in_background

        pending.write(repo, change.to_json())
        print("gitmem: pending, committed once the git command that made this commit is over", file=sys.stderr)
        retry_in_background(repo)
        return
    result = record(repo, change, finishing=finishing, quiet=0.0, wait=0.3)
    print(f"gitmem: {result.note}", file=sys.stderr)
    if result.pending:
        from gitmem.store.commit import retry_in_background

        retry_in_background(repo)




def _commit_regenerated(repo: RepoPaths, what: str, finishing: Sequence[str]) -> None:
    """A merge that brought entries in but changed no anchor: the files generated from the store
    (AGENTS.md's and GEMINI.md's sections, Cursor's and Copilot's rules), which the merge driver
    merged line by line, rendered afresh in a commit of gitmem's, as any memory change carries them.
    Left in the work tree instead, they would stay out of every later commit as the developer's."""
    from gitmem.store.commit import Change, record, retry_in_background

    result = record(repo, Change(f"gitmem: regenerate agent files after {what}", []), finishing=finishing,
                    quiet=0.0, wait=0.3)
    if result.committed:
        print(f"gitmem: {result.note}", file=sys.stderr)
    elif result.pending:
        retry_in_background(repo)


def _restorations(repo: RepoPaths, rewritten: Sequence[str], head: str) -> list[tuple[Outcome, Entry]]:
    """Retirements made by a rewritten commit (an amend, a squash) whose tree, and HEAD's, still
    has the declaration: the entry restored as it was before (with the entry as HEAD has it)."""
    from dataclasses import replace

    from gitmem import git
    from gitmem.code.anchors import find
    from gitmem.code.grammar import language_for_path
    from gitmem.code.resolve import anchor_of
    from gitmem.githooks.recheck import Outcome, Snapshot
    from gitmem.store.entry import RETIRED_NOTE

    changed_by: dict[str, list[str]] = {}  # a rewritten commit -> the files it changed (asked once)

    def moved_in(new: str, parent: str, in_new: Snapshot, anchor: Anchor) -> Anchor | None:
        """Where the one declaration with the anchor's body is, in a file the rewritten commit
        `new` changed, at that commit (`in_new`) and at HEAD alike."""
        if anchor.symbol is None or not anchor.fingerprint:
            return None
        if new not in changed_by:
            changed_by[new] = git.git_text(repo.worktree, "diff", "--name-only", "--no-renames", parent, new,
                                           check=False).split()
        places = [(p, d) for p in changed_by[new] if not p.startswith(".gitmem/") for d in at_head.declarations(p)
                  if d.fingerprint == anchor.fingerprint]
        if len(places) != 1:
            return None
        path, decl = places[0]
        if find(in_new.declarations(path), decl.name) is None:
            return None
        return anchor_of(path, language_for_path(path), decl)

    found: list[tuple[Outcome, Entry]] = []
    seen: set[str] = set()
    at_head = Snapshot(repo, head)
    # The rewritten commits that change entry files, with those files (one git call for them all).
    revs = "".join(f"{c}\n" for c in dict.fromkeys(rewritten)).encode()
    log = git.git(repo.worktree, "log", "--no-walk=unsorted", "--no-renames", "--format=%x00%H", "--name-only",
                  "--stdin", "--", ".gitmem/entries/", input=revs, check=False).decode("utf-8", "replace")
    touching = {}
    for record in log.split("\0")[1:]:
        sha, _, names = record.partition("\n")
        touching[sha.strip()] = [p for p in names.split() if p.endswith(".yaml")]
    for new, paths in touching.items():
        parent = git.rev_parse(repo.worktree, f"{new}~1")
        if not paths or not parent or (
                new != head and git.run(repo.worktree, "merge-base", "--is-ancestor", new, head).returncode):
            continue
        was, then, now = (_entries_at(repo, rev, paths) for rev in (parent, new, head))
        in_new = Snapshot(repo, new)
        for path in paths:
            old, retired, current = was.get(path), then.get(path), now.get(path)
            if old is None or retired is None or current is None or current.id in seen:
                continue
            anchor = old.anchor
            if (not old.active or retired.status != "revoked" or anchor is None or retired.anchor != anchor
                    or retired.revocation is None or RETIRED_NOTE.format(anchor=anchor) not in retired.revocation.reason
                    or current.status != "revoked" or current.revocation != retired.revocation):
                continue
            restored = replace(current, status=old.status, revocation=old.revocation)
            if _resolves(in_new, anchor) and _resolves(at_head, anchor):
                found.append((Outcome(restored, "restored", f"{anchor} is still there"), current))
            elif (target := moved_in(new, parent, in_new, anchor)) is not None:
                # the amend or fixup completed a move the first commit began (deleted here, added there)
                found.append((Outcome(restored.reanchored(target, "same body found where the rewritten commit "
                                                          "moved it"), "restored", f"{anchor} → {target}"), current))
            else:
                continue
            seen.add(current.id)
    return found


def _entries_at(repo: RepoPaths, rev: str, paths: list[str]) -> dict[str, Entry]:
    """The entries of `paths` as `rev` has them (a file that does not parse: left out)."""
    from gitmem import git
    from gitmem.store.yaml_files import parse_entry_text

    blobs = git.tree_blob_ids(repo.worktree, rev, paths)
    texts = git.read_blobs(repo.worktree, blobs.values())
    out = {}
    for path, blob in blobs.items():
        try:
            out[path] = parse_entry_text(texts.get(blob, b"").decode("utf-8"), path)
        except Exception:
            continue
    return out


def _resolves(snap: Snapshot, anchor: Anchor) -> bool:
    from gitmem.code.anchors import find

    if anchor.symbol is None:
        return bool(snap.exists(anchor.path))
    return find(snap.declarations(anchor.path), anchor.symbol) is not None


def _kept_as_it_was(then: Snapshot, now: Snapshot, anchor: Anchor) -> bool:
    """Whether `now` has the anchored declaration exactly as `then` had it (the namesake of the
    anchor's body where several share its name): not merely a declaration of that name, which
    may be another function written since, or the overload that stayed."""
    if anchor.symbol is None:
        return bool(then.exists(anchor.path) and now.exists(anchor.path))
    namesakes = [d for d in then.declarations(anchor.path) if d.name == anchor.symbol]
    kept = next((d for d in namesakes if d.fingerprint == anchor.fingerprint), namesakes[0] if namesakes else None)
    return kept is not None and any(d.name == anchor.symbol and d.fingerprint == kept.fingerprint
                                    for d in now.declarations(anchor.path))


def _retirements_not_holding(repo: RepoPaths, changes: Sequence[Change], then: Snapshot, now: Snapshot,
                             entries: Sequence[Entry], done: set[str]) -> list[tuple[Outcome, Entry]]:
    """Entries this change brings in retired by gitmem (active at `then`, a commit, retired with
    gitmem's own note in `entries`, the change's result) whose declaration `now` still has as
    `then` had it: history the developer did not keep (the commit that removed it reset away and
    its entry file staged again, a merge or pick whose conflict was resolved keeping the
    declaration). Each restored as `then` had it, with the entry as it now is. To retire such an
    entry by hand: `gitmem revoke`."""
    from dataclasses import replace

    from gitmem.githooks.recheck import Outcome
    from gitmem.githooks.review import ENTRIES_PREFIX
    from gitmem.store.entry import RETIRED_NOTE

    changed = sorted(_entry_ids(changes, ("M",)) - done)
    current = {e.id: e for e in entries}
    was = _entries_at(repo, str(then.rev), [f"{ENTRIES_PREFIX}{i}.yaml" for i in changed]) if changed else {}
    found = []
    for entry_id in changed:
        old, retired = was.get(f"{ENTRIES_PREFIX}{entry_id}.yaml"), current.get(entry_id)
        anchor = old.anchor if old is not None else None
        if (old is None or retired is None or anchor is None or not old.active or retired.status != "revoked"
                or retired.anchor != anchor or retired.revocation is None
                or RETIRED_NOTE.format(anchor=anchor) not in retired.revocation.reason
                or not _kept_as_it_was(then, now, anchor)):
            continue
        restored = replace(retired, status=old.status, revocation=old.revocation)
        found.append((Outcome(restored, "restored", f"{anchor} is still there as it was; `gitmem revoke "
                                                    f"{entry_id}` retires it for good"), retired))
    return found


def _warn_if_gitmems_commit_was_amended(repo: RepoPaths, pairs: Sequence[Sequence[str]]) -> None:
    """gitmem commits on top of the developer's (an entry recorded while their editor was open is
    committed right after theirs): an amend meant for their commit then rewrites gitmem's. Said,
    with the way to fold both into theirs; gitmem rewrites no history of its own accord."""
    from gitmem import git
    from gitmem.store.commit import AUTHOR_NAME

    for old, new in ((p[0], p[1]) for p in pairs):
        author, _, subject = git.git_text(repo.worktree, "log", "-1", "--format=%an%x00%s", old,
                                          check=False).partition("\0")
        new_subject = git.git_text(repo.worktree, "log", "-1", "--format=%s", new, check=False)
        if author == AUTHOR_NAME and subject.startswith("gitmem:") and not new_subject.startswith("gitmem:"):
            print(f"gitmem: WARNING: this amend rewrote gitmem's own commit {old[:10]} ({subject!r}), which came "
                  "after yours, not your commit: your change is in it now, under your message. To make it one "
                  "commit of yours holding both: git reset --soft HEAD~1 && git commit --amend -C HEAD@{1}",
                  file=sys.stderr)


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
        if hook in ("post-commit", "post-merge", "post-rewrite", "post-checkout", "post-applypatch"):
            # A teammate's entries may have come in, or entries written by hand been committed: the
            # gate's job starts first, so what this hook commits for agents without hooks leaves out
            # what it has not judged (gitmem.delivery.agents_md.withheld); it commits them once it has.
            from gitmem.judge.store_gate import judge_in_background

            judge_in_background(repo)
        if hook == "pre-commit":
            pre_commit(repo)
        elif hook == "post-commit":
            marker = os.path.join(_local(repo), ENTRIES_COMMITTED)
            concluded_pick = None
            with contextlib.suppress(OSError, UnicodeDecodeError), open(marker, encoding="ascii") as file:
                concluded_pick = file.read(64).strip() or None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(marker)
            series = os.path.join(_local(repo), IN_SERIES)
            in_series = fastjson.read_file(series)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(series)
            post_commit(repo, concluded_pick, in_series if isinstance(in_series, dict) else None)
        elif hook == "post-merge":
            if argv[1:2] != ["1"]:  # a squash merge commits nothing; pre-commit will see it
                after_history_change(repo, "ORIG_HEAD", "merge", finishing=("merge",))
            else:
                commit_pending(repo, ("merge",))
        elif hook == "post-rewrite":
            lines = [line.split() for line in sys.stdin.read().splitlines() if len(line.split()) >= 2]
            rewritten = [line[1] for line in lines]
            if argv[1:2] == ["rebase"]:
                after_history_change(repo, "ORIG_HEAD", "rebase", finishing=("rebase", "am"), rewritten=rewritten)
            else:  # an amend went through pre-commit, but against the commit it replaces
                _warn_if_gitmems_commit_was_amended(repo, lines)
                after_history_change(repo, None, "amend", rewritten=rewritten)
        elif hook == "post-applypatch":
            # `git am` runs no pre-commit; `git rebase --apply` runs this too, and post-rewrite after it
            if not (repo.git_dir / "rebase-apply" / "rebasing").exists():
                post_applypatch(repo)
        elif hook == "post-checkout":
            commit_pending(repo)
            _rebase_with_nothing_to_replay(repo)
    except Exception:
        faillog.record(repo.state if repo else None, f"git hook {hook}")
        print(f"gitmem: {hook} check failed (logged under .git/gitmem/errors.log); commit unaffected",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

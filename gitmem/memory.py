"""The library face of gitmem: every CLI command is one call on `Memory`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from gitmem import git
from gitmem.base.paths import ENTRIES_DIR, STORE_DIR, RepoPaths, find_repo
from gitmem.errors import EntryError, GitmemError, UnknownEntry
from gitmem.store import index, pending
from gitmem.store.commit import Change, CommitResult, FileChange, record, subject_for
from gitmem.store.entry import KINDS, SOURCES, Anchor, Entry, Trigger, date_problem, matching_ids, new_id, now_iso
from gitmem.store.yaml_files import (
    DEFAULT_CONFIG,
    LoadResult,
    Store,
    check_anchor_inside,
    check_config,
    parse_entry_text,
)

# Environment variables agents set in the shells they run commands in.
AGENT_SHELLS = (("CLAUDECODE", "Claude Code"), ("GEMINI_CLI", "Gemini CLI"),
                ("CODEX_SANDBOX", "Codex CLI"), ("CODEX_SANDBOX_NETWORK_DISABLED", "Codex CLI"))



def refuse_under_agent(command: str) -> None:
    """`gitmem add` or `revoke` (the command or the library) from an agent's shell would pass the
    agent's words off as the developer's."""
    for variable, agent in AGENT_SHELLS:
        if variable in os.environ:  # set, if only to nothing (`CLAUDECODE= gitmem add …` is still the agent)
            raise GitmemError(
                f"refusing `gitmem {command}` from {agent}'s shell ({variable} is set): memory holds only "
                "what the developer said, and the agent stays read-only. Run it in your own terminal.")


@dataclass(frozen=True, slots=True)
class Recorded:
    entry: Entry
    commit: CommitResult


class Memory:
    def __init__(self, repo: RepoPaths | None = None) -> None:
        self.repo = repo or find_repo()
        self.store = Store(self.repo)

    # -- set-up ---------------------------------------------------------------------------
    def init(self, agents: Sequence[str] = ()) -> list[str]:
        """Set up (idempotently); `agents`: which agents the repository serves from now on
        (kept in .gitmem/config.yaml), else the ones it names."""
        from gitmem.githooks import install as git_hooks

        done: list[str] = []
        if problem := self.sparse_problem():  # a new config there would hide the committed one
            raise GitmemError(problem)
        check_config(self.repo)
        git_hooks.hooks_folder(self.repo)  # a hooks folder gitmem may not use is refused before anything is written
        self.repo.entries.mkdir(parents=True, exist_ok=True)
        if not self.repo.config.exists():
            self.repo.config.write_text(DEFAULT_CONFIG, encoding="utf-8")
            done.append("created .gitmem/config.yaml")
        done += git_hooks.install(self.repo)
        done += self._install_agents(agents)
        index.rebuild(self.repo)
        self._delivery_changed()
        from gitmem.base import faillog
        from gitmem.base.files import is_locked
        from gitmem.base.signature import GATE_LOCK
        from gitmem.judge.store_gate import judge_in_background

        try:  # a clone's entries: none passed this machine's gate (compiling them may have started the job)
            if judge_in_background(self.repo, retry=True) or is_locked(self.repo.worktree_state / GATE_LOCK):
                done.append("judging the stored entries with the gate in the background")
        except OSError:
            faillog.record(self.repo.state, "gitmem init: starting the store's gate")
        return done

    def _install_agents(self, agents: Sequence[str] = ()) -> list[str]:
        try:
            from gitmem.delivery.agents import channels
        except ImportError:  # delivery not built into this installation
            return []
        previous = channels.chosen(self.repo)
        done = channels.choose(self.repo, agents) if agents else []
        return done + channels.install(self.repo, channels.chosen(self.repo), previous)

    def uninstall(self) -> list[str]:
        from gitmem.githooks import install as git_hooks

        done = git_hooks.uninstall(self.repo)
        try:
            from gitmem.delivery.agents import channels
        except ImportError:
            return done
        return done + channels.uninstall(self.repo)  # every agent's channels, Claude Code's included

    def require_store(self) -> None:
        """GitmemError unless `gitmem init` made a store here whose entries folder is a folder: an
        entry committed where there is none would be deleted by the developer's next `commit -a`."""
        if problem := self.sparse_problem():
            raise GitmemError(problem)
        if not self.repo.store.is_dir():  # also a store committed into a repository that never chose gitmem
            raise GitmemError("no .gitmem/ here: run `gitmem init` first (it sets up the hooks that keep entries true)")
        if problem := self.entries_folder_problem():
            raise GitmemError(f"{problem}, so no entry is read or recorded: move it away and run `gitmem init`")

    def entries_folder_problem(self) -> str | None:
        """Why no entry is read from the entries folder (a link, not a folder); None when it is fine."""
        return _entries_folder_problem(self.repo)

    def sparse_problem(self) -> str | None:
        """Why the store cannot be used here: a sparse checkout leaves it out of the work tree, so
        every entry would be unread and no anchor kept true. None when it is checked out."""
        if not git.left_out_by_sparse_checkout(self.repo, STORE_DIR):
            return None
        return (f"{STORE_DIR}/ is left out of this sparse checkout, so no entry is read or kept true "
                f"here: run `git sparse-checkout add {STORE_DIR}`, then `gitmem init`")

    # -- reading --------------------------------------------------------------------------
    def load(self) -> LoadResult:
        """The work tree's entries, with pending changes (not yet committed) in their place. Read
        from the compiled index, which parses only the entry files changed since it was built (a
        store of thousands took seconds to parse for every `list`)."""
        result = LoadResult()
        for name, row in sorted(index.current(self.repo).get("files", {}).items()):
            rel = f".gitmem/entries/{name}"
            error = row.get("error")
            if isinstance(error, dict):
                result.errors.append(EntryError(str(error.get("path") or rel), error.get("field"),
                                                str(error.get("message"))))
                continue
            data = row.get("entry")
            try:
                if not isinstance(data, dict):
                    raise EntryError(rel, None, "not read (run `gitmem check`)")
                entry = Entry.from_dict(data, rel)
                # checked again here: the index is rebuilt when entry files change, and a folder
                # replaced by a link out of the repository changes none of them
                check_anchor_inside(self.repo, entry, rel)
                result.entries.append(entry)
            except GitmemError as exc:  # an index written by another version: its own words
                result.errors.append(exc if isinstance(exc, EntryError) else EntryError(rel, None, str(exc)))
        never_read = "never read: an entry is a file .gitmem/entries/<id>.yaml (not .yml, not hidden, not in a folder)"
        result.errors += [EntryError(rel, None, never_read) for rel in self.store.strays()]
        if problem := self.entries_folder_problem():
            result.errors.append(EntryError(ENTRIES_DIR, None, f"{problem}: no entry is read"))
        waiting = self.pending_entries()
        if waiting:
            by_id = {e.id: e for e in result.entries}
            by_id.update(waiting)
            result.entries = sorted(by_id.values(), key=lambda e: e.id)
        return result

    def pending_entries(self) -> dict[str, Entry]:
        out: dict[str, Entry] = {}
        for data in pending.entries(self.repo):
            try:
                out[str(data["id"])] = Entry.from_dict(data, self.store.relpath_of(str(data["id"])))
            except (GitmemError, KeyError):
                continue
        return out

    def get(self, entry_id: str) -> Entry:
        return self._find(entry_id)[0]

    def _find(self, entry_id: str) -> tuple[Entry, str | None, str | None]:
        """(entry, the text it was read from, the blob id of that text where it is committed or
        staged). Looked for in HEAD, then the pending changes, the index and the work tree, so a
        rewrite starts from the committed (or staged) version, never from an unstaged edit."""
        waiting = self.pending_entries()
        ids = self._ids()
        ids.update(dict.fromkeys(waiting))
        if entry_id not in ids:
            matches = matching_ids(ids, entry_id)
            if len(matches) != 1:
                raise UnknownEntry(f"no entry {entry_id!r}" if not matches else
                                   f"{entry_id!r} is ambiguous: {', '.join(matches)}")
            entry_id = matches[0]
        rel = self.store.relpath_of(entry_id)
        if entry_id in waiting:
            return waiting[entry_id], self.store.render_onto(None, waiting[entry_id]), None
        blob = None
        if git.has_head(self.repo.worktree):
            blob = git.tree_blob_ids(self.repo.worktree, "HEAD", [rel]).get(rel)
        if blob is None:
            blob = git.index_blob_ids_of(self.repo, [rel]).get(rel)
        if blob is not None:
            data = git.read_blobs(self.repo.worktree, [blob]).get(blob, b"")
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise EntryError(rel, None, "not valid UTF-8") from None
            return parse_entry_text(text, rel), text, blob
        entry = self.store.get(entry_id)
        text = self.store.path_of(entry_id).read_text(encoding="utf-8")
        # Only in the work tree (written by hand, not staged): the change is made on this text,
        # which the work tree then takes (gitmem.store.commit: the version a change was made on).
        blob = git.git(self.repo.worktree, "hash-object", "-w", "--stdin", input=text.encode("utf-8")).decode().strip()
        return entry, text, blob

    def _ids(self) -> dict[str, None]:
        ids = {p.stem: None for p in self.store.files()}
        if git.has_head(self.repo.worktree):
            for path in git.tree_blob_ids(self.repo.worktree, "HEAD", [".gitmem/entries/"]):
                if path.endswith(".yaml"):
                    ids[path.rsplit("/", 1)[-1][:-5]] = None
        return ids

    # -- writing --------------------------------------------------------------------------
    def add(self, kind: str, body: str, *, anchor: str | Anchor | None = None, on: Sequence[str] = (),
            source: str = "user", session: str | None = None, turn: int | None = None,
            supersedes: Sequence[str] = (), expires: str | None = None, commit: bool = True) -> Recorded:
        """Record an entry the developer gives (`gitmem add`). Refused in an agent's shell
        (refuse_under_agent): code the agent runs (`python - <<EOF … Memory().add(…)`) must not record."""
        refuse_under_agent("add")
        return self.add_copied(kind, body, anchor=anchor, on=on, source=source, session=session, turn=turn,
                               supersedes=supersedes, expires=expires, commit=commit)

    def add_copied(self, kind: str, body: str, *, anchor: str | Anchor | None = None, on: Sequence[str] = (),
                   source: str = "user", session: str | None = None, turn: int | None = None,
                   supersedes: Sequence[str] = (), expires: str | None = None, commit: bool = True) -> Recorded:
        """Record words the writer copied from a turn, after its gate passed them. The writer's daemon
        starts from the agent's hooks and inherits their environment (CLAUDECODE=1), so this way in
        does not refuse an agent's shell; the read-only hook denies commands that name it."""
        from gitmem.code.resolve import resolve
        from gitmem.delivery.rules import unclosed_bracket

        self.require_store()
        check_config(self.repo)
        if kind not in KINDS:
            raise GitmemError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
        if source not in SOURCES:
            raise GitmemError(f"unknown source {source!r}; expected user or agent")
        body = utf8_text(body, "the body").strip()
        if not body:
            raise GitmemError("the body is empty")
        try:
            triggers = tuple(Trigger.parse(t) for t in on)
        except ValueError as exc:
            raise GitmemError(f"--on: {exc}") from None
        for t in on:  # `edit:` typed with nothing after it: a glob forgotten, not "every edit"
            event, colon, glob = t.partition(":")
            if colon and not glob.strip():
                raise GitmemError(f"--on: {t!r} names no glob after the colon (`{event}` alone means every {event})")
            if unclosed_bracket(glob):  # a typo: as in git, such a glob would match nothing meant
                raise GitmemError(f"--on: {t!r} opens a '[' it never closes (write [[] for a literal '[')")
        if expires is not None and not expires.strip():
            raise GitmemError("--expires: empty (leave it out for an entry that does not expire)")
        if expires and date_problem(expires):
            raise GitmemError(f"--expires: {date_problem(expires)}")
        if expires and _passed(expires):
            raise GitmemError(f"--expires: {expires} has passed: the entry would never be delivered")
        # An Anchor comes resolved (the writer built it from the declaration it matched); text is resolved here.
        resolved = resolve(self.repo.worktree, anchor) if isinstance(anchor, str) and anchor else anchor or None
        old = list({found[0].id: found for found in (self._find(i) for i in supersedes)}.values())
        for e, _, _ in old:  # a retired entry keeps the one record of why: its revocation, its successor
            if e.status != "active":
                raise GitmemError(f"--supersedes {e.id}: it is {e.status} already; only an active entry is replaced")
        entry = Entry(id=new_id(), kind=kind, body=body, source=source, anchor=resolved,
                      triggers=triggers, created_at=now_iso(), created_session=session,
                      created_turn=turn, supersedes=tuple(e.id for e, _, _ in old), expires=expires)
        files = [FileChange(self.store.relpath_of(entry.id), self.store.render_onto(None, entry), create=True)]
        changed = [entry]
        for e, text, blob in old:
            new = replace(e, status="superseded", superseded_by=entry.id)
            files.append(self._rewrite(e, new, text, blob))
            changed.append(new)
        trailers = [("Gitmem-Entry", entry.id), ("Gitmem-Source", source)]
        if session:
            trailers.append(("Gitmem-Session", f"{session}" + (f" turn {turn}" if turn is not None else "")))
        trailers += [("Gitmem-Supersedes", e.id) for e, _, _ in old]
        change = Change(subject_for("record", kind, body), files, trailers, [e.to_dict() for e in changed])
        return Recorded(entry, self._record(change, commit))

    def revoke(self, entry_id: str, reason: str, commit: bool = True) -> Recorded:
        """Retire an entry; refused in an agent's shell (refuse_under_agent): only the developer revokes."""
        refuse_under_agent("revoke")
        check_config(self.repo)
        entry, text, blob = self._find(entry_id)
        if entry.status == "revoked":
            raise GitmemError(f"{entry.id} is already revoked")
        if entry.status == "superseded":  # it keeps the one record of why: what replaced it
            raise GitmemError(f"{entry.id} is superseded already (by {entry.superseded_by}); "
                              "revoke that entry if it no longer holds")
        if not utf8_text(reason, "the reason").strip():
            raise GitmemError("a revocation needs a reason")
        # No commit is named: the revocation is a commit of its own (`gitmem log` shows it); the
        # field names the commit that removed a retired entry's subject, which a person's has none of.
        revoked = entry.revoked(reason.strip())
        trailers = [("Gitmem-Entry", entry.id), ("Gitmem-Reason", " ".join(reason.split()))]
        change = Change(subject_for("revoke", entry.kind, entry.body), [self._rewrite(entry, revoked, text, blob)],
                        trailers, [revoked.to_dict()])
        return Recorded(revoked, self._record(change, commit))

    def _rewrite(self, old: Entry, new: Entry, text: str | None, blob: str | None) -> FileChange:
        """The change of one entry file from `old` to `new`, made on `text` (its committed, staged
        or pending version), with the fields it sets so that it can be made on another version."""
        before, after = old.to_dict(), new.to_dict()
        changes = {k: v for k, v in after.items() if before.get(k) != v}
        changes.update({k: None for k in before if k not in after})
        return FileChange(self.store.relpath_of(new.id), self.store.render_onto(text, new), blob, changes)

    def _record(self, change: Change, commit: bool) -> CommitResult:
        if commit:
            result = record(self.repo, change)
        else:
            result = self._stage(change)
        joined = self._after_change()
        if not commit and joined:  # the files agents read, rendered afresh, go with the staged entry
            git.stage(self.repo.worktree, joined)
        return result

    def _stage(self, change: Change) -> CommitResult:
        """--stage-only: the files into the index (git takes its lock), then into the work tree."""
        from gitmem.store.commit import busy, stage

        reason = busy(self.repo)
        if reason and "detached" not in reason:
            raise GitmemError(f"cannot stage now: {reason}")
        stage(self.repo, change)
        return CommitResult(False, None, "staged")

    def _after_change(self) -> list[str]:
        """The compiled index and what agents are handed follow the change; never fails the
        command afterwards (the change is recorded). The generated files that may join the change
        (gitmem.delivery.upkeep.after_memory_change)."""
        from gitmem.base import faillog

        try:
            index.current(self.repo)
        except Exception:
            faillog.record(None, "refreshing the compiled index")
        return self._delivery_changed()

    def flush_pending(self) -> str | None:
        """Commit changes kept pending while the repository was busy; why some still wait, or None."""
        from gitmem.store.commit import flush_quietly, unsettled

        if not unsettled(self.repo):
            return None
        reason = flush_quietly(self.repo)
        self._after_change()
        return reason

    def _delivery_changed(self) -> list[str]:
        """Keep what agents are handed current: AGENTS.md's managed section, declaration ranges."""
        from gitmem.delivery.upkeep import after_memory_change

        return after_memory_change(self.repo)

    # -- checks and review ----------------------------------------------------------------
    def check_rev(self, rev: str) -> list[tuple[Entry, str]]:
        """Active entries whose anchors do not resolve at `rev` (entries as stored at `rev`)."""
        from gitmem.githooks.recheck import check_all
        from gitmem.githooks.review import entries_at

        commit = git.rev_parse(self.repo.worktree, rev)
        if commit is None and rev == "HEAD" and not git.has_head(self.repo.worktree):
            raise GitmemError("no commits yet: --rev HEAD names nothing to check")
        if commit is None:
            raise GitmemError(f"unknown revision {rev!r}")
        return check_all(self.repo, entries_at(self.repo, commit).entries, commit)

    def check_uncommitted(self) -> list[tuple[Entry, str]]:
        """Active entries of the work tree that HEAD lacks or anchors otherwise (written or edited
        by hand, not committed yet) whose anchors do not resolve in the code the next commit holds."""
        from gitmem.githooks.recheck import check_all
        from gitmem.githooks.review import entries_at

        head = git.rev_parse(self.repo.worktree, "HEAD")
        committed = {e.id: e.anchor for e in entries_at(self.repo, head).entries} if head else {}
        fresh = [e for e in self.load().entries if e.id not in committed or committed[e.id] != e.anchor]
        return check_all(self.repo, fresh, None)

    def check_staged(self) -> list[tuple[Entry, str]]:
        """What the pre-commit hook would do with the staged change, without doing it."""
        from gitmem.githooks.on_commit import staged_outcomes

        if not git.has_head(self.repo.worktree):
            return []
        return [(o.entry, f"would be {o.action}: {o.detail}") for o in staged_outcomes(self.repo)]

    def revocation_commit(self, entry: Entry) -> str | None:
        """The commit that retired an entry, when its note could not name it (pre-commit)."""
        if entry.revocation and entry.revocation.commit:
            return entry.revocation.commit
        if entry.status != "revoked":
            return None
        out = git.git_text(self.repo.worktree, "log", "-1", "--no-textconv", "--format=%H", "-S", "status: revoked",
                           "--", self.store.relpath_of(entry.id), check=False)
        return out or None

    def as_json(self, entry: Entry) -> dict[str, Any]:
        """`gitmem list --json`: the stored fields (Entry.to_dict), the anchor written `path::symbol`
        and a revocation naming the commit that retired the entry."""
        data = entry.to_dict()
        data["anchor"] = str(entry.anchor) if entry.anchor else None
        if entry.revocation:
            data["revocation"]["commit"] = self.revocation_commit(entry)
        return data


def utf8_text(text: str, what: str) -> str:
    """`text` when it is text: bytes that are not UTF-8 (a terminal in Latin-1) reach Python as
    lone surrogates, which no file or commit can hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise GitmemError(f"{what} is not valid UTF-8 (is the terminal set to another encoding?)") from None
    return text


def _entries_folder_problem(repo: RepoPaths) -> str | None:
    from gitmem.base.signature import linked_store

    if linked := linked_store(os.fspath(repo.worktree)):
        return f"{linked} is a symbolic link (entries are read from the repository's own folder)"
    if repo.entries.exists() and not repo.entries.is_dir():
        return f"{ENTRIES_DIR} is not a folder"
    return None


def _passed(expires: str) -> bool:
    """A date (YYYY-MM-DD) passes when the day is over; a time (checked by date_problem), at that moment."""
    if len(expires) == 10:
        return expires < now_iso()[:10]
    import time

    from gitmem.base.files import utc_seconds

    return (utc_seconds(expires) or 0.0) <= time.time()

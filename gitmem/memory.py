"""The library face of gitmem: every CLI command is one call on `Memory`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from gitmem import git
from gitmem.base.paths import RepoPaths, find_repo
from gitmem.errors import GitmemError
from gitmem.store import index
from gitmem.store.commit import CommitResult, commit_files, subject_for
from gitmem.store.entry import KINDS, SOURCES, Entry, Trigger, new_id, now_iso
from gitmem.store.yaml_files import DEFAULT_CONFIG, LoadResult, Store


@dataclass(frozen=True, slots=True)
class Recorded:
    entry: Entry
    commit: CommitResult


class Memory:
    def __init__(self, repo: RepoPaths | None = None) -> None:
        self.repo = repo or find_repo()
        self.store = Store(self.repo)

    # -- set-up ---------------------------------------------------------------------------
    def init(self) -> list[str]:
        from gitmem.githooks import install as git_hooks

        done: list[str] = []
        self.repo.entries.mkdir(parents=True, exist_ok=True)
        if not self.repo.config.exists():
            self.repo.config.write_text(DEFAULT_CONFIG, encoding="utf-8")
            done.append("created .gitmem/config.yaml")
        done += git_hooks.install(self.repo)
        done += self._install_agents()
        index.rebuild(self.repo)
        self._delivery_changed()
        return done

    def _install_agents(self) -> list[str]:
        try:
            from gitmem.delivery import claude_settings
        except ImportError:  # delivery not built into this installation
            return []
        return claude_settings.install(self.repo)

    def uninstall(self) -> list[str]:
        from gitmem.githooks import install as git_hooks

        done = git_hooks.uninstall(self.repo)
        try:
            from gitmem.delivery import claude_settings
        except ImportError:
            return done
        return done + claude_settings.uninstall(self.repo)

    # -- reading --------------------------------------------------------------------------
    def load(self) -> LoadResult:
        return self.store.load()

    def get(self, entry_id: str) -> Entry:
        return self.store.get(entry_id)

    # -- writing --------------------------------------------------------------------------
    def add(self, kind: str, body: str, *, anchor: str | None = None, on: Sequence[str] = (),
            source: str = "user", session: str | None = None, turn: int | None = None,
            supersedes: Sequence[str] = (), expires: str | None = None, commit: bool = True) -> Recorded:
        from gitmem.githooks.recheck import resolve_in_worktree

        if kind not in KINDS:
            raise GitmemError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
        if source not in SOURCES:
            raise GitmemError(f"unknown source {source!r}; expected user or agent")
        body = body.strip()
        if not body:
            raise GitmemError("the body is empty")
        try:
            triggers = tuple(Trigger.parse(t) for t in on)
        except ValueError as exc:
            raise GitmemError(f"--on: {exc}") from None
        resolved = resolve_in_worktree(self.repo, anchor) if anchor else None
        old = [self.get(i) for i in supersedes]
        entry = Entry(id=new_id(), kind=kind, body=body, source=source, anchor=resolved,
                      triggers=triggers, created_at=now_iso(), created_session=session,
                      created_turn=turn, supersedes=tuple(e.id for e in old), expires=expires)
        changed = [entry] + [replace(e, status="superseded", superseded_by=entry.id) for e in old]
        self.store.write_all(changed)
        trailers = [("Gitmem-Entry", entry.id), ("Gitmem-Source", source)]
        if session:
            trailers.append(("Gitmem-Session", f"{session}" + (f" turn {turn}" if turn is not None else "")))
        trailers += [("Gitmem-Supersedes", e.id) for e in old]
        result = self._commit(changed, subject_for("record", kind, body), trailers, commit)
        return Recorded(entry, result)

    def revoke(self, entry_id: str, reason: str, commit: bool = True) -> Recorded:
        entry = self.get(entry_id)
        if entry.status == "revoked":
            raise GitmemError(f"{entry.id} is already revoked")
        if not reason.strip():
            raise GitmemError("a revocation needs a reason")
        head = git.rev_parse(self.repo.worktree, "HEAD")
        revoked = entry.revoked(reason.strip(), head)
        self.store.write(revoked)
        trailers = [("Gitmem-Entry", entry.id), ("Gitmem-Reason", " ".join(reason.split()))]
        return Recorded(revoked, self._commit([revoked], subject_for("revoke", entry.kind, entry.body),
                                              trailers, commit))

    def _commit(self, entries: Sequence[Entry], subject: str, trailers: Sequence[tuple[str, str]],
                commit: bool) -> CommitResult:
        paths = [self.store.relpath_of(e.id) for e in entries]
        paths += self._delivery_changed()  # AGENTS.md's section joins the commit when it can
        if commit:
            result = commit_files(self.repo, paths, subject, trailers)
        else:
            git.stage(self.repo.worktree, paths)
            result = CommitResult(False, None, "staged")
        index.current(self.repo)
        return result

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
        if commit is None:
            raise GitmemError(f"unknown revision {rev!r}")
        return check_all(self.repo, entries_at(self.repo, commit).entries, commit)

    def check_staged(self) -> list[tuple[Entry, str]]:
        """What the pre-commit hook would do with the staged change, without doing it."""
        from gitmem.githooks.recheck import Snapshot, recheck

        if not git.has_head(self.repo.worktree):
            return []
        outcomes = recheck(self.repo, self.load().entries, git.staged_changes(self.repo.worktree),
                           Snapshot(self.repo, "HEAD"), Snapshot(self.repo, None))
        return [(o.entry, f"would be {o.action}: {o.detail}") for o in outcomes]

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
        data: dict[str, Any] = {
            "id": entry.id, "kind": entry.kind, "body": entry.body, "status": entry.status,
            "source": entry.source, "anchor": str(entry.anchor) if entry.anchor else None,
            "triggers": [str(t) for t in entry.triggers], "created": entry.created_at,
            "supersedes": list(entry.supersedes), "superseded_by": entry.superseded_by,
            "expires": entry.expires,
        }
        if entry.revocation:
            data["revocation"] = {"reason": entry.revocation.reason, "time": entry.revocation.at,
                                  "commit": self.revocation_commit(entry)}
        return data

"""The library face of delivery for commands: preview, status, stats, AGENTS.md.

The hook (claude_hook.py) decides and records deliveries on its own fast path; this module
answers questions about them for `gitmem render`, `gitmem status` and `gitmem stats`, and may
import anything.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.base.files import utc_date
from gitmem.base.paths import RepoPaths, find_repo
from gitmem.delivery import compiled, shown
from gitmem.delivery import log as delivery_log
from gitmem.delivery import rules as delivery_rules
from gitmem.errors import GitmemError

if TYPE_CHECKING:
    from typing import Any, TypedDict

    from gitmem.delivery.agents.channels import AgentReport
    from gitmem.delivery.claude_settings import HookStatus
    from gitmem.delivery.compiled import DeliveryData
    from gitmem.delivery.log import EntryStats

    class StatsRow(EntryStats):
        kind: str  # "?" for an entry no longer in the store
        status: str  # active, retired or deleted
        body: str

    class DeliveryStatus(TypedDict):
        session_start: list[str]
        left_out: list[str]
        chars: int
        max_entries: int
        max_chars: int
        active: int
        expired: list[str]
        retractions: list[str]
        retraction_days: int
        stale_ranges: list[str]
        hooks: HookStatus
        invalid_entries: list[dict[str, Any]]
        hook_errors: int
        agents: list[AgentReport]  # each agent the repository serves: its files' states, its hooks
        rules: DeliveryData


def after_memory_change(repo: RepoPaths) -> list[str]:
    """Bring what agents are handed up to date after entries changed; never raises.

    Refreshes AGENTS.md's managed section (when there is one), the files generated for the
    repository's other agents (gitmem.delivery.agents.channels) and the declaration ranges.
    Returns the files that changed and may join the commit that carries the entry changes (the
    pre-commit hook stages them): AGENTS.md when its section changed in a tracked file that had
    no other unstaged change; a generated file HEAD holds and the work tree had unchanged, or a
    new one of an agent whose other generated files HEAD holds (channels.regenerate).
    """
    from gitmem import git
    from gitmem.base import faillog
    from gitmem.code import decl_ranges
    from gitmem.delivery import agents_md

    joined: list[str] = []
    try:
        if agents_md.is_managed(repo):
            name = agents_md.FILE_NAME
            tracked = bool(git.git_text(repo.worktree, "ls-files", "--", name, check=False))
            clean = tracked and not git.git_text(repo.worktree, "diff", "--name-only", "--", name, check=False)
            before = (repo.worktree / name).read_text(encoding="utf-8")
            agents_md.write(repo)
            if clean and (repo.worktree / name).read_text(encoding="utf-8") != before:
                joined.append(name)
        decl_ranges.refresh(repo)
    except Exception:  # the entries are recorded; a stale copy only costs precision until next time
        faillog.record(repo.state, "delivery upkeep")
    try:
        from gitmem.delivery.agents import channels

        joined += channels.regenerate(repo)[1]
    except Exception:  # the entries are recorded; a stale copy only costs precision until next time
        faillog.record(repo.state, "delivery upkeep")
    return joined


class Delivery:
    def __init__(self, repo: RepoPaths | None = None) -> None:
        self.repo = repo or find_repo()
        if not self.repo.store.is_dir():
            raise GitmemError("no .gitmem/ here; run `gitmem init` first")
        self.state = str(self.repo.state)

    def rules(self) -> DeliveryData:
        return compiled.load(str(self.repo.worktree), str(self.repo.git_dir), str(self.repo.common_dir))

    # -- what would be delivered --------------------------------------------------------------
    def preview(self, event: str, *, path: str | None = None, session: str | None = None,
                text: str = "", lines: tuple[int, int] | None = None,
                source: str = "startup", bases: tuple[str, ...] = ()) -> delivery_rules.Plan:
        """What the hook would deliver for this moment (nothing is recorded).

        With `session`, what that session already has is not repeated. `lines` makes an edit
        name a region (1-based, inclusive), so symbol anchors narrow as for Claude's Edit tool.
        `bases`: the absolute folders a command's words are read from (delivery_rules.Cue).
        """
        if event not in delivery_rules.EVENTS:
            raise GitmemError(f"unknown event {event!r}; expected one of {', '.join(delivery_rules.EVENTS)}")
        rel = None
        if path is not None:
            # a path not there (yet) is read from the repository's root
            rel = self.repo.relative(path) if Path(path).is_absolute() or Path(path).exists() else \
                Path(os.path.normpath(path)).as_posix()
            if rel is None or rel == ".." or rel.startswith("../"):
                raise GitmemError(f"{path} is outside this repository")
        if event in ("read", "edit") and rel is None:
            raise GitmemError(f"--event {event} needs --path")
        cue = delivery_rules.Cue(event, rel, narrow=lines is not None and event == "edit", text=text,
                                 source=source if event == "session-start" else None, bases=bases)
        rules = self.rules()
        now = time.time()
        record = shown.read(self.state, session) if session else shown.empty()
        if event == "session-start" and source != "resume":
            record = shown.empty()
        elif not session:  # a moment of a session whose start offered the session-start entries
            record["known"] = delivery_rules.session_start_ids(rules, time.strftime("%Y-%m-%d", time.gmtime(now)))
        return delivery_rules.plan(rules, cue, record, now=now, worktree=str(self.repo.worktree),
                            symbol_hit=(lambda p, s: self._overlaps(p, s, lines)) if lines else None,
                            commit_paths=self._staged,
                            relevance=lambda: delivery_log.budget_ranking(self.state))

    def _overlaps(self, path: str, symbol: str, lines: tuple[int, int]) -> bool:
        from gitmem.code.anchors import declarations
        from gitmem.code.grammar import language_for_path

        language = language_for_path(path)
        file = self.repo.worktree / path
        if language is None or not file.is_file():
            return True
        found = [d for d in declarations(file.read_bytes(), language) if d.name == symbol]
        return not found or any(d.start_line <= lines[1] and lines[0] <= d.end_line for d in found)

    def _staged(self) -> set[str]:
        from gitmem import git

        out = git.git(self.repo.worktree, "diff", "--cached", "--name-only", "-z", check=False)
        return {p for p in out.decode("utf-8", "surrogateescape").split("\0") if p}

    # -- status and stats ---------------------------------------------------------------
    def status(self) -> DeliveryStatus:
        from gitmem.base import faillog
        from gitmem.code import decl_ranges
        from gitmem.delivery import claude_settings
        from gitmem.delivery.agents import channels
        from gitmem.store import index

        rules = self.rules()
        now = time.time()
        today = utc_date(now)
        relevance = delivery_log.budget_ranking(self.state, new_session=True)  # what the next new session gets
        chosen, left_out = delivery_rules.session_start_selection(rules, today, lambda: relevance)
        active = rules["active"]
        stale = [p for p in compiled.symbol_anchored_paths(rules)
                 if not decl_ranges.is_fresh(self.state, str(self.repo.worktree), p)]
        errors_log = self.repo.state / faillog.LOG_NAME
        return {
            "session_start": chosen,
            "left_out": left_out,
            "chars": sum(len(delivery_rules.entry_line(i, active[i])) for i in chosen),
            "max_entries": rules["max_entries"],
            "max_chars": rules["max_chars"],
            "active": len(active),
            "expired": sorted(i for i, e in active.items() if delivery_rules.expired(e, today)),
            "retractions": delivery_rules.recent_retractions(rules, now),
            "retraction_days": rules["retraction_days"],
            "stale_ranges": stale,
            "hooks": claude_settings.status(self.repo),
            "invalid_entries": index.errors(index.current(self.repo)),
            "hook_errors": _count_errors(errors_log),
            "agents": channels.report(self.repo),
            "rules": rules,
        }

    def stats(self) -> list[StatsRow]:
        rules = self.rules()
        rows: list[StatsRow] = []
        for row in delivery_log.stats(self.state, list(rules["active"])):
            entry = rules["active"].get(row["id"]) or rules["retired"].get(row["id"])
            rows.append({**row, "kind": entry["kind"] if entry else "?",
                         "status": "active" if row["id"] in rules["active"] else "retired" if entry else "deleted",
                         "body": " ".join(entry["body"].split()) if entry else ""})
        return rows

    def write_agents_md(self) -> str:
        from gitmem.delivery import agents_md

        return agents_md.write(self.repo)


def _count_errors(path: Path) -> int:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0
    return sum(1 for line in text.splitlines() if line.startswith("--- "))

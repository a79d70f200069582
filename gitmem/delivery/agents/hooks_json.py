"""gitmem's entries in another agent's JSON hook settings (Codex `.codex/hooks.json`, Gemini CLI
`.gemini/settings.json`): both use Claude Code's layout, `{"hooks": {EVENT: [{"matcher": ...,
"hooks": [{"type": "command", "command": ...}]}]}}`.

The command names no path of this machine: it asks git for the common git dir from the cwd the
agent runs hooks in (the repository, or a linked worktree of it) and runs the same
machine-local shim as Claude Code's hooks (`.git/gitmem/claude-hook`, gitmem.hook.claude), and
does nothing, successfully, where there is none. gitmem's entries are recognised by the shim's
name in their command: merged in idempotently, removed alone; a file gitmem created, or left
as gitmem wrote it, goes back to exactly what was there (gitmem.delivery.agents.owned).
"""

from __future__ import annotations

import json
from typing import Any, TypedDict

from gitmem.base.paths import RepoPaths
from gitmem.delivery import NotInstalled
from gitmem.delivery.agents import owned
from gitmem.delivery.claude_settings import (
    has_gitmem_hook,
    parse_settings,
    read_settings,
    with_groups,
    without_gitmem_hooks,
)

# POSIX shell: Codex runs hooks with `$SHELL -lc`, Gemini CLI through its platform shell; on native
# Windows both use PowerShell (Codex's `commandWindows` would replace the command there): it fails there.
# The event is always read whole (`cat`): Codex fails a hook whose input it cannot write, and the
# shim may be absent (a clone without `gitmem init`), its interpreter gone, or the event too large.
COMMAND = ('h="$(git rev-parse --path-format=absolute --git-common-dir 2>/dev/null)/gitmem/claude-hook"; '
           '[ -x "$h" ] && "$h" 2>/dev/null; cat >/dev/null; exit 0')

Settings = dict[str, Any]
Group = tuple[str, str | None, dict[str, Any]]  # (event, matcher, hook handler)


def with_hooks(settings: Settings, groups: list[Group]) -> Settings | None:
    """`settings` with exactly gitmem's group for each event (None when "hooks" is not an object of lists)."""
    wanted = []
    for event, matcher, handler in groups:
        group: dict[str, Any] = {"matcher": matcher} if matcher else {}
        group["hooks"] = [handler]
        wanted.append((event, group))
    return with_groups(settings, wanted)


def installed_events(repo: RepoPaths, rel: str) -> list[str]:
    settings, _ = read_settings(repo.worktree / rel)
    hooks = found if isinstance(found := settings.get("hooks"), dict) else {}
    return sorted(e for e, groups in hooks.items()
                  if isinstance(groups, list) and any(has_gitmem_hook(g) for g in groups))


class HookFileStatus(TypedDict):
    events: list[str]  # events holding exactly gitmem's group (its matcher and command)
    missing: list[str]  # events of `groups` without gitmem's hook
    altered: list[str]  # events with a hook that names the shim but is not exactly gitmem's
    problem: str | None  # why the file cannot be read


def status(repo: RepoPaths, rel: str, groups: list[Group]) -> HookFileStatus:
    """Which of gitmem's hooks `rel` holds exactly as `install` writes them. A command that merely
    names the shim (one a pull request rewrote to run something else first) is not gitmem's."""
    settings, problem = read_settings(repo.worktree / rel)
    hooks = found if isinstance(found := settings.get("hooks"), dict) else {}
    exact, missing, altered = [], [], []
    for event, matcher, handler in groups:
        current = found if isinstance(found := hooks.get(event), list) else []
        if any(_exactly(g, matcher, handler) for g in current):
            exact.append(event)
        elif any(has_gitmem_hook(g) for g in current):
            altered.append(event)
        else:
            missing.append(event)
    return {"events": exact, "missing": missing, "altered": altered, "problem": problem}


def _exactly(group: object, matcher: str | None, handler: dict[str, Any]) -> bool:
    return (isinstance(group, dict) and group.get("matcher") == matcher and isinstance(group.get("hooks"), list)
            and any(isinstance(h, dict) and h.get("type") == handler["type"] and h.get("command") == handler["command"]
                    for h in group["hooks"]))


def install(repo: RepoPaths, rel: str, groups: list[Group], what: str) -> list[str]:
    current = owned.read(repo, rel)
    settings, problem = parse_settings(current)
    if problem:
        return [NotInstalled(f"left {rel} alone: {problem}; fix it and run `gitmem init` again")]
    merged = with_hooks(settings, groups)
    if merged is None:
        return [NotInstalled(f"left {rel} alone: its \"hooks\" is not an object of lists")]
    if merged == settings and current is not None:
        return []
    owned.write(repo, rel, _dump(merged))
    return [f"added gitmem's {what} hooks to {rel}"]


def uninstall(repo: RepoPaths, rel: str, what: str) -> list[str]:
    def undo(now: bytes, before: bytes | None) -> bytes | None:
        settings, problem = parse_settings(now)
        if problem:
            return now
        cleaned = without_gitmem_hooks(settings)
        if before is not None and parse_settings(before)[0] == cleaned:
            return before  # nothing but gitmem's part changed: the original bytes
        return _dump(cleaned) if cleaned or before is not None else None

    outcome = owned.restore(repo, rel, undo)
    if outcome == "":  # not written from this machine (a teammate's commit): gitmem's part only
        current = owned.read(repo, rel)
        settings, problem = parse_settings(current)
        if current is None or problem or not installed_events(repo, rel):
            return []
        cleaned = without_gitmem_hooks(settings)
        path = repo.worktree / rel
        if cleaned:
            path.write_bytes(_dump(cleaned))
        else:
            path.unlink()
            try:
                path.parent.rmdir()
            except OSError:
                pass
    elif outcome == "left":
        return [f"left {rel} alone: it changed since gitmem wrote it"]
    return [f"removed gitmem's {what} hooks from {rel}"]


def _dump(data: Settings) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")



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

import copy
import json
from typing import Any, TypedDict

from gitmem.base.paths import RepoPaths
from gitmem.delivery.agents import owned
from gitmem.delivery.claude_settings import SHIM_MARKER

# POSIX shell: Codex runs hooks with `$SHELL -lc`, Gemini CLI through its platform shell; on native
# Windows both use PowerShell (Codex's `commandWindows` would replace the command there): it fails there.
COMMAND = ('h="$(git rev-parse --path-format=absolute --git-common-dir 2>/dev/null)/gitmem/claude-hook"; '
           '[ -x "$h" ] && "$h" 2>/dev/null; exit 0')

Settings = dict[str, Any]
Group = tuple[str, str | None, dict[str, Any]]  # (event, matcher, hook handler)


def with_hooks(settings: Settings, groups: list[Group]) -> Settings | None:
    """`settings` with exactly gitmem's group for each event (None when "hooks" is not an object)."""
    data = copy.deepcopy(settings)
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        return None
    for event, matcher, handler in groups:
        current = found if isinstance(found := hooks.get(event), list) else []
        wanted: dict[str, Any] = {"matcher": matcher} if matcher else {}
        wanted["hooks"] = [handler]
        ours = [g for g in current if _has_ours(g)]
        if ours == [wanted]:
            continue
        hooks[event] = [*_strip(current), wanted]
    return data


def without_hooks(settings: Settings) -> Settings:
    data = copy.deepcopy(settings)
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return data
    for event in list(hooks):
        if isinstance(hooks[event], list) and any(_has_ours(g) for g in hooks[event]):
            remaining = _strip(hooks[event])
            if remaining:
                hooks[event] = remaining
            else:
                del hooks[event]
    if not hooks:
        del data["hooks"]
    return data


def installed_events(repo: RepoPaths, rel: str) -> list[str]:
    settings, _ = _read(owned.read(repo, rel))
    hooks = found if isinstance(found := settings.get("hooks"), dict) else {}
    return sorted(e for e, groups in hooks.items() if isinstance(groups, list) and any(_has_ours(g) for g in groups))


class HookFileStatus(TypedDict):
    events: list[str]  # events holding exactly gitmem's group (its matcher and command)
    missing: list[str]  # events of `groups` without gitmem's hook
    altered: list[str]  # events with a hook that names the shim but is not exactly gitmem's
    problem: str | None  # why the file cannot be read


def status(repo: RepoPaths, rel: str, groups: list[Group]) -> HookFileStatus:
    """Which of gitmem's hooks `rel` holds exactly as `install` writes them. A command that merely
    names the shim (one a pull request rewrote to run something else first) is not gitmem's."""
    settings, problem = _read(owned.read(repo, rel))
    hooks = found if isinstance(found := settings.get("hooks"), dict) else {}
    exact, missing, altered = [], [], []
    for event, matcher, handler in groups:
        current = found if isinstance(found := hooks.get(event), list) else []
        if any(_exactly(g, matcher, handler) for g in current):
            exact.append(event)
        elif any(_has_ours(g) for g in current):
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
    settings, problem = _read(current)
    if problem:
        return [f"left {rel} alone: {problem}; fix it and run `gitmem init` again"]
    merged = with_hooks(settings, groups)
    if merged is None:
        return [f"left {rel} alone: its \"hooks\" is not an object"]
    if merged == settings and current is not None:
        return []
    owned.write(repo, rel, _dump(merged))
    return [f"added gitmem's {what} hooks to {rel}"]


def uninstall(repo: RepoPaths, rel: str, what: str) -> list[str]:
    def undo(now: bytes, before: bytes | None) -> bytes | None:
        settings, problem = _read(now)
        if problem:
            return now
        cleaned = without_hooks(settings)
        if before is not None and _read(before)[0] == cleaned:
            return before  # nothing but gitmem's part changed: the original bytes
        return _dump(cleaned) if cleaned or before is not None else None

    outcome = owned.restore(repo, rel, undo)
    if outcome == "":  # not written from this machine (a teammate's commit): gitmem's part only
        current = owned.read(repo, rel)
        settings, problem = _read(current)
        if current is None or problem or not installed_events(repo, rel):
            return []
        cleaned = without_hooks(settings)
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


def _read(data: bytes | None) -> tuple[Settings, str | None]:
    if data is None:
        return {}, None
    try:
        loaded = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        return {}, "it is not UTF-8"
    except ValueError as exc:
        return {}, f"it is not valid JSON ({exc})"
    if not isinstance(loaded, dict):
        return {}, "it is not a JSON object"
    return loaded, None


def _dump(data: Settings) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _is_ours(hook: object) -> bool:
    return isinstance(hook, dict) and SHIM_MARKER in str(hook.get("command", ""))


def _has_ours(group: object) -> bool:
    return isinstance(group, dict) and isinstance(group.get("hooks"), list) and any(
        _is_ours(h) for h in group["hooks"])


def _strip(groups: list[Any]) -> list[Any]:
    kept: list[Any] = []
    for group in groups:
        if not _has_ours(group):
            kept.append(group)
            continue
        others = [h for h in group["hooks"] if not _is_ours(h)]
        if others:
            kept.append({**group, "hooks": others})
    return kept

"""gitmem's entries in another agent's JSON hook settings (Codex `.codex/hooks.json`, Gemini CLI
`.gemini/settings.json`): both use Claude Code's layout, `{"hooks": {EVENT: [{"matcher": ...,
"hooks": [{"type": "command", "command": ...}]}]}}`. Gemini CLI's file may hold comments
(`comments=True`): gitmem then rewrites its "hooks" member alone, and every other byte stays
(gitmem.delivery.agents.jsonc).

The command names no path of this machine: it asks git for the common git dir from the cwd the
agent runs hooks in (the repository, or a linked worktree of it) and runs the same
machine-local shim as Claude Code's hooks (`.git/gitmem/claude-hook`, gitmem.hook.claude), and
does nothing, successfully, where there is none. gitmem's entries are recognised by the shim's
name in their command: merged in idempotently, removed alone; a file gitmem created, or left
as gitmem wrote it, goes back to exactly what was there (gitmem.delivery.agents.owned).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, TypedDict

from gitmem.base.files import read_plain
from gitmem.base.paths import RepoPaths
from gitmem.delivery import NotInstalled
from gitmem.delivery.agents import jsonc, owned
from gitmem.delivery.claude_settings import (
    has_gitmem_hook,
    parse_settings,
    with_groups,
    without_gitmem_hooks,
)

# Codex runs hooks with `$SHELL -lc`, Gemini CLI through its platform shell: the script runs in
# `sh -c '…'`, which fish, zsh and bash all read alike (under fish the script itself did nothing).
# On native Windows both use PowerShell (Codex's `commandWindows` would replace the command there):
# it fails there. The event is always read whole (`cat`): Codex fails a hook whose input it cannot
# write, and the shim may be absent (a clone without `gitmem init`), its interpreter gone, or the
# event too large.
_SCRIPT = ('h="$(git rev-parse --path-format=absolute --git-common-dir 2>/dev/null)/gitmem/claude-hook"; '
           '[ -x "$h" ] && "$h" 2>/dev/null; cat >/dev/null; exit 0')
COMMAND = f"sh -c {shlex.quote(_SCRIPT)}"

Settings = dict[str, Any]
_COMMENTED = "left {rel} alone: its \"hooks\" holds comments; remove gitmem's hooks by hand"
Group = tuple[str, str | None, dict[str, Any]]  # (event, matcher, hook handler)


def with_hooks(settings: Settings, groups: list[Group]) -> Settings | None:
    """`settings` with exactly gitmem's group for each event (None when "hooks" is not an object of lists)."""
    wanted = []
    for event, matcher, handler in groups:
        group: dict[str, Any] = {"matcher": matcher} if matcher else {}
        group["hooks"] = [handler]
        wanted.append((event, group))
    return with_groups(settings, wanted)


def _parse(data: bytes | None, comments: bool) -> tuple[Settings, str | None]:
    """The file's JSON object, as parse_settings reads it; with `comments`, JSON with comments."""
    if not comments or data is None:
        return parse_settings(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return {}, "it is not UTF-8"
    return parse_settings(jsonc.strip_comments(text).encode("utf-8"))


def _read(path: Path, comments: bool) -> tuple[Settings, str | None]:
    """The file's JSON object as _parse reads it ({} when absent), or {} and why it cannot be read."""
    try:
        return _parse(read_plain(path) if path.exists() else None, comments)
    except OSError as exc:
        return {}, f"it cannot be read ({exc.strerror})"


def _serialised(current: bytes | None, settings: Settings) -> bytes | None:
    """`settings` as the file's bytes (jsonc.rewritten: only the "hooks" member of a file that
    exists is written anew, in its style; None when that member holds a comment gitmem would drop)."""
    text = jsonc.rewritten(current.decode("utf-8") if current is not None else None, "hooks", settings)
    return text.encode("utf-8") if text is not None else None


def installed_events(repo: RepoPaths, rel: str, *, comments: bool = False) -> list[str]:
    settings, _ = _read(repo.worktree / rel, comments)
    hooks = found if isinstance(found := settings.get("hooks"), dict) else {}
    return sorted(e for e, groups in hooks.items()
                  if isinstance(groups, list) and any(has_gitmem_hook(g) for g in groups))


class HookFileStatus(TypedDict):
    events: list[str]  # events holding exactly gitmem's group (its matcher and command)
    missing: list[str]  # events of `groups` without gitmem's hook
    altered: list[str]  # events with a hook that names the shim but is not exactly gitmem's
    problem: str | None  # why the file cannot be read


def status(repo: RepoPaths, rel: str, groups: list[Group], *, comments: bool = False) -> HookFileStatus:
    """Which of gitmem's hooks `rel` holds exactly as `install` writes them. A command that merely
    names the shim (one a pull request rewrote to run something else first) is not gitmem's."""
    settings, problem = _read(repo.worktree / rel, comments)
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
                    and h.get("timeout") == handler.get("timeout")  # one second: killed before it answers
                    for h in group["hooks"]))


def install(repo: RepoPaths, rel: str, groups: list[Group], what: str, *, comments: bool = False) -> list[str]:
    current = owned.read(repo, rel)
    settings, problem = _parse(current, comments)
    if problem:
        return [NotInstalled(f"left {rel} alone: {problem}; fix it and run `gitmem init` again")]
    merged = with_hooks(settings, groups)
    if merged is None:
        return [NotInstalled(f"left {rel} alone: its \"hooks\" is not an object of lists")]
    if merged == settings and current is not None:
        return []
    data = _serialised(current, merged)
    if data is None:
        return [NotInstalled(f"left {rel} alone: its \"hooks\" holds comments gitmem would lose; "
                             "move them out of it and run `gitmem init` again")]
    def theirs(before: bytes) -> bytes | None:  # a teammate's committed file: without gitmem's hooks
        parsed, unreadable = _parse(before, comments)
        cleaned = without_gitmem_hooks(parsed)
        if unreadable or cleaned == parsed:
            return before
        if not cleaned and not jsonc.has_comments(before.decode("utf-8")):
            return None
        return _serialised(before, cleaned) or before

    owned.write(repo, rel, data, theirs)
    return [f"added gitmem's {what} hooks to {rel}"]


def uninstall(repo: RepoPaths, rel: str, what: str, *, comments: bool = False) -> list[str]:
    kept: list[str] = []

    def undo(now: bytes, before: bytes | None) -> bytes | None:
        settings, problem = _parse(now, comments)
        if problem:
            return now
        cleaned = without_gitmem_hooks(settings)
        if before is not None and _parse(before, comments)[0] == cleaned:
            return before  # nothing but gitmem's part changed: the original bytes
        if not cleaned and before is None:
            return None
        data = _serialised(now, cleaned)
        if data is None:
            kept.append(_COMMENTED.format(rel=rel))
        return now if data is None else data

    outcome = owned.restore(repo, rel, undo)
    if kept:
        return kept
    if outcome == "":  # not written from this machine (a teammate's commit): gitmem's part only
        current = owned.read(repo, rel)
        settings, problem = _parse(current, comments)
        if current is None or problem or not installed_events(repo, rel, comments=comments):
            return []
        cleaned = without_gitmem_hooks(settings)
        path = repo.worktree / rel
        data = _serialised(current, cleaned)
        if data is None:
            return [_COMMENTED.format(rel=rel)]
        if cleaned or jsonc.has_comments(current.decode("utf-8")):
            path.write_bytes(data)
        else:
            path.unlink()
            try:
                path.parent.rmdir()
            except OSError:
                pass
    elif outcome == "left":
        return [f"left {rel} alone: it changed since gitmem wrote it"]
    return [f"removed gitmem's {what} hooks from {rel}"]




"""gitmem's Claude Code hooks: a machine-local shim, and entries in .claude/settings.json.

The committed settings file must work for every teammate, so the command in it names no path
of this machine: it runs the shim at "$CLAUDE_PROJECT_DIR/.git/gitmem/claude-hook" (in a linked
worktree, the one in the common git dir, found through git) and does nothing, successfully,
where there is no shim (a teammate without gitmem). The shim lives under .git/, is never
committed, and holds what is machine-specific: the interpreter and the folders to import from.

gitmem's hook entries are recognised by SHIM_MARKER in their command, so installing twice
changes nothing and uninstalling removes only gitmem's entries; every other key and hook of
the user's settings is kept as it was.
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import sys
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any, TypedDict, TypeGuard

from gitmem.base.files import read_plain, write_atomic
from gitmem.base.locate import runner_problem
from gitmem.base.paths import RepoPaths
from gitmem.delivery import NotInstalled

SETTINGS_FILE = ".claude/settings.json"
SHIM_NAME = "claude-hook"
SHIM_MARKER = "gitmem/claude-hook"
TIMEOUT_S = 10
COMMAND = ('h="$CLAUDE_PROJECT_DIR/.git/gitmem/claude-hook"; [ -x "$h" ] || h="$(git -C "$CLAUDE_PROJECT_DIR" '
           'rev-parse --path-format=absolute --git-common-dir 2>/dev/null)/gitmem/claude-hook"; '
           '[ -x "$h" ] && "$h" 2>/dev/null; cat >/dev/null; exit 0')
# (event, matcher); None: the event takes no matcher.
HOOKS = (
    ("SessionStart", None),
    ("SubagentStart", None),  # the subagent's own context gets the repository block
    ("UserPromptSubmit", None),
    ("PreToolUse", "Read|Edit|Write|MultiEdit|NotebookEdit|Bash|PowerShell"),  # PowerShell: Windows
    ("PostToolUse", "Edit|Write|MultiEdit|NotebookEdit"),
    ("Stop", None),
    ("SessionEnd", None),
)
# Imported only when the hook rebuilds its compiled rules or refreshes declaration ranges.
DEPENDENCIES = ("ruamel.yaml", "tree_sitter", "tree_sitter_languages")

# .claude/settings.json and its parts: JSON objects as the user wrote them.
Settings = dict[str, Any]


class HookStatus(TypedDict):
    events: list[str]  # events whose settings hold gitmem's hook
    missing: list[str]  # events without exactly gitmem's hook
    altered: list[str]  # of those, events whose hook names the shim but is not exactly gitmem's
    shim: bool
    python: str | None  # the interpreter the shim runs
    broken: str | None  # why the shim cannot run gitmem (its interpreter gone, gitmem uninstalled there)
    problem: str | None  # why the settings file could not be read


def shim_path(repo: RepoPaths) -> Path:
    return repo.state / SHIM_NAME


def settings_path(repo: RepoPaths) -> Path:
    return repo.worktree / SETTINGS_FILE


def hook_group(matcher: str | None) -> Settings:
    group: Settings = {"matcher": matcher} if matcher else {}
    group["hooks"] = [{"type": "command", "command": COMMAND, "timeout": TIMEOUT_S}]
    return group


def install(repo: RepoPaths, python: str | None = None) -> list[str]:
    """Write the shim and merge gitmem's hooks into .claude/settings.json; returns what it did."""
    done: list[str] = []
    shim = shim_path(repo)
    text = shim_text(python or sys.executable)
    if not shim.exists() or shim.read_text(encoding="utf-8", errors="replace") != text:
        shim.parent.mkdir(parents=True, exist_ok=True)
        shim.write_text(text, encoding="utf-8")
        done.append(f"wrote the Claude Code hook shim ({shim.relative_to(repo.common_dir.parent)})"
                    if shim.is_relative_to(repo.common_dir.parent) else f"wrote {shim}")
    os.chmod(shim, 0o755)

    path = settings_path(repo)
    settings, problem = read_settings(path)
    if problem:
        return [*done, NotInstalled(f"left {SETTINGS_FILE} alone: {problem}; fix it and run `gitmem init` again")]
    target, refused = _target(repo, path)
    if refused:
        return [*done, NotInstalled(f"left {SETTINGS_FILE} alone: {refused}")]
    merged = with_gitmem_hooks(settings)
    if merged is None:
        return [*done, NotInstalled(f"left {SETTINGS_FILE} alone: its \"hooks\" is not an object of lists")]
    if merged != settings or not path.exists():
        _remember_original(repo, target)
        _write(target, merged)
        done.append(f"added gitmem's Claude Code hooks to {SETTINGS_FILE}")
    return done


def uninstall(repo: RepoPaths) -> list[str]:
    done: list[str] = []
    path = settings_path(repo)
    settings, problem = read_settings(path)
    target, refused = _target(repo, path)
    if refused and path.exists():
        done.append(f"left {SETTINGS_FILE} alone: {refused}")
    elif path.exists() and not problem:
        cleaned = without_gitmem_hooks(settings)
        if cleaned != settings:
            original = _original(repo)
            if original is not None and _same_but_ours(original, cleaned):
                _put_back(target, original)  # exactly the bytes that were there
            elif original == b"" and not cleaned and not path.is_symlink():
                path.unlink()  # gitmem created it
                try:
                    path.parent.rmdir()
                except OSError:
                    pass
            else:
                _write(target, cleaned)
            done.append(f"removed gitmem's Claude Code hooks from {SETTINGS_FILE}")
        _forget_original(repo)
    elif problem and path.exists():
        done.append(f"left {SETTINGS_FILE} alone: {problem}")
    shim = shim_path(repo)
    if shim.exists():
        shim.unlink()
        done.append("removed the Claude Code hook shim")
    return done


def with_gitmem_hooks(settings: Settings) -> Settings | None:
    """`settings` with exactly one gitmem hook group per event (None when it cannot be merged)."""
    return with_groups(settings, [(event, hook_group(matcher)) for event, matcher in HOOKS])


def with_groups(settings: Settings, wanted: Iterable[tuple[str, Settings]]) -> Settings | None:
    """`settings` (Claude Code's, or another agent's of the same shape) with exactly the group
    `wanted` of gitmem's hook for each event; None when "hooks" is not an object, or an event
    gitmem hooks holds something other than a list (the file's owner decides what it meant)."""
    data = copy.deepcopy(settings)
    hooks = data.setdefault("hooks", {})
    wanted = list(wanted)
    if not isinstance(hooks, dict) or any(not isinstance(hooks.get(e, []), list) for e, _ in wanted):
        return None
    for event, group in wanted:
        groups = hooks.get(event, [])
        if [g for g in groups if has_gitmem_hook(g)] == [group]:
            continue  # already there, wherever the user moved it
        hooks[event] = [*_strip(groups), group]
    return data


def without_gitmem_hooks(settings: Settings) -> Settings:
    data = copy.deepcopy(settings)
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return data
    for event in list(hooks):
        if isinstance(hooks[event], list) and any(has_gitmem_hook(g) for g in hooks[event]):
            remaining = _strip(hooks[event])
            if remaining:
                hooks[event] = remaining
            else:
                del hooks[event]
    if not hooks:
        del data["hooks"]
    return data


def status(repo: RepoPaths) -> HookStatus:
    """Whether the hooks are in the settings for every event, and which interpreter the shim runs."""
    settings, problem = read_settings(settings_path(repo))
    hooks = found if isinstance(found := settings.get("hooks"), dict) else {}
    events = [e for e, m in HOOKS if any(_installed(g, m) for g in _groups(hooks, e))]
    altered = [e for e, _ in HOOKS if e not in events and any(has_gitmem_hook(g) for g in _groups(hooks, e))]
    shim = shim_path(repo)
    text = shim.read_text(encoding="utf-8", errors="replace") if shim.exists() else ""
    python = shim_python(text) if text else None
    broken = runner_problem(python, shim_roots(text)) if text else None
    return {"events": events, "missing": [e for e, _ in HOOKS if e not in events], "altered": altered,
            "shim": shim.exists(), "python": python, "broken": broken, "problem": problem}


def _groups(hooks: Settings, event: str) -> list[object]:
    found = hooks.get(event)
    return [g for g in found if isinstance(g, dict)] if isinstance(found, list) else []


def shim_text(python: str) -> str:
    """The shim: a Python script naming the interpreter on its #! line (one process fewer than a
    shell script), or a shell script where that line cannot hold the path (spaces, length)."""
    simple = len(python) < 200 and not any(c.isspace() or c in "\"'\\" for c in python)
    name = "claude-hook.py" if simple else "claude-hook.sh"
    template = resources.files("gitmem.hook").joinpath(name).read_text(encoding="utf-8")
    if simple:
        return template.replace("@PYTHON@", python).replace("@PATHS@", repr(import_roots()))
    roots = " ".join(shlex.quote(p) for p in import_roots())
    return template.replace("@PYTHON@", shlex.quote(python)).replace("@PATHS@", roots)


def shim_python(text: str) -> str | None:
    """The interpreter a shim written by shim_text runs."""
    lines = text.splitlines()
    if lines and lines[0].startswith("#!") and not lines[0].startswith("#!/bin/sh"):
        return lines[0][2:].rsplit(" -IS", 1)[0]
    for line in lines:
        if line.startswith("GITMEM_PYTHON="):
            words = shlex.split(line.partition("=")[2])
            return words[0] if words else None
    return None


def shim_roots(text: str) -> list[str]:
    """The folders a shim written by shim_text imports gitmem from ([] when it names none)."""
    import ast

    for line in text.splitlines():
        if line.startswith("sys.path += "):  # the Python shim
            try:
                roots = ast.literal_eval(line[len("sys.path += "):])
            except (ValueError, SyntaxError):
                return []
            return [r for r in roots if isinstance(r, str)] if isinstance(roots, list) else []
        if line.startswith("exec ") and " -c " in line:  # the shell shim: the folders follow the code
            try:
                words = shlex.split(line)
            except ValueError:
                return []
            return words[words.index("-c") + 2:] if "-c" in words else []
    return []


def import_roots() -> list[str]:
    """Folders holding gitmem and the dependencies its hook may import, in that order."""
    import importlib.util

    import gitmem

    roots = [str(Path(gitmem.__file__).resolve().parent.parent)]
    for name in DEPENDENCIES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.origin:
            continue
        origin = Path(spec.origin).resolve()
        depth = len(name.split(".")) - (0 if origin.stem == "__init__" else 1)
        root = str(origin.parents[depth])
        if root not in roots:
            roots.append(root)
    return roots


# -- the settings file exactly as the developer had it ---------------------------------------------
# `uninstall` puts back the very bytes that were there before `init` (indentation, escapes such as
# \u00e9, a missing final newline), as long as nothing else changed in between; a symlinked
# settings file is edited through the link, never replaced by a regular file.
ORIGINAL = "claude-settings.orig"


def _original_path(repo: RepoPaths) -> Path:
    return repo.git_dir / "gitmem" / ORIGINAL


def _remember_original(repo: RepoPaths, target: Path) -> None:
    """The file's bytes before gitmem's first change (empty: there was no file)."""
    saved = _original_path(repo)
    if saved.exists():
        return
    try:
        data = read_plain(target) if target.exists() else b""
    except OSError:
        return
    try:
        write_atomic(saved, data)
    except OSError:
        pass


def _original(repo: RepoPaths) -> bytes | None:
    try:
        return _original_path(repo).read_bytes()
    except OSError:
        return None


def _forget_original(repo: RepoPaths) -> None:
    try:
        _original_path(repo).unlink()
    except OSError:
        pass


def _same_but_ours(original: bytes, cleaned: Settings) -> bool:
    if not original:
        return False
    try:
        data = json.loads(original.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    return isinstance(data, dict) and (data == cleaned or without_gitmem_hooks(data) == cleaned)


def _put_back(target: Path, data: bytes) -> None:
    write_atomic(target, data)


def _target(repo: RepoPaths, path: Path) -> tuple[Path, str | None]:
    """Where to write: the file itself, or the file a symlink names when that lies inside the
    repository (a link out of it is refused)."""
    if not path.is_symlink():
        return path, None
    real = Path(os.path.realpath(path))
    root = Path(os.path.realpath(repo.worktree))
    if not real.is_relative_to(root):
        return path, f"it is a symlink to {real}, outside this repository; add gitmem's hooks there yourself"
    return real, None


def has_gitmem_hook(group: object) -> TypeGuard[Settings]:
    return isinstance(group, dict) and isinstance(group.get("hooks"), list) and any(
        isinstance(h, dict) and SHIM_MARKER in str(h.get("command", "")) for h in group["hooks"])


def _installed(group: object, matcher: str | None) -> bool:
    """Exactly the group `install` writes: its matcher and its command, verbatim. A command that
    merely mentions the shim (say, one a pull request rewrote to run something else first) is not
    gitmem's hook, and `gitmem init` replaces it."""
    return has_gitmem_hook(group) and group.get("matcher") == matcher and any(
        isinstance(h, dict) and h.get("type") == "command" and h.get("command") == COMMAND for h in group["hooks"])


def _strip(groups: list[object]) -> list[object]:
    """The groups without gitmem's hooks; a group left with no hooks goes."""
    kept: list[object] = []
    for group in groups:
        if not has_gitmem_hook(group):
            kept.append(group)
            continue
        others = [h for h in group["hooks"] if not (isinstance(h, dict) and SHIM_MARKER in str(h.get("command", "")))]
        if others:
            kept.append({**group, "hooks": others})
    return kept


def read_settings(path: Path) -> tuple[Settings, str | None]:
    """A settings file's JSON object ({} when absent), or {} and why it cannot be read or used."""
    try:
        return parse_settings(read_plain(path) if path.exists() else None)
    except OSError as exc:
        return {}, f"it cannot be read ({exc.strerror})"


def parse_settings(data: bytes | None) -> tuple[Settings, str | None]:
    """A settings file's JSON object ({} when absent), or {} and why it cannot be used."""
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


def _write(path: Path, data: Settings) -> None:
    """Only the "hooks" member of a file that exists is rewritten, in the file's style; every
    other byte stays as the developer wrote it."""
    from gitmem.delivery.agents import jsonc

    try:
        current = read_plain(path).decode("utf-8") if path.exists() else None
    except (OSError, UnicodeDecodeError):
        current = None
    text = jsonc.rewritten(current, "hooks", data)
    text = text if text is not None else jsonc.dumped(data)
    if current is None:  # a new file: in the line ends git checks it out with (core.safecrlf)
        from gitmem import git

        text = git.as_checked_out(path.parent.parent, f"{path.parent.name}/{path.name}", text)
    write_atomic(path, text)

"""Which agents a repository serves, and each one's channels: install, regenerate, remove.

`gitmem init --agent NAME` (repeatable) sets `agents:` in .gitmem/config.yaml, so every
teammate's `gitmem init` sets up the same channels; `gitmem init` alone keeps the setting.

| agent | channel |
|---|---|
| claude-code | hooks in .claude/settings.json (gitmem.delivery.claude_settings) |
| codex | hooks in .codex/hooks.json: SessionStart, SubagentStart, UserPromptSubmit, PreToolUse |
| | (apply_patch, Bash), PostToolUse (apply_patch, Bash), Stop |
| copilot | .github/instructions/gitmem*.instructions.md |
| cursor | .cursor/rules/gitmem*.mdc |
| gemini | GEMINI.md's managed section, and hooks in .gemini/settings.json: AfterTool (files |
| | read or edited, shell commands), BeforeAgent (prompts), BeforeTool (refusals), AfterAgent |
| | and SessionEnd (capture) |
| agents-md | AGENTS.md's managed section (gitmem.delivery.agents_md) |

Codex and Gemini CLI run the same machine-local hook as Claude Code (they send the same JSON
shapes; gitmem.hook.claude reads both). Generated files are regenerated after every memory
change (gitmem.delivery.upkeep.after_memory_change) from the committed store alone, and merge
through a git merge driver (gitmem.delivery.agents.merge) that `gitmem init` registers.
`gitmem uninstall` removes every channel and puts back, byte for byte, what was there before.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypedDict

from gitmem import git
from gitmem.base.files import in_line_ends_of, read_plain
from gitmem.base.paths import RepoPaths
from gitmem.base.settings import AGENT_NAMES
from gitmem.delivery import rules as delivery_rules
from gitmem.delivery.agents import content, generated, hooks_json, owned

DEFAULT = ("claude-code",)
HOOK_AGENTS = ("claude-code", "codex", "gemini")  # run .git/gitmem/claude-hook
GENERATING = ("copilot", "cursor", "gemini")  # files generated from the store, merged by the driver
CODEX_FILE = ".codex/hooks.json"
GEMINI_SETTINGS = ".gemini/settings.json"
CODEX_TIMEOUT_S = 10
GEMINI_TIMEOUT_MS = 10_000  # Gemini CLI's timeouts are milliseconds
CODEX_HOOKS: list[hooks_json.Group] = [
    (event, matcher, {"type": "command", "command": hooks_json.COMMAND, "timeout": CODEX_TIMEOUT_S})
    for event, matcher in (("SessionStart", None), ("SubagentStart", None), ("UserPromptSubmit", None),
                           ("PreToolUse", "apply_patch|Bash"), ("PostToolUse", "apply_patch|Bash"), ("Stop", None))]
# SubagentStart: newer Codex versions; older ones ignore event names they do not know.
GEMINI_HOOKS: list[hooks_json.Group] = [
    (event, matcher, {"name": "gitmem", "type": "command", "command": hooks_json.COMMAND,
                      "timeout": GEMINI_TIMEOUT_MS,
                      "description": "gitmem: the repository's memory for the file or prompt at hand"})
    for event, matcher in (("AfterTool", "read_file|read_many_files|write_file|replace|run_shell_command"),
                           ("BeforeAgent", None),
                           ("BeforeTool", "write_file|replace|run_shell_command"),  # refuses writes to memory
                           ("AfterAgent", None), ("SessionEnd", None),  # the turn is over: the writer reads it
                           ("PreCompress", None))]  # the context is compressed: entries come again

# Agents whose files gitmem owns wholly: (folder, name suffix, the files for the store's rules).
OWNED: dict[str, tuple[str, str, Callable[[delivery_rules.CompiledRules, float | None], dict[str, str]]]] = {
    "copilot": (generated.COPILOT_DIR, generated.COPILOT_SUFFIX, generated.copilot),
    "cursor": (generated.CURSOR_DIR, generated.CURSOR_SUFFIX, generated.cursor)}

MERGE_DRIVER = "gitmem-generated"
MERGE_ATTRIBUTES = (f"/{generated.COPILOT_DIR}/gitmem*{generated.COPILOT_SUFFIX} merge={MERGE_DRIVER}\n",
                    f"/{generated.CURSOR_DIR}/gitmem*{generated.CURSOR_SUFFIX} merge={MERGE_DRIVER}\n",
                    f"/{generated.GEMINI_FILE} merge={MERGE_DRIVER}\n")


class FileState(TypedDict):
    path: str
    state: str  # current, stale, missing, edited, developers, damaged (section markers), unreadable


class HookReport(TypedDict):
    file: str  # the settings file holding the hooks
    exact: bool  # every event has exactly the hook `gitmem init` writes (matcher and command)
    missing: list[str]  # events without gitmem's hook
    altered: list[str]  # events whose gitmem hook was changed (its command or matcher)
    shim: bool  # this machine has the hook shim the command runs
    problem: str | None  # why the settings file cannot be read


class AgentReport(TypedDict):
    agent: str
    files: list[FileState]
    hooks: HookReport | None  # claude-code, codex, gemini


# -- the choice ---------------------------------------------------------------------------------

def chosen(repo: RepoPaths) -> list[str]:
    """The agents .gitmem/config.yaml names (claude-code when it names none), in canonical order."""
    from gitmem.store.yaml_files import load_config

    value = load_config(repo).get("agents")
    names = [n for n in AGENT_NAMES if isinstance(value, list) and n in value]
    return names or list(DEFAULT)


def choose(repo: RepoPaths, names: Sequence[str]) -> list[str]:
    """Keep `names` as the repository's agents in .gitmem/config.yaml (comments survive)."""
    import io

    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    from gitmem.errors import GitmemError
    from gitmem.store.yaml_files import DEFAULT_CONFIG, UNREADABLE, unreadable_reason

    unknown = [n for n in names if n not in AGENT_NAMES]
    if unknown:
        raise GitmemError(f"unknown agent {unknown[0]!r}; expected one of {', '.join(AGENT_NAMES)}")
    wanted = [n for n in AGENT_NAMES if n in names]
    path = repo.config
    text = read_plain(path, follow_links=False).decode("utf-8") if path.exists() else DEFAULT_CONFIG
    yaml = YAML()
    yaml.width = 100
    try:
        loaded = yaml.load(text)
    except UNREADABLE as exc:
        raise GitmemError(f"{path}: {unreadable_reason(exc)}") from None
    data = loaded if isinstance(loaded, CommentedMap) else CommentedMap()
    if list(data.get("agents") or []) == wanted and path.exists():
        return []
    seq = CommentedSeq(wanted)
    seq.fa.set_flow_style()
    if "agents" in data:
        data["agents"] = seq
    else:
        data.insert(0, "agents", seq)
    out = io.StringIO()
    yaml.dump(data, out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(out.getvalue(), encoding="utf-8")
    return [f"this repository serves {', '.join(wanted)} (agents in .gitmem/config.yaml)"]


# -- setting up and taking down -----------------------------------------------------------------

def install(repo: RepoPaths, names: Sequence[str] | None = None, previous: Sequence[str] = ()) -> list[str]:
    """Set up the channels of `names` (default: the chosen ones); those of `previous` agents no
    longer among them are taken down."""
    names = chosen(repo) if names is None else list(names)
    done: list[str] = []
    for name in AGENT_NAMES:
        if name in previous and name not in names:
            done += _REMOVE[name](repo)
    for name in AGENT_NAMES:
        if name in names:
            done += _INSTALL[name](repo)
    if any(n in HOOK_AGENTS for n in names):
        done += _ensure_shim(repo)
    generating = any(n in GENERATING for n in names)
    done += _register_merge_driver(repo) if generating else _unregister_merge_driver(repo)
    return done


def uninstall(repo: RepoPaths) -> list[str]:
    """Every agent's channels, whatever the configuration says, and the merge driver."""
    done: list[str] = []
    for name in AGENT_NAMES:
        done += _REMOVE[name](repo)
    done += _unregister_merge_driver(repo)
    return done


def refresh(repo: RepoPaths, names: Sequence[str] | None = None, now: float | None = None) -> list[str]:
    """Regenerate the generated files of the chosen agents; the paths that changed."""
    return regenerate(repo, names, now)[0]


def regenerate(repo: RepoPaths, names: Sequence[str] | None = None,
               now: float | None = None) -> tuple[list[str], list[str]]:
    """Regenerate the generated files of the chosen agents: (the paths that changed, those of them
    that may join a commit being made).

    A file joins when HEAD has it and the work tree had it as HEAD has it (no staged or unstaged
    change of the developer's), or when it is new and the agent's other generated files are
    committed. A generated file edited by hand (neither what gitmem last wrote here nor what HEAD
    holds) is left as it is, and so is a scope's file it would remove.
    """
    names = chosen(repo) if names is None else list(names)
    if not any(n in names for n in GENERATING):
        return [], []
    rules = content.compiled_rules(repo)
    agents = [a for a in OWNED if a in names]
    tracked = [OWNED[a][0] for a in agents] + ([generated.GEMINI_FILE] if "gemini" in names else [])
    committed = committed_unchanged(repo, tracked)
    changed: list[str] = []
    joinable: list[str] = []
    for agent in agents:
        folder, suffix, make = OWNED[agent]
        present = set(_present(repo, folder, suffix))
        served = any(p.startswith(folder + "/") for p in committed)
        for rel in _sync(repo, make(rules, now), folder, suffix, committed):
            changed.append(rel)
            if rel in committed or (served and rel not in present and not _in_head(repo, rel)):
                joinable.append(rel)
    if "gemini" in names and _write_section(repo, generated.GEMINI_FILE, generated.gemini_section(rules, now)):
        changed.append(generated.GEMINI_FILE)
        if generated.GEMINI_FILE in committed:
            joinable.append(generated.GEMINI_FILE)
    return changed, joinable


def for_commit(repo: RepoPaths, head: Mapping[str, str], changed: Sequence[Mapping[str, Any]] = (),
               now: float | None = None) -> dict[str, str | None]:
    """The generated files a commit of gitmem's that stores the entries `changed` carries along:
    {path: the new text, or None where the file goes}. `head`: the text of the files HEAD holds
    under gitmem's names (OWNED folders, is_generated_path) and of GEMINI.md.

    Only agents whose generated files HEAD holds join (a new scope's file joins with them); a file
    HEAD holds under gitmem's name without gitmem's header is not gitmem's. The caller leaves out
    every file the developer has a staged or unstaged change of.
    """
    names = chosen(repo)
    if not any(n in names for n in GENERATING):
        return {}
    rules = content.compiled_rules(repo, changed)
    out: dict[str, str | None] = {}
    for agent in (a for a in OWNED if a in names):
        folder, suffix, make = OWNED[agent]
        mine = {p for p, t in head.items() if is_generated_path(p, folder, suffix) and generated.is_generated(t)}
        if not mine:
            continue  # none of this agent's files is committed: adding them is the developer's call
        files = make(rules, now)
        for rel, text in files.items():
            if rel in head and rel not in mine:
                continue
            if head.get(rel) != text:
                out[rel] = text
        out.update(dict.fromkeys(sorted(mine - set(files))))
    gemini = head.get(generated.GEMINI_FILE)
    if "gemini" in names and gemini is not None:
        from gitmem.delivery import agents_md

        if agents_md.has_section(gemini):
            updated = agents_md.replace_section(gemini, generated.gemini_section(rules, now))
            if updated != gemini:
                out[generated.GEMINI_FILE] = updated
    return out


def is_generated_path(rel: str, folder: str, suffix: str) -> bool:
    """`rel` is named as gitmem names its files in `folder` (directly in it)."""
    head, _, name = rel.rpartition("/")
    return head == folder and name.startswith("gitmem") and name.endswith(suffix)


def committed_unchanged(repo: RepoPaths, paths: Sequence[str]) -> set[str]:
    """The files under `paths` that HEAD holds and the work tree has exactly as HEAD has them."""
    if not paths or not git.has_head(repo.worktree):
        return set()
    in_head = git.tree_blob_ids(repo.worktree, "HEAD", paths)
    if not in_head:
        return set()
    out = git.git(repo.worktree, "diff", "--name-only", "-z", "--no-ext-diff", "--no-renames", "HEAD", "--",
                  *paths, check=False)
    return set(in_head) - set(out.decode("utf-8", "surrogateescape").split("\0"))


def _in_head(repo: RepoPaths, rel: str) -> bool:
    return bool(git.has_head(repo.worktree) and git.tree_blob_ids(repo.worktree, "HEAD", [rel]))


# -- what `gitmem status` says about each agent -------------------------------------------------

def report(repo: RepoPaths, now: float | None = None) -> list[AgentReport]:
    """For each agent the repository serves: its files and their states, and for agents with
    hooks whether every hook is exactly the one `gitmem init` writes.

    File states: "current" (as regeneration would leave it), "stale" (regeneration, or
    `gitmem init` for hook settings, would change it), "missing", "edited" (changed by hand:
    regeneration leaves it alone; for hook settings, gitmem's hook was altered or the file
    cannot be read), "developers" (the developer's own file under gitmem's name: never written).
    """
    from gitmem.delivery import agents_md, claude_settings

    names = chosen(repo)
    rules = content.compiled_rules(repo) if any(n in GENERATING or n == "agents-md" for n in names) else None
    committed = committed_unchanged(repo, [OWNED[a][0] for a in OWNED if a in names])
    reports: list[AgentReport] = []
    for name in names:
        files: list[FileState] = []
        hooks: HookReport | None = None
        if name == "claude-code":
            st = claude_settings.status(repo)
            hooks = {"file": claude_settings.SETTINGS_FILE, "exact": not st["missing"] and not st["problem"],
                     "missing": [e for e in st["missing"] if e not in st["altered"]], "altered": st["altered"],
                     "shim": st["shim"], "problem": st["problem"]}
        elif name == "codex":
            hooks = _hooks_report(repo, CODEX_FILE, CODEX_HOOKS)
        elif name == "gemini" and rules is not None:
            files.append(_section_state(repo, generated.GEMINI_FILE, generated.gemini_section(rules, now)))
            hooks = _hooks_report(repo, GEMINI_SETTINGS, GEMINI_HOOKS, comments=True)
        elif name == "agents-md" and rules is not None:
            files.append(_section_state(repo, agents_md.FILE_NAME, agents_md.render_section(rules)))
        elif name in OWNED and rules is not None:
            folder, suffix, make = OWNED[name]
            wanted = make(rules, now)
            for rel in sorted(set(wanted) | set(_present(repo, folder, suffix))):
                files.append({"path": rel, "state": _file_state(repo, rel, wanted.get(rel), committed)})
        if hooks is not None:
            files.insert(0, {"path": hooks["file"], "state": _hooks_state(repo, hooks)})
        reports.append({"agent": name, "files": files, "hooks": hooks})
    return reports


def _file_state(repo: RepoPaths, rel: str, wanted: str | None, committed: set[str]) -> str:
    try:
        current = owned.read(repo, rel)
    except OSError:
        return "unreadable"
    if current is None:
        return "missing"
    if wanted is not None and current == _as_checked_out(current, wanted):
        return "current"
    if _edited(repo, rel, current, committed):
        return "edited"
    return "developers" if _developers(repo, rel, current) else "stale"


# "3 more repository-wide entries are not listed …": the count varies with what a machine withholds
_LEFT_OUT_LINE = re.compile(r"\d+ more repository-wide (?:entry is|entries are) not listed, to keep this short "
                            r"\(`gitmem list` shows every entry\)\.")


def hand_edits(repo: RepoPaths) -> list[tuple[str, str]]:
    """(file, its first such line) for each of the agents' files as HEAD holds them whose part of
    gitmem's (AGENTS.md's and GEMINI.md's sections, the files at the names gitmem generates, with
    its header or without) holds a line gitmem does not render from the store at HEAD: a rule
    written there by hand reaches every agent that reads the repository as committed, past the
    gate and the entries' review. Rendered with nothing withheld (the gate's verdicts differ
    between machines) on today and the days the files were written and committed, and once more
    with nothing left out by day or budget (_nothing_left_out), which holds every line an entry
    or a retirement renders to on any day: one render for them all, however many expiries and
    retirements the store holds. A line moved, or left out, is not seen."""
    import time

    from gitmem.base.files import utc_date
    from gitmem.delivery import agents_md
    from gitmem.store import index

    if not git.has_head(repo.worktree):
        return []
    idx = index.current(repo)
    rules = delivery_rules.compile_rules(index.entries(idx, committed_only=True), idx.get("config") or {}, {})
    paths = [agents_md.FILE_NAME, generated.GEMINI_FILE, generated.COPILOT_DIR, generated.CURSOR_DIR]
    committed = git.tree_blob_ids(repo.worktree, "HEAD", paths)
    days = {time.time()}
    if committed:  # when each file was last written and committed: one walk back, each file's newest
        log = git.git_text(repo.worktree, "log", "--format=%x00%at %ct", "--name-only", "HEAD", "--", *paths,
                           check=False)
        seen: set[str] = set()
        for chunk in log.split("\0")[1:]:
            dates, *touched = chunk.split("\n")
            if any(rel in committed and rel not in seen for rel in touched):
                days.update(float(d) for d in dates.split() if d.isdigit())
                seen.update(touched)
    rendered: set[str] = set()
    names: set[str] = set()
    renders = [(rules, now) for now in {utc_date(day): day for day in days}.values()]  # a render is a day's
    for these, now in [*renders, _nothing_left_out(rules)]:
        made = {**generated.copilot(these, now), **generated.cursor(these, now)}
        names.update(made)
        texts_now = [agents_md.render_section(these, now), generated.gemini_section(these, now), *made.values()]
        rendered.update(line.rstrip("\r") for text in texts_now for line in text.splitlines())
    texts = git.read_blobs(repo.worktree, committed.values())
    found: list[tuple[str, str]] = []
    for rel, blob in sorted(committed.items()):
        text = texts.get(blob, b"").decode("utf-8", "replace")
        if rel in (agents_md.FILE_NAME, generated.GEMINI_FILE):
            section = agents_md.find_section(text)
            part = text[section[0]:section[3]] if section is not None else ""
        else:  # a file of the developer's in those folders, under another name, is theirs
            part = text if generated.is_generated(text) or rel in names else ""
        odd = next((line for line in part.splitlines()
                    if line.rstrip("\r") not in rendered and not _LEFT_OUT_LINE.fullmatch(line.rstrip("\r"))), None)
        if odd is not None:
            found.append((rel, odd.strip()))
    return found


def _nothing_left_out(rules: delivery_rules.CompiledRules) -> tuple[delivery_rules.CompiledRules, float]:
    """`rules` and a moment at which they render every entry and every retirement: the epoch,
    before any entry's last day, when every retirement is still to be announced (a retraction
    counts from its day on, with no end), with a session-start budget that holds everything."""
    return {**rules, "retraction_days": 365 * 100, "max_entries": 10**9, "max_chars": 10**12}, 0.0


def damaged_sections(repo: RepoPaths) -> list[tuple[str, str]]:
    """(file, why) for each file gitmem keeps a section of (AGENTS.md, GEMINI.md) whose markers
    are damaged: gitmem no longer updates it, and a second section may keep what was withdrawn."""
    from gitmem.delivery import agents_md

    found = []
    for rel in (agents_md.FILE_NAME, generated.GEMINI_FILE):
        try:
            data = owned.read(repo, rel)
        except OSError:
            continue
        problem = agents_md.section_problem(data.decode("utf-8", "replace")) if data is not None else None
        if problem:
            found.append((rel, problem))
    return found


def _section_state(repo: RepoPaths, rel: str, section: str) -> FileState:
    from gitmem.delivery import agents_md

    try:
        current = owned.read(repo, rel)
    except OSError:
        return {"path": rel, "state": "unreadable"}
    text = current.decode("utf-8", "replace") if current is not None else ""
    if agents_md.section_problem(text):
        return {"path": rel, "state": "damaged"}
    if agents_md.find_section(text) is None:
        return {"path": rel, "state": "missing"}
    return {"path": rel, "state": "current" if agents_md.replace_section(text, section) == text else "stale"}


def _hooks_report(repo: RepoPaths, rel: str, groups: list[hooks_json.Group], *,
                  comments: bool = False) -> HookReport:
    st = hooks_json.status(repo, rel, groups, comments=comments)
    return {"file": rel, "exact": not st["missing"] and not st["altered"] and not st["problem"],
            "missing": st["missing"], "altered": st["altered"], "shim": _shim_present(repo),
            "problem": st["problem"]}


def _hooks_state(repo: RepoPaths, hooks: HookReport) -> str:
    try:
        if owned.read(repo, hooks["file"]) is None:
            return "missing"
    except OSError:
        return "unreadable"
    if hooks["problem"] or hooks["altered"]:
        return "edited"
    return "stale" if hooks["missing"] else "current"


def _shim_present(repo: RepoPaths) -> bool:
    from gitmem.delivery import claude_settings

    return claude_settings.shim_path(repo).exists()


# -- per agent ----------------------------------------------------------------------------------

def _claude_install(repo: RepoPaths) -> list[str]:
    from gitmem.delivery import claude_settings

    return claude_settings.install(repo)


def _claude_remove(repo: RepoPaths) -> list[str]:
    from gitmem.delivery import claude_settings

    return claude_settings.uninstall(repo)


CODEX_TRUST = ("Codex runs a project's hooks only once each is trusted: review and trust gitmem's in "
               "Codex's /hooks (again whenever gitmem changes them)")


def _codex_install(repo: RepoPaths) -> list[str]:
    done = hooks_json.install(repo, CODEX_FILE, CODEX_HOOKS, "Codex")
    return [*done, CODEX_TRUST] if any(d.startswith("added") for d in done) else done


def _codex_remove(repo: RepoPaths) -> list[str]:
    return hooks_json.uninstall(repo, CODEX_FILE, "Codex")


def _generated_install(name: str) -> Callable[[RepoPaths], list[str]]:
    def install(repo: RepoPaths) -> list[str]:
        changed = refresh(repo, [name])
        folder, suffix, make = OWNED[name]
        wanted = make(content.compiled_rules(repo), None)
        return [f"wrote {path}" for path in changed] + [
            f"left {rel} alone: it is not gitmem's (gitmem writes no file of that name while it is there)"
            for rel in _developers_files(repo, folder, suffix) if rel in wanted]
    return install


def _generated_remove(folder: str, suffix: str) -> Callable[[RepoPaths], list[str]]:
    def remove(repo: RepoPaths) -> list[str]:
        done = []
        for rel in _present(repo, folder, suffix):
            outcome = owned.restore(repo, rel)
            if outcome == "left":
                done.append(f"left {rel} alone: it changed since gitmem wrote it")
                continue
            if outcome == "":
                owned.remove(repo, rel)
            done.append(f"restored {rel}" if outcome == "restored" else f"removed {rel}")
        return done
    return remove


def _gemini_install(repo: RepoPaths) -> list[str]:
    done = [f"wrote gitmem's section of {path}" for path in refresh(repo, ["gemini"])]
    return done + hooks_json.install(repo, GEMINI_SETTINGS, GEMINI_HOOKS, "Gemini CLI", comments=True)


def _gemini_remove(repo: RepoPaths) -> list[str]:
    return _remove_section(repo, generated.GEMINI_FILE) + \
        hooks_json.uninstall(repo, GEMINI_SETTINGS, "Gemini CLI", comments=True)


def _agents_md_install(repo: RepoPaths) -> list[str]:
    from gitmem.delivery import agents_md

    return [f"wrote gitmem's section of {agents_md.FILE_NAME}"] if _write_section(
        repo, agents_md.FILE_NAME, agents_md.section(repo)) else []


def _agents_md_remove(repo: RepoPaths) -> list[str]:
    from gitmem.delivery import agents_md

    return _remove_section(repo, agents_md.FILE_NAME)


_INSTALL: dict[str, Callable[[RepoPaths], list[str]]] = {
    "claude-code": _claude_install, "codex": _codex_install, "copilot": _generated_install("copilot"),
    "cursor": _generated_install("cursor"), "gemini": _gemini_install, "agents-md": _agents_md_install}
_REMOVE: dict[str, Callable[[RepoPaths], list[str]]] = {
    "claude-code": _claude_remove, "codex": _codex_remove,
    "copilot": _generated_remove(generated.COPILOT_DIR, generated.COPILOT_SUFFIX),
    "cursor": _generated_remove(generated.CURSOR_DIR, generated.CURSOR_SUFFIX),
    "gemini": _gemini_remove, "agents-md": _agents_md_remove}


# -- files --------------------------------------------------------------------------------------

def _named(repo: RepoPaths, folder: str, suffix: str) -> list[tuple[str, bytes]]:
    """(path, bytes) of the files in `folder` named as gitmem names its files, whoever wrote them."""
    try:
        names = sorted(p.name for p in (repo.worktree / folder).iterdir())
    except OSError:
        return []
    found = []
    for name in names:
        rel = f"{folder}/{name}"
        if name.startswith("gitmem") and name.endswith(suffix) and (data := owned.read(repo, rel)) is not None:
            found.append((rel, data))
    return found


def _present(repo: RepoPaths, folder: str, suffix: str) -> list[str]:
    """gitmem's generated files in `folder` (by name and header), whoever wrote them."""
    return [rel for rel, data in _named(repo, folder, suffix)
            if generated.is_generated(data.decode("utf-8", "replace"))]


def _sync(repo: RepoPaths, files: dict[str, str], folder: str, suffix: str,
          committed: Collection[str] = ()) -> list[str]:
    """Write `files`; generated files of `folder` that are no longer produced go. A generated file
    edited by hand (_edited) is left as it is, whether it would be rewritten or removed."""
    changed = []
    for rel, text in sorted(files.items()):
        current = owned.read(repo, rel)
        data = _as_checked_out(current, text)
        if current is not None and current != data and (
                _edited(repo, rel, current, committed) or _developers(repo, rel, current)):
            continue
        if owned.write(repo, rel, data, developers_part):
            changed.append(rel)
    for rel in _present(repo, folder, suffix):
        if rel in files:
            continue
        current = owned.read(repo, rel)
        if current is not None and _edited(repo, rel, current, committed):
            continue
        # what was there before gitmem first wrote it comes back (usually: nothing)
        outcome = owned.restore(repo, rel, lambda now, before: before)
        if outcome or owned.remove(repo, rel):
            changed.append(rel)
    return changed


def _as_checked_out(current: bytes | None, text: str) -> bytes:
    """`text` in the line ends of the work tree's file it replaces: a CRLF checkout (core.autocrlf)
    stays CRLF, as git writes it (an LF file there shows as modified until git touches it)."""
    return in_line_ends_of(current, text).encode("utf-8")


def _edited(repo: RepoPaths, rel: str, current: bytes, committed: Collection[str]) -> bool:
    """A generated file someone changed by hand: gitmem's (it carries gitmem's header, or gitmem
    wrote it from this machine: an edit may take the header out) but neither what gitmem last
    wrote there from this machine nor, unchanged, what HEAD holds (a teammate's regeneration
    arrives committed)."""
    return (rel not in committed and not owned.is_written(repo, rel, current)
            and (generated.is_generated(current.decode("utf-8", "replace")) or owned.is_recorded(repo, rel)))


def _developers(repo: RepoPaths, rel: str, current: bytes) -> bool:
    """A file under gitmem's name that gitmem never wrote (no header, never written from this
    machine): the developer's own, which gitmem does not overwrite."""
    return not generated.is_generated(current.decode("utf-8", "replace")) and not owned.is_recorded(repo, rel)


def _developers_files(repo: RepoPaths, folder: str, suffix: str) -> list[str]:
    """The developer's own files under gitmem's names in `folder`."""
    return [rel for rel, data in _named(repo, folder, suffix) if _developers(repo, rel, data)]


def _write_section(repo: RepoPaths, rel: str, section: str) -> bool:
    from gitmem.delivery import agents_md

    current = owned.read(repo, rel)
    text = current.decode("utf-8") if current is not None else ""
    updated = agents_md.replace_section(text, section)
    return updated != text and owned.write(repo, rel, updated.encode("utf-8"), developers_part)


def developers_part(data: bytes) -> bytes | None:
    """What of an agent file gitmem is about to write is the developer's (owned.Theirs): none of a
    file gitmem generated (a teammate's rendering, committed), all but the section of a file
    holding gitmem's section (none when nothing else is left), the whole of any other."""
    from gitmem.delivery import agents_md

    text = data.decode("utf-8", "surrogateescape")
    if generated.is_generated(text):
        return None
    if agents_md.find_section(text) is None:
        return data
    rest = _without_section(text)
    return rest.encode("utf-8", "surrogateescape") if rest.strip() else None


def _remove_section(repo: RepoPaths, rel: str) -> list[str]:
    """The file without gitmem's section: the original bytes when nothing else changed."""
    from gitmem.delivery import agents_md

    def strip(now: bytes, before: bytes | None) -> bytes | None:
        text = _without_section(now.decode("utf-8", "surrogateescape"))
        if before is not None:
            original = before.decode("utf-8", "surrogateescape")
            if text in (original, original + agents_md.separator(original)):
                return before
        elif not text.strip():
            return None
        return text.encode("utf-8", "surrogateescape")

    outcome = owned.restore(repo, rel, strip)
    if outcome == "":
        current = owned.read(repo, rel)
        if current is None:
            return []
        text = current.decode("utf-8", "surrogateescape")
        stripped = _without_section(text)
        if stripped == text:
            return []
        if not stripped.strip():  # the section was the whole file (as it came through git): gitmem's
            (repo.worktree / rel).unlink()
            return [f"removed {rel} (gitmem's section was all it held)"]
        (repo.worktree / rel).write_bytes(stripped.encode("utf-8", "surrogateescape"))
    return [f"removed gitmem's section from {rel}"]


def _without_section(text: str) -> str:
    from gitmem.delivery import agents_md

    found = agents_md.find_section(text)
    if found is None:
        return text
    start, _, _, after = found
    return text[:start] + text[after:]


def _ensure_shim(repo: RepoPaths) -> list[str]:
    """The machine-local hook Codex and Gemini CLI run too (written by Claude Code's install)."""
    import os

    from gitmem.delivery import claude_settings

    shim = claude_settings.shim_path(repo)
    text = claude_settings.shim_text(sys.executable)
    if shim.exists() and shim.read_text(encoding="utf-8", errors="replace") == text:
        return []
    shim.parent.mkdir(parents=True, exist_ok=True)
    shim.write_text(text, encoding="utf-8")
    os.chmod(shim, 0o755)
    return ["wrote the agents' hook shim (.git/gitmem/claude-hook)"]


def _register_merge_driver(repo: RepoPaths) -> list[str]:
    driver = git.merge_driver_command(sys.executable, "gitmem.delivery.agents.merge", "%O %A %B %P")
    if git.set_merge_driver(repo, MERGE_DRIVER, driver, "gitmem: generated agent files", MERGE_ATTRIBUTES):
        return ["configured the merge driver for generated agent files"]
    return []


def _unregister_merge_driver(repo: RepoPaths) -> list[str]:
    if git.unset_merge_driver(repo, MERGE_DRIVER, MERGE_ATTRIBUTES):
        return ["removed the merge driver for generated agent files"]
    return []

"""Claude Code's hooks enter gitmem here: the event as JSON on stdin, context as JSON on stdout.

.claude/settings.json runs .git/gitmem/claude-hook (written by claude_settings.py), which runs
this module under `python -I -S` with sys.path set to the standard library plus the folders
holding gitmem (and, for the rare rebuild, its dependencies).

Speed: this runs in front of every tool call. The fast path imports os, sys, time, fcntl (msvcrt
on native Windows), the json accelerator through gitmem.base.fastjson, and gitmem's delivery
modules (deliver, delivery_data, sessions, delivery_log, decl_ranges), which import nothing else.
Measured on the 2-core dev machine under load: `import json` alone costs as much as starting the
interpreter (it imports re and enum); gitmem.base.paths ≈ 20 ms (dataclasses pulls in inspect;
pathlib); gitmem.store.index ≈ 10 ms more (tempfile, typing). So the repository is located with
os.path below, and paths/index are imported only when the compiled rules must be rebuilt, once
after each change to the store.

Protocol (Claude Code hooks reference): input fields session_id, transcript_path, cwd,
hook_event_name, plus source (SessionStart), prompt (UserPromptSubmit), tool_name and
tool_input (PreToolUse, PostToolUse), agent_id and agent_type (SubagentStart, and every tool
event inside a subagent: what was shown is kept per session and agent). Codex CLI sends the
same shapes (its file edits as tool `apply_patch` with the patch text in tool_input.command,
see gitmem.hook.patch); Windows sessions run shell commands with the `PowerShell` tool as well
as `Bash`. The repository is the one the edited file, else the cwd, else CLAUDE_PROJECT_DIR
lies in (an agent working in a linked worktree edits that worktree). Context goes back as
{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}} with exit status 0.
The hook never blocks or fails the agent's action: any internal error means exit 0, no output,
and a traceback in .git/gitmem/errors.log.
"""

from __future__ import annotations

import os
import sys
import time

from gitmem.base import fastjson
from gitmem.base.locate import inside, locate, relative
from gitmem.code import decl_ranges
from gitmem.delivery import compiled, shown
from gitmem.delivery import log as delivery_log
from gitmem.delivery import rules as delivery_rules
from gitmem.hook import readonly

TYPE_CHECKING = False  # no typing import on the hook path
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Required, TypedDict, TypeGuard

    from gitmem.code.decl_ranges import RangeRecord
    from gitmem.delivery.compiled import DeliveryData
    from gitmem.delivery.shown import SessionRecord

    class Payload(TypedDict, total=False):
        """The event from Claude Code: only the event name is checked before use, the rest as read."""

        hook_event_name: Required[str]  # one of HANDLED
        session_id: object
        transcript_path: object
        cwd: object
        source: object  # SessionStart
        agent_id: object  # SubagentStart, and tool events inside a subagent
        agent_type: object
        prompt: object  # UserPromptSubmit
        tool_name: object  # PreToolUse, PostToolUse
        tool_input: object

HANDLED = ("SessionStart", "SubagentStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop",
           "SessionEnd", "AfterTool", "BeforeAgent", "BeforeTool", "AfterAgent", "PreCompress")
GEMINI_COMPRESS = "PreCompress"  # Gemini CLI is about to compress its context (nothing is answered)
# Gemini CLI: context can be added after a tool ran (AfterTool) and to a prompt (BeforeAgent);
# its tools by their Claude Code names. Answers keep Gemini's event name.
GEMINI_EVENTS = {"AfterTool": "PreToolUse", "BeforeAgent": "UserPromptSubmit"}
GEMINI_TOOLS = {"read_file": "Read", "write_file": "Write", "replace": "Edit", "run_shell_command": "Bash"}
GEMINI_MANY_FILES = "read_many_files"  # its `include` names files, folders and globs
MAX_MANY_FILES = 64  # files of one read_many_files call delivered for, at most
GEMINI_CHECKED = "BeforeTool"  # Gemini CLI asks before a tool runs only to let a hook refuse it
# handed to gitmem.hook.capture (Gemini CLI's as the Claude Code events they are: capture.GEMINI_EVENTS)
CAPTURED = ("UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd", "BeforeAgent", "AfterTool", "AfterAgent")
FILE_TOOLS = {"Read": "read", "Edit": "edit", "Write": "edit", "MultiEdit": "edit", "NotebookEdit": "edit"}
REGION_TOOLS = ("Edit", "MultiEdit")  # name the edited text, so symbol anchors can narrow
SHELL_TOOLS = ("Bash", "PowerShell")  # PowerShell: Claude Code on Windows
PATCH_TOOL = "apply_patch"  # Codex CLI: tool_input.command holds the patch
_GIT_NAMES = ("git", "git.exe")
# An event larger than this is not read whole: a tool call that large is refused (its target
# cannot be checked, and the agent stays read-only), any other event goes unanswered.
MAX_INPUT_BYTES = 64 * 1024 * 1024
TOO_LARGE = ("gitmem cannot check a tool call larger than 64 MiB for writes to the repository's memory "
             "(.gitmem/); write it in smaller parts")
NESTED_TOO_DEEP = ("gitmem cannot check a command nested this deeply for writes to the repository's memory "
                   "(.gitmem/); run it in simpler steps")
TOO_SLOW = ("gitmem cannot check a command this long for writes to the repository's memory (.gitmem/) in "
            "time; run it in smaller parts")
# The read-only check's share of the agents' hook timeout (10 s as gitmem installs them): a tool
# call it has not cleared by then is refused, never let through because the agent stopped waiting.
CHECK_LIMIT_S = 4.0
LONG_INPUT_CHARS = 8192  # below this a tool call is read in well under a second: no deadline needed


class _Overtime(Exception):
    pass
# commit's options whose value is the next word (git's own before the subcommand: readonly.GIT_VALUE_OPTIONS)
_COMMIT_VALUE_OPTIONS = ("--message", "--file", "--reuse-message", "--reedit-message", "--author", "--date",
                         "--template", "--fixup", "--squash", "--cleanup", "--trailer", "--pathspec-from-file")


def main() -> int:
    state: str | None = None
    where: tuple[str, str, str] | None = None
    payload: Payload | None = None
    hook: Hook | None = None
    try:
        raw = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        if len(raw) > MAX_INPUT_BYTES:
            while sys.stdin.buffer.read(1 << 20):
                pass  # the agent waits for its whole event to be read
            _refuse_unread(raw)
            return 0
        data = fastjson.loads(raw) if raw.strip() else None
        if not _is_payload(data):
            return 0
        payload = data
        where = _locate(payload)
        if where is None:
            return 0  # not a gitmem repository: stay silent
        state = os.path.join(where[2], "gitmem")
        hook = Hook(payload, *where)
        denied = _denied(payload, where)
        text = "" if denied or hook.event == GEMINI_CHECKED else hook.deliver()
        if denied:  # the agent stays read-only: memory holds only what the developer said
            refusal = {"decision": "deny", "reason": denied} if hook.event == GEMINI_CHECKED \
                else readonly.deny_output(denied)
            sys.stdout.write(fastjson.dumps(refusal))
            sys.stdout.flush()
        else:
            out: dict[str, object] = {}
            if text:
                out["hookSpecificOutput"] = {"hookEventName": hook.event, "additionalContext": text}
            notice = _git_hooks_notice(payload, where)
            if notice:  # shown to the developer, not the agent
                out["systemMessage"] = notice
            if out:
                sys.stdout.write(fastjson.dumps(out))  # ASCII only: safe whatever the locale
                sys.stdout.flush()
    except Exception:
        _log_error(state, "claude hook")
    if where is not None and state is not None and payload is not None \
            and payload["hook_event_name"] in CAPTURED:
        try:  # capture does not depend on delivery having worked
            _capture(where, payload)
        except Exception:
            _log_error(state, "claude hook (capture)")
    if hook is not None:
        try:
            hook.finish()
        except Exception:
            _log_error(state, "claude hook")
    return 0


def _git_hooks_notice(payload: Payload, where: tuple[str, str, str]) -> str | None:
    """When a session opens (not after a compaction or a clear): a line for the developer if git no
    longer runs gitmem's hooks (gitmem.githooks.presence)."""
    if payload["hook_event_name"] != "SessionStart" or _text(payload.get("source")) not in (None, "startup", "resume"):
        return None
    from gitmem.githooks.presence import hooks_not_run

    return hooks_not_run(*where)


def _is_payload(data: object) -> TypeGuard[Payload]:
    return isinstance(data, dict) and data.get("hook_event_name") in HANDLED


def _locate(payload: Payload) -> tuple[str, str, str] | None:
    """The gitmem repository of the file the tool touches, else of the cwd, else of the project.

    The file first: an agent that entered a linked worktree edits files there while
    CLAUDE_PROJECT_DIR still names the main checkout. None outside any gitmem repository.
    """
    cwd = _text(payload.get("cwd"))
    starts: list[str | None] = []
    tool_input = payload.get("tool_input")
    if isinstance(tool_input, dict):
        raw = (_text(tool_input.get("file_path")) or _text(tool_input.get("notebook_path"))
               or _text(tool_input.get("absolute_path")))
        if raw is None and payload.get("tool_name") == PATCH_TOOL:
            from gitmem.hook import patch

            named = patch.paths(_text(tool_input.get("command")) or "")
            raw = named[0] if named else None
        if raw is not None and (cwd or os.path.isabs(raw)):
            starts.append(os.path.dirname(os.path.join(cwd or "", raw)))
    try:
        here: str | None = os.getcwd()
    except OSError:  # the hook's own folder was deleted: the payload's cwd and the project still count
        here = None
    starts += [cwd, os.environ.get("CLAUDE_PROJECT_DIR"), here]
    tried: set[str] = set()
    for start in starts:
        if not start or start in tried:
            continue
        tried.add(start)
        where = locate(start)
        if where is not None and os.path.isdir(os.path.join(where[0], ".gitmem")):
            return where
    return None


def git_invocations(command: str, depth: int = 0) -> list[tuple[str | None, str, list[str]]]:
    """(the folder of `-C DIR` or None, the subcommand, its arguments) of each git command in
    command position: behind assignments, launchers (`sudo -u x`, `timeout 60`, `env A=1`), shell
    keywords (`then git commit`), inside `$(…)`, `bash -c '…'` and `eval`; `/usr/bin/git` too.
    `echo git commit` is none."""
    found: list[tuple[str | None, str, list[str]]] = []
    for segment in readonly.segments(command):
        words = readonly.command_words(segment)
        inner = readonly.shell_code(words) if depth < readonly.MAX_DEPTH else None
        if inner is not None:
            found += git_invocations(inner, depth + 1)
        elif (invocation := _git_invocation(words)) is not None:
            found.append(invocation)
    return found


def _git_invocation(words: list[str]) -> tuple[str | None, str, list[str]] | None:
    """One simple command's words (readonly.command_words) as a git invocation, or None."""
    if not words or os.path.basename(words[0]) not in _GIT_NAMES:  # PowerShell: & "git" commit
        return None
    i, folder = 1, None
    while i < len(words) and words[i].startswith("-"):
        if words[i] == "-C" and i + 1 < len(words):
            folder = words[i + 1] if folder is None else os.path.join(folder, words[i + 1])
        i += 2 if words[i] in readonly.GIT_VALUE_OPTIONS else 1
    return (folder, words[i], words[i + 1:]) if i < len(words) else None


def _braces(pattern: str, limit: int = 64) -> list[str]:
    """A glob's brace alternatives spelled out (`src/*.{py,ts}`: `src/*.py`, `src/*.ts`), as the
    glob Gemini CLI's tools use reads them; at most `limit` of them."""
    depth, start = 0, -1
    for i, ch in enumerate(pattern):
        if ch == "{":
            depth, start = depth + 1, i if depth == 0 else start
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                options, level, last = [], 0, start + 1
                for k in range(start + 1, i):
                    level += {"{": 1, "}": -1}.get(pattern[k], 0)
                    if pattern[k] == "," and level == 0:
                        options.append(pattern[last:k])
                        last = k + 1
                if not options:
                    continue  # `{x}` is no alternation
                options.append(pattern[last:i])
                out: list[str] = []
                for option in options:
                    out += _braces(pattern[:start] + option + pattern[i + 1:], limit - len(out))
                    if len(out) >= limit:
                        break
                return out[:limit]
    return [pattern]


def walk_command(command: str, cwd: str, depth: int = 0) -> tuple[tuple[str, ...], list[tuple[str, str, list[str]]]]:
    """The folders a command line's words may be relative to (`cwd`, then each folder a `cd` in it
    moves to: `cd src && sed -i … ledger.ts` names src/ledger.ts), and its git invocations with the
    folder each runs in (moved by the `cd`s before it and by its own `-C`; inside `bash -c '…'`
    and `eval` too)."""
    here, bases, found = cwd, [cwd], []
    for segment in readonly.segments(command):
        words = readonly.command_words(segment)
        inner = readonly.shell_code(words) if depth < readonly.MAX_DEPTH else None
        if inner is not None:
            inner_bases, inner_found = walk_command(inner, here, depth + 1)
            bases += [b for b in inner_bases if len(bases) < readonly.MAX_BASES]
            found += inner_found
            continue
        target = readonly.cd_target(words)
        if target is not None:
            here = os.path.normpath(os.path.join(here, target))
            if len(bases) < readonly.MAX_BASES:
                bases.append(here)
            continue
        invocation = _git_invocation(words)
        if invocation is not None:
            folder, sub, args = invocation
            found.append((os.path.normpath(os.path.join(here, os.path.expanduser(folder or "."))), sub, args))
    return tuple(dict.fromkeys(bases)), found


def git_commits(command: str) -> list[tuple[str | None, list[str]]]:
    """(the `-C` folder or None, the arguments after `commit`) of each `git … commit`."""
    return [(folder, args) for folder, sub, args in git_invocations(command) if sub == "commit"]


def is_git_commit(command: str) -> bool:
    return bool(git_commits(command))


def added_pathspecs(args: list[str]) -> list[str]:
    """The pathspecs a `git add` before a commit in the same command line is given (`git add -A &&
    git commit`); "" for everything (-A, --all, -u; `.` counts as a named pathspec)."""
    return ([""] if any(a in ("-A", "--all", "-u", "--update") for a in args) else []) + \
        [a for a in args if not a.startswith("-")]


def commit_pathspecs(args: list[str]) -> list[str]:
    """The files a `git commit` names (`git commit -m x src/a.py`): it commits those as they are
    in the work tree, staged or not."""
    out, k, literal = [], 0, False
    while k < len(args):
        arg = args[k]
        if literal or not arg.startswith("-"):
            out.append(arg)
        elif arg == "--":
            literal = True
        elif arg in _COMMIT_VALUE_OPTIONS:
            k += 1
        elif not arg.startswith("--"):
            for n, letter in enumerate(arg[1:]):
                if letter in "mFCct":  # the rest of the word is its value, or else the next word
                    k += n == len(arg) - 2
                    break
        k += 1
    return out


def _covers(spec: str, path: str) -> bool:
    """Whether a pathspec (repository-relative) names `path`: itself, a folder above it, a glob."""
    if spec == "." or path == spec or path.startswith(spec.rstrip("/") + "/"):
        return True
    return any(ch in spec for ch in "*?[") and readonly.glob_matches(spec, path)


def commits_all(args: list[str]) -> bool:
    """`commit -a`, `-am`, `--all`: the commit takes every modified tracked file."""
    for arg in args:
        if arg == "--all":
            return True
        if arg.startswith("-") and not arg.startswith("--"):
            for flag in arg[1:]:
                if flag == "a":
                    return True
                if flag in "mFCcSut":  # the rest of the word is this option's value
                    break
    return False


class Hook:
    """One hook call: decide what to deliver, remember it, and what to do after answering."""

    def __init__(self, payload: Payload, worktree: str, git_dir: str, common_dir: str) -> None:
        self.payload = payload
        self.event = payload["hook_event_name"]
        self.worktree, self.git_dir, self.common_dir = worktree, git_dir, common_dir
        self.state = os.path.join(common_dir, "gitmem")
        self.session = _text(payload.get("session_id")) or "unknown"
        # A subagent's context holds only what it was given: its own record of what it was shown.
        self.agent = _text(payload.get("agent_id"))
        self.record_key = self.session if self.agent is None else f"{self.session}.agent-{self.agent}"
        self.now = time.time()
        self.stale: list[str] = []  # symbol-anchored files whose ranges need a refresh
        self._rules: DeliveryData | None = None
        self._content: dict[str, bytes | None] = {}
        self._ranges: dict[str, RangeRecord] | None = None
        self._records: dict[str, RangeRecord | None] = {}
        self._commit: set[str] | None = None
        self._walked: tuple[str, tuple[tuple[str, ...], list[tuple[str, str, list[str]]]]] | None = None
        self._patch: dict[str, list[str]] = {}  # apply_patch: file -> old text of each hunk

    @property
    def rules(self) -> DeliveryData:
        if self._rules is None:
            self._rules = compiled.load(self.worktree, self.git_dir, self.common_dir)
        return self._rules

    # -- events -------------------------------------------------------------------------
    def deliver(self) -> str:
        if self.event == "SessionStart":
            source = _text(self.payload.get("source")) or "startup"
            if source == "fork":  # a copy of another conversation: it holds what that one was shown
                return self._deliver(delivery_rules.Cue("session-start", source=source), seed=self._forked)
            # startup, clear and compact begin with an empty context; resume keeps its transcript.
            return self._deliver(delivery_rules.Cue("session-start", source=source), reset=source != "resume")
        if self.event == "SubagentStart":  # a fresh context: the subagent gets the repository block
            return self._deliver(delivery_rules.Cue("session-start", source="subagent"), reset=True)
        if self.event == GEMINI_COMPRESS:
            # What hooks put in the context goes with the compression; GEMINI.md as the session read
            # it at its start stays (Gemini CLI does not read it again): entries are delivered again
            # at their next moments, as after Claude Code's compaction, and what changed since the
            # start (a rule added, one withdrawn) is news again.
            with shown.Locked(self.state, self.record_key) as locked:
                started = locked.record.get("gemini_md")
                locked.reset()
                if not self._restore_gemini_md(locked.record, started):
                    self._read_gemini_md(locked.record)
                locked.save()
            return ""
        event = GEMINI_EVENTS.get(self.event, self.event)
        if event == "UserPromptSubmit":
            return self._deliver(delivery_rules.Cue("prompt", text=_text(self.payload.get("prompt")) or ""))
        if event == "PreToolUse":
            texts: list[str] = []
            room = delivery_rules.MAX_CONTEXT_CHARS
            for cue in self._tool_cues():  # several only for a patch naming several files
                text = self._deliver(cue, limit=room)
                if text:
                    texts.append(text)
                    room -= len(text) + 1
            return "\n".join(texts)
        if self.event == "PostToolUse":
            self._after_edit()
        return ""

    def _read_gemini_md(self, record: SessionRecord) -> bool:
        """Gemini CLI reads the repository block from GEMINI.md as its session starts (no hook
        delivers it): its first moment takes those entries as known, so what comes in later is
        announced once, the ones the block holds as delivered at session start, so a later moment
        does not repeat them, and the withdrawals GEMINI.md lists are not announced again. Whether
        the record changed."""
        if isinstance(record.get("known"), list):
            return False
        today = time.strftime("%Y-%m-%d", time.gmtime(self.now))
        record["known"] = delivery_rules.session_start_ids(self.rules, today)
        active = self.rules.get("active") or {}
        versions = record.setdefault("versions", {})
        block: dict[str, str] = {}
        for entry_id in delivery_rules.session_start_selection(self.rules, today)[0]:
            record["delivered"].setdefault(entry_id, "session-start")
            versions[entry_id] = block[entry_id] = delivery_rules.version(active[entry_id])
        record["gemini_md"] = {"known": list(record["known"]), "versions": block}
        return True

    @staticmethod
    def _restore_gemini_md(record: SessionRecord, started: object) -> bool:
        """Take GEMINI.md's block as the session read it at its start (`started`, from
        _read_gemini_md) as what the context holds; False when there is no such record."""
        if not isinstance(started, dict):
            return False
        known, block = started.get("known"), started.get("versions")
        if not isinstance(known, list) or not isinstance(block, dict):
            return False
        record["known"] = [k for k in known if isinstance(k, str)]
        versions = record.setdefault("versions", {})
        for entry_id, version in block.items():
            if isinstance(entry_id, str) and isinstance(version, str):
                record["delivered"][entry_id] = "session-start"
                versions[entry_id] = version
        record["gemini_md"] = started
        return True

    def _tool_cues(self) -> list[delivery_rules.Cue]:
        tool = _text(self.payload.get("tool_name"))  # anything but a string names no tool
        tool_input = self.payload.get("tool_input")
        if not isinstance(tool_input, dict):
            return []
        if self.event == "AfterTool" and tool == GEMINI_MANY_FILES:
            return [delivery_rules.Cue("read", path, done=True) for path in self._many_files(tool_input)]
        if self.event == "AfterTool" and isinstance(tool, str):
            tool = GEMINI_TOOLS.get(tool)
            new = _text(tool_input.get("new_string"))
            path = self._path(tool_input)
            if tool == "Edit" and new and path:  # the edit has landed: its new text shows where
                self._patch[path] = [new]
        if tool in SHELL_TOOLS:
            command = _text(tool_input.get("command"))
            if not command:
                return []
            if tool == "PowerShell":  # Windows paths: tests\test_db.py names tests/test_db.py
                command = command.replace("\\", "/")
            done = self.event == "AfterTool"
            bases = self._walk(command)[0]
            return [delivery_rules.Cue("commit" if self._commits_here(command) else "run", text=command,
                                       bases=bases, done=done), *self._shell_file_cues(command, bases, done)]
        if tool == PATCH_TOOL:
            return [delivery_rules.Cue("edit", path, narrow=path in self._patch) for path in self._patched_paths()]
        if tool not in FILE_TOOLS:
            return []
        path = self._path(tool_input)
        if path is None:
            return []
        if tool == "Read" and path in compiled.symbol_anchored_paths(self.rules):
            self._fresh_ranges(path)  # refreshed if stale, ready for the edit that usually follows
        return [delivery_rules.Cue(FILE_TOOLS[tool], path, narrow=tool in REGION_TOOLS, done=self.event == "AfterTool")]

    def _many_files(self, tool_input: Mapping[str, object]) -> list[str]:
        """The repository's files Gemini's read_many_files read: those it names, and the anchored
        ones its globs or folders take in (`src/**/*.py`, `src/`)."""
        import fnmatch

        names = tool_input.get("include") or tool_input.get("paths")
        cwd = _text(self.payload.get("cwd"))
        anchored = sorted(self.rules.get("anchored") or {})
        found: list[str] = []
        for name in names if isinstance(names, list) else []:
            raw = _text(name)
            path = relative(self.worktree, raw, cwd) if raw else None
            if path is None and raw and os.path.normpath(os.path.join(cwd or self.worktree, raw)) == \
                    os.path.normpath(self.worktree):
                path = ""  # the project itself (`.`): every file in it
            if path is None:
                continue
            if any(ch in path for ch in "*?[{"):
                patterns = [p for one in _braces(path) for p in (one, one.replace("**/", ""))]  # `**/`: no folder too
                found += [a for a in anchored if any(fnmatch.fnmatchcase(a, p) for p in patterns)]
            elif os.path.isdir(os.path.join(self.worktree, path)):
                found += [a for a in anchored if a.startswith(path.rstrip("/") + "/") or path in ("", ".")]
            else:
                found.append(path)
        return list(dict.fromkeys(found))[:MAX_MANY_FILES]

    def _shell_file_cues(self, command: str, bases: tuple[str, ...], done: bool) -> list[delivery_rules.Cue]:
        """The repository's files a shell command reads or writes (`cat f`, `sed -i … f`, `> f`),
        as the file tools' moments: a write is an edit of the whole file (the region is unknown)."""
        from gitmem.hook import patch

        found: dict[str, bool] = {}
        applied = patch.in_shell_command(command)
        if applied is not None:
            found.update(dict.fromkeys(self._patched_paths(applied, patch.shell_folder(command)), True))
        for word, written in readonly.file_operands(command):
            paths = [p for base in bases if (p := relative(self.worktree, os.path.expanduser(word), base))]
            # the file as it is there; a file the command creates, from the last folder it moved to
            path = next((p for p in paths if os.path.isfile(os.path.join(self.worktree, p))),
                        paths[-1] if written and paths else None)
            if path is not None:
                found[path] = found.get(path, False) or written
        return [delivery_rules.Cue("edit" if written else "read", path, done=done) for path, written in found.items()]

    def _patched_paths(self, text: str | None = None, folder: str = "") -> list[str]:
        """Repository-relative files an apply_patch names (the tool's input, or `text`, applied in
        `folder` of the session's: `cd src && apply_patch`); updates keep their hunks for narrowing."""
        from gitmem.hook import patch

        if text is None:
            tool_input = self.payload.get("tool_input")
            text = (_text(tool_input.get("command")) if isinstance(tool_input, dict) else None) or ""
        cwd = _text(self.payload.get("cwd"))
        if folder:
            cwd = os.path.join(cwd or self.worktree, os.path.expanduser(folder))
        found: list[str] = []
        for change in patch.parse(text):
            for raw in (change.path, change.moved_to):
                path = relative(self.worktree, raw, cwd) if raw else None
                if path is None or path in found:
                    continue
                found.append(path)
                if raw == change.path and change.op == "update" and change.hunks and all(change.hunks):
                    self._patch[path] = change.hunks  # else: the whole file counts
        return found

    def _forked(self, record: SessionRecord) -> None:
        """A forked session's record starts as what its transcript shows it was given."""
        from gitmem.hook import fork

        found = fork.seen(_text(self.payload.get("transcript_path")) or "")
        if found is None:  # unreadable: the parent had its repository block and withdrawals
            today = _utc_day(self.now)
            delivered = set(delivery_rules.session_start_selection(self.rules, today)[0])
            withdrawn = set(delivery_rules.recent_retractions(self.rules, self.now))
        else:
            delivered, withdrawn = found
        for entry_id in sorted(delivered):
            record["delivered"].setdefault(entry_id, "fork")
        for entry_id in sorted(withdrawn):
            record["retracted"].setdefault(entry_id, "fork")

    def _path(self, tool_input: Mapping[str, object]) -> str | None:
        raw = (_text(tool_input.get("file_path")) or _text(tool_input.get("notebook_path"))
               or _text(tool_input.get("absolute_path")))  # Gemini CLI's read_file
        return relative(self.worktree, raw, _text(self.payload.get("cwd"))) if raw else None

    def _deliver(self, cue: delivery_rules.Cue, reset: bool = False,
                 seed: Callable[[SessionRecord], None] | None = None,
                 limit: int = delivery_rules.MAX_CONTEXT_CHARS) -> str:
        rules = self.rules
        with shown.Locked(self.state, self.record_key) as locked:
            if reset:
                locked.reset()
            seeded = seed is not None
            if seed is not None:
                seed(locked.record)
            elif self.event in GEMINI_EVENTS:  # saved only the once it changes the record
                seeded = self._read_gemini_md(locked.record)
            new_session = cue.source == "startup"
            block = None if new_session else self._block(locked.record)
            result = delivery_rules.plan(rules, cue, locked.record, now=self.now, worktree=self.worktree,
                                  symbol_hit=self._symbol_hit, commit_paths=self._commit_paths,
                                  relevance=lambda: delivery_log.budget_ranking(self.state, new_session=new_session,
                                                                                block=block),
                                  limit=limit)
            if new_session:
                locked.record["block"] = [i for i in result.known if i not in result.left_out]
            versions = locked.record.setdefault("versions", {})
            for entry_id in result.active:
                locked.record["delivered"][entry_id] = "session-start" if entry_id in result.wide else cue.event
                locked.record["retracted"].pop(entry_id, None)  # active again: a later withdrawal is news
                versions[entry_id] = delivery_rules.version(rules["active"][entry_id])
            for entry_id in result.retractions:
                locked.record["retracted"][entry_id] = cue.event
            if cue.event == "session-start" or result.known:
                locked.record["known"] = result.known
            if result.owed is not None:
                locked.record["owed"] = result.owed
            if result.owed_retractions is not None:
                locked.record["owed_retractions"] = result.owed_retractions
            if reset or seeded or result.active or result.retractions or cue.event == "session-start" \
                    or result.known or result.owed is not None:
                locked.save()
        try:  # the record is saved: the text goes to the agent whatever the log's fate (a full disk)
            moment = [i for i in result.active if i not in result.wide]
            if moment or result.retractions:
                delivery_log.append(self.state, session=self.session, event=cue.event, path=cue.path,
                                    delivered=moment, retracted=result.retractions,
                                    source=cue.source, at=self.now)
            if result.wide:  # the session start's entries, brought late (arrivals, what a cut owed): not this cue's
                delivery_log.append(self.state, session=self.session, event="session-start", path=None,
                                    delivered=result.wide, retracted=[], source=cue.source, at=self.now)
            if cue.source == "startup":  # not a subagent's or a compaction's: the session keeps its rules
                delivery_log.left_out(self.state, result.left_out, self.now)
                shown.prune(self.state)
        except OSError:
            _log_error(self.state, "delivery log")
        return result.text

    def _block(self, record: SessionRecord) -> list[str] | None:
        """The session-start block this session began with: its own record's (kept through a
        compaction), or for a subagent its parent session's."""
        block = record.get("block")
        if not isinstance(block, list) and self.agent is not None:
            block = shown.read(self.state, self.session).get("block")
        return [i for i in block if isinstance(i, str)] if isinstance(block, list) else None

    # -- symbol anchors -----------------------------------------------------------------
    def _symbol_hit(self, path: str, symbol: str) -> bool:
        """Does this Edit/MultiEdit touch `symbol`'s declaration? True whenever unsure."""
        record = self._fresh_ranges(path)
        if record is None:
            # Stale: the ranges were computed for other content (an edit landed and the
            # background refresh has not finished) or never. Deliver rather than miss.
            return True
        ranges = decl_ranges.symbol_ranges(record, symbol)
        content = self._read(path)
        edits: object = self.payload.get("tool_input")
        if path in self._patch:  # a patch's hunks, as the old text of edits
            edits = {"edits": [{"old_string": old} for old in self._patch[path]]}
        regions = edit_regions(content, edits) if content is not None else None
        if ranges is None or regions is None:
            return True  # symbol not declared there, or the edited text not found: whole file
        return any(start <= last and first <= end for first, last in regions for start, end in ranges)

    def _fresh_ranges(self, path: str) -> RangeRecord | None:
        """The file's declaration ranges when they match its current content; else None, and a refresh."""
        if path not in self._records:
            if self._ranges is None:
                self._ranges = decl_ranges.read(self.state)
            record = self._ranges.get(path)
            try:
                st = os.stat(os.path.join(self.worktree, path))
            except OSError:
                st = None
            ok = st is not None and decl_ranges.fresh(record, st, lambda: self._read(path))
            if not ok:
                self.stale.append(path)
            self._records[path] = record if ok else None
        return self._records[path]

    def _read(self, path: str) -> bytes | None:
        if path not in self._content:
            try:
                with open(os.path.join(self.worktree, path), "rb") as handle:
                    data = handle.read(decl_ranges.MAX_BYTES + 1)
                self._content[path] = data if len(data) <= decl_ranges.MAX_BYTES else None
            except OSError:
                self._content[path] = None
        return self._content[path]

    def _after_edit(self) -> None:
        tool = _text(self.payload.get("tool_name"))
        tool_input = self.payload.get("tool_input")
        if not isinstance(tool_input, dict):
            return
        from gitmem.hook import patch

        command = _text(tool_input.get("command")) or ""
        applied = patch.in_shell_command(command) if tool in SHELL_TOOLS else None
        if tool == PATCH_TOOL:
            paths = self._patched_paths()
        elif applied is not None:
            paths = self._patched_paths(applied, patch.shell_folder(command))
        elif tool in FILE_TOOLS and FILE_TOOLS[tool] == "edit":
            path = self._path(tool_input)
            paths = [path] if path is not None else []
        else:
            return
        # The ranges file lists every file with symbol anchors (as of the last refresh; `gitmem
        # add` refreshes it): a cheaper question than compiling the rules after every edit.
        self._ranges = decl_ranges.read(self.state)
        for path in paths:
            if path in self._ranges:
                self._fresh_ranges(path)

    def _commits_here(self, command: str) -> bool:
        """Whether the command commits in this work tree (`git -C ../other commit` and
        `cd ../other && git commit` do not)."""
        root = os.path.realpath(self.worktree)
        return any(sub == "commit" and inside(os.path.realpath(folder), root)
                   for folder, sub, _ in self._walk(command)[1])

    def _walk(self, command: str) -> tuple[tuple[str, ...], list[tuple[str, str, list[str]]]]:
        """walk_command from where the command runs (the session's cwd, or the folder Gemini's shell
        tool is given in `dir_path`), read once per command."""
        if self._walked is None or self._walked[0] != command:
            start = _text(self.payload.get("cwd")) or self.worktree
            tool_input = self.payload.get("tool_input")
            folder = next((f for key in ("dir_path", "directory") if isinstance(tool_input, dict)
                           and (f := _text(tool_input.get(key))) and f.strip()), None)
            if folder:  # as the read-only check reads it (readonly.denial)
                start = os.path.normpath(os.path.join(start, os.path.expanduser(folder.strip())))
            self._walked = (command, walk_command(command, start))
        return self._walked[1]

    def _commit_paths(self) -> set[str]:
        """Files the commit about to run would include: staged ones, plus tracked changes with -a
        (after Gemini's shell tool ran it, the files of the commit it made, too).

        Asked only when a commit rule names files; one `git status`, spawned without importing
        subprocess (≈ 5 ms).
        """
        if self._commit is None:
            tool_input = self.payload.get("tool_input")  # a dict: checked by _tool_cues
            command = (_text(tool_input.get("command")) if isinstance(tool_input, dict) else None) or ""
            invocations = self._walk(command)[1]
            commits = [(folder, args) for folder, sub, args in invocations if sub == "commit"]
            with_all = any(commits_all(args) for _, args in commits)
            # what the command adds first, and the files a commit names, go in as they are now;
            # each named from the folder its git runs in (`cd src && git commit -m x a.py`)
            named = [*((folder, p) for folder, sub, args in invocations if sub == "add" for p in added_pathspecs(args)),
                     *((folder, p) for folder, args in commits for p in commit_pathspecs(args))]
            specs = [os.path.relpath(os.path.normpath(os.path.join(folder, p)), self.worktree).replace(os.sep, "/")
                     if p else "." for folder, p in named]
            untracked = "--untracked-files=all" if named else "--untracked-files=no"
            out = run_git(self.worktree, ["status", "--porcelain=v1", "-z", untracked])
            self._commit = set()
            records = out.decode("utf-8", "surrogateescape").split("\0")
            i = 0
            while i < len(records):
                record = records[i]
                i += 1
                if len(record) < 4:
                    continue
                staged, unstaged, path = record[0], record[1], record[3:]
                if staged in "RC":
                    i += 1  # the original path follows a rename or copy
                if staged not in " ?!" or (with_all and unstaged in "MDT") or \
                        (unstaged != " " and any(_covers(spec, path) for spec in specs)):
                    self._commit.add(path)
            if self.event == "AfterTool":  # Gemini answers once the command has run: its commit is HEAD's
                files = run_git(self.worktree, ["diff-tree", "--no-commit-id", "--name-only", "-r", "-z", "HEAD"])
                self._commit.update(p for p in files.decode("utf-8", "surrogateescape").split("\0") if p)
        return self._commit

    def finish(self) -> None:
        """After answering: refresh stale declaration ranges without keeping Claude Code waiting."""
        if self.stale:
            decl_ranges.refresh_in_background(self.worktree, self.git_dir, self.common_dir, self.stale)


def edit_regions(content: bytes, tool_input: object) -> list[tuple[int, int]] | None:
    """1-based line ranges where an Edit/MultiEdit's old_string occurs; None when any is not found."""
    if not isinstance(tool_input, dict):
        return None
    edits = found if isinstance(found := tool_input.get("edits"), list) else [tool_input]
    regions: list[tuple[int, int]] = []
    for edit in edits:
        old = edit.get("old_string") if isinstance(edit, dict) else None
        if not isinstance(old, str) or not old:
            return None
        needle = old.encode("utf-8", "surrogatepass")
        pos = content.find(needle)
        if pos < 0:
            return None
        while pos >= 0:
            first = content.count(b"\n", 0, pos) + 1
            regions.append((first, first + needle.rstrip(b"\n").count(b"\n")))
            pos = content.find(needle, pos + len(needle))
    return regions


def run_git(worktree: str, args: list[str]) -> bytes:
    """stdout of `git -C worktree ARGS` (empty when git fails), via posix_spawn and a pipe
    (subprocess where posix_spawn is missing: native Windows)."""
    if not SPAWN:
        return _run_git_subprocess(worktree, args)
    read_end, write_end = os.pipe()
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        pid = os.posix_spawnp("git", ["git", "-C", worktree, *args], dict(os.environ), file_actions=[
            (os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, write_end, 1),
            (os.POSIX_SPAWN_DUP2, devnull, 2)])
    except OSError:
        os.close(read_end)
        return b""
    finally:
        os.close(write_end)
        os.close(devnull)
    with os.fdopen(read_end, "rb") as handle:
        out = handle.read()
    _, status = os.waitpid(pid, 0)
    return out if status == 0 else b""


SPAWN = hasattr(os, "posix_spawnp")


def _run_git_subprocess(worktree: str, args: list[str]) -> bytes:
    import subprocess

    try:
        done = subprocess.run(["git", "-C", worktree, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
    except OSError:
        return b""
    return done.stdout if done.returncode == 0 else b""


def _capture(where: tuple[str, str, str], payload: Payload) -> None:
    """Hand the event to the capture side (folders as strings: no pathlib or gitmem.base.paths import)."""
    from gitmem.hook import capture

    capture.handle_at(where[0], where[1], where[2], payload)


def _denied(payload: Payload, where: tuple[str, str, str]) -> str | None:
    """Why a tool call is denied (Claude Code's and Codex's PreToolUse, Gemini CLI's BeforeTool):
    it would write, revoke or edit memory (gitmem.hook.readonly), or it cannot be checked."""
    tool = payload.get("tool_name")
    if payload["hook_event_name"] == GEMINI_CHECKED:
        tool = GEMINI_TOOLS.get(tool) if isinstance(tool, str) else None
    elif payload["hook_event_name"] != "PreToolUse":
        return None
    tool_input = payload.get("tool_input")
    size = sum(len(v) for v in tool_input.values() if isinstance(v, str)) if isinstance(tool_input, dict) else 0
    timer = None
    if size > LONG_INPUT_CHARS:  # only a long call can keep the check busy (signal costs an import)
        import signal

        def overtime(signum: int, frame: object) -> None:
            raise _Overtime

        timer = getattr(signal, "setitimer", None)  # not on Windows
    previous = signal.signal(signal.SIGALRM, overtime) if timer else None
    if timer:
        timer(signal.ITIMER_REAL, CHECK_LIMIT_S)
    try:
        try:
            return readonly.denial(tool, tool_input, where[0], _text(payload.get("cwd")), where[1:],
                                   _text(payload.get("transcript_path")))
        finally:  # stopped before anything leaves this try: the alarm cannot fire outside it
            if timer:
                timer(signal.ITIMER_REAL, 0)
    except RecursionError:  # `$($($(…)))` a thousand deep: no command a person runs, and unreadable here
        return NESTED_TOO_DEEP
    except _Overtime:
        return TOO_SLOW
    finally:
        if timer:
            signal.signal(signal.SIGALRM, previous)


def _refuse_unread(head: bytes) -> None:
    """An event too large to read: a tool call about to run is refused (its event names come
    before its input in every agent's JSON), anything else goes unanswered."""
    start = head[:65536]
    if b'"BeforeTool"' in start:
        sys.stdout.write(fastjson.dumps({"decision": "deny", "reason": TOO_LARGE}))
    elif b'"PreToolUse"' in start:
        sys.stdout.write(fastjson.dumps(readonly.deny_output(TOO_LARGE)))
    sys.stdout.flush()


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _utc_day(seconds: float) -> str:
    from gitmem.base.files import utc_stamp

    return utc_stamp(seconds)[:10]


def _log_error(state: str | None, where: str) -> None:
    try:
        from pathlib import Path

        from gitmem.base import faillog

        faillog.record(Path(state) if state else None, where)
    except Exception:
        pass


if __name__ == "__main__":
    sys.exit(main())

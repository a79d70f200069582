"""The agent stays read-only: which tool calls would write, revoke or edit gitmem's memory.

The PreToolUse hook asks `denial(tool, tool_input, worktree, cwd, git_dirs)` before delivering anything;
a reason means Claude Code is told to deny the call (permissionDecision "deny") and the agent
reads the reason. Memory is the developer's words: only the developer records or retires them
(`gitmem add`, `gitmem revoke` in their own terminal), only the writer copies them from turns.

Denied:
- file tools (Edit, Write, MultiEdit, NotebookEdit; Codex's apply_patch) on anything under
  `.gitmem/`, or gitmem's state in a git dir: `.git/gitmem/`, a linked worktree's
  `.git/worktrees/NAME/gitmem/`, a submodule's `.git/modules/NAME/gitmem/`, and the repository's
  own git dirs wherever they are (`--separate-git-dir`) (the compiled rules the hook delivers from
  and the gate's verdicts, `gate-verdicts.json`, live there). Folder names in any case
  (`.GITMEM/`, `.Git/GitMem/`): macOS's and Windows' file systems ignore it;
- shell commands (Bash, PowerShell) that run `gitmem add|revoke|init|uninstall|drain` (also as
  `python -m gitmem.cli`, through env/sudo/xargs/npx-like launchers), that set `gitmem.*` git
  config, or that write a path under one of those folders: a redirection into it,
  tee, sponge, sed -i (also among other short flags: `sed -Ei`, `-ni`; `--in-place`), perl -i,
  yq -i, awk/gawk -i inplace, curl -o/-sSo/--output, wget -O/-qO/-P (or a download while `cd`'d
  into it), mv, cp, scp, rm, touch, truncate, ln, install, dd of=, rsync, unlink, ed, find
  -delete/-exec on it, git rm/mv/checkout/restore of it, an interpreter's code naming it, or any
  of these after `cd` into it; also inside `sh -c '…'` / `bash -c` / `eval`, behind shell
  variables assigned on the same line (`g=gitmem; $g add …`, `for f in .gitmem/entries/*`),
  behind shell keywords (`do`, `then`, `!`) and launchers' options (`sudo -u bob`, `xargs -I {}`,
  `timeout -s KILL 5`), with a command substitution standing for part of the path
  (`"$(git rev-parse --show-toplevel)/.gitmem/…"`, `` `pwd`/.gitmem ``), to a glob matching
  .gitmem (`.gitm*/`), as a copy's `-t` folder or a copied .gitmem folder's new place, and code
  (`python -c`, `node -e`) that runs gitmem's writing commands or library; vi/vim/ex/emacs/nano
  on memory, `sort -o`, `prettier --write` and `eslint --fix` into it, patches read on stdin
  (`git apply <<EOF`), writes into the repository's `.git/config` (where `gitmem.*` keys live),
  and writes into the session's own transcript (the writer reads the developer's words there);
- code a shell or interpreter reads on stdin, read like inline code: a here-document
  (`python - <<'EOF' … Memory().add(…) … EOF`, `bash <<EOF`), a here-string (`python3 <<< '…'`),
  or what echo/printf/cat pipe into it (`echo '…' | python3`, `cat <<EOF | python3`), also a
  root shell without a command (`sudo -s <<EOF`, `sudo -i`) and `source /dev/stdin`; the
  `$(…)` an unquoted here-document runs. Other here-document bodies are data, not commands;
- deleting the gate's verdicts or gitmem's state by name: find with -delete/-exec (of anything
  but a reader such as cat or ls) whose -name/-path/-regex pattern names `gitmem` or
  `gate-verdicts` (`find .git -name gate-verdicts.json -delete`), find/ls of memory piped into
  `xargs rm`, and interpreter code naming `.gitmem`, `.git/gitmem`, `gate-verdicts` or
  `os.path.join('.git', 'gitmem')` (`python3 -c "import os; os.remove(…)"`).
Reading memory (cat, grep, ls, sed -n, `gitmem list|show|check|render`, git diff/log) and
`git add` / `git commit` of `.gitmem/` stay allowed; interpreter code that merely names memory's
files is denied too (the hook cannot tell reading from writing there), as is find -delete/-exec
with a pattern naming gitmem (`find . -path '*gitmem*' -delete`, also in gitmem's own sources).

This reads the command line, it does not run it: a tripwire for the obvious ways, not a sandbox
(a script the agent wrote and then runs is not read, nor code a command fetches or builds). The
second line is `gitmem add`/`revoke` — the command and the library's `Memory.add`/`Memory.revoke`
— refusing to run in an agent's shell (gitmem.memory.refuse_under_agent; the writer, started
from the agent's hooks, still records), the last the gate on every stored entry and the review
of the commit that adds it.

Standard library only and no `re` (the hook runs in front of every tool call).
"""

from __future__ import annotations

import itertools
import os

from gitmem.githooks import HOOK_NAMES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

_BRANCH_FOLDERS = ("refs", "logs")  # a branch may be named gitmem: refs/heads/gitmem, logs/refs/heads/gitmem
WRITING_SUBCOMMANDS = ("add", "revoke", "init", "uninstall", "drain")
# What an agent may run: the subcommands that only read (any other word, or one the shell fills in
# later, `gitmem "$@"` in a function, `xargs gitmem`, may be a writer)
READING_SUBCOMMANDS = ("list", "show", "check", "diff", "log", "turns", "judge", "daemon", "quarantine", "render",
                       "stats", "status", "help")
LIBRARY_WRITERS = ("add_copied",)  # Memory's other way in, the writer's (it does not refuse an agent's shell)
FILE_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
SHELL_TOOLS = ("Bash", "PowerShell")
PATCH_TOOL = "apply_patch"
_LAUNCHERS = ("sudo", "env", "time", "command", "exec", "nohup", "xargs", "nice", "ionice", "timeout", "doas",
              "builtin", "stdbuf", "uvx", "pipx", "npx", "run", "uv", "poetry", "pdm", "hatch", "rye", "--",
              "setsid", "coproc", "flock", "taskset", "chrt", "busybox")
_EDITORS = ("vi", "vim", "nvim", "ex", "emacs", "nano")  # writers, but for -R / -M (read-only)
_WRITERS = ("tee", "mv", "cp", "rm", "rmdir", "touch", "truncate", "ln", "link", "install", "rsync", "unlink", "shred",
            "chmod", "chown", "mkdir", "patch", "tar", "unzip", "Set-Content", "Add-Content", "Out-File",
            "Remove-Item", "Move-Item", "Copy-Item", "New-Item", "Clear-Content", "ni", "del", "erase", "ri", "sc",
            "ac", "sponge", "scp", "ed", "dos2unix", "unix2dos", "mktemp", "mkfifo", "split", *_EDITORS)
# Commands that write the file they name only with one of these flags.
_WRITE_FLAGS = {"prettier": ("--write", "-w"), "eslint": ("--fix",), "biome": ("--write", "--apply")}
_COPIERS = ("cp", "rsync", "install", "scp", "Copy-Item")
_IN_PLACE = ("sed", "gsed", "perl", "ruby", "yq")  # with -i (alone or among short flags: sed -Ei) or --in-place
_DOWNLOADERS = {"curl": ("oDc", ("--output", "--output-dir", "--dump-header", "--cookie-jar")),
                "wget": ("OoaP", ("--output-document", "--output-file", "--append-output", "--directory-prefix"))}
# commands that write only the file their flag names
_OUTPUT_FLAGS = dict.fromkeys(("sort", "shuf", "iconv"), ("o", ("--output",)))
_FIND_PATTERNS = ("name", "iname", "path", "ipath", "wholename", "iwholename", "regex", "iregex", "lname", "ilname")
_READERS = ("cat", "ls", "grep", "egrep", "fgrep", "rg", "head", "tail", "wc", "stat", "file", "echo", "printf",
            "less", "more", "du", "diff", "sha256sum", "sha1sum", "md5sum", "jq", "basename", "dirname", "realpath")
_SHELLS = ("sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "busybox", "su")
_INLINE_CODE = ("-c", "-e", "-E", "--eval", "-r", "-p", "--print", "-Command", "-command")  # an interpreter's code flag
MAX_DEPTH = 3  # nested `sh -c` / eval read at most
_INTERPRETERS = ("python", "python3", "node", "perl", "ruby", "sh", "bash", "zsh", "dash", "pwsh", "powershell",
                 "deno", "bun", "php", "lua", "Rscript", "osascript")
_GIT_WRITES = ("rm", "mv", "checkout", "restore", "clean", "reset", "apply", "am", "stash", "update-index",
               "hash-object", "replace", "notes", "checkout-index", "read-tree")

_RESERVED = ("if", "then", "else", "elif", "do", "while", "until", "!", "{")  # `f() { gitmem "$@"; }`
MAX_BASES = 16  # a command line's `cd`s tracked at most (each may double them)

REASON = ("gitmem: the agent may not {what}. The repository's memory holds only what the developer "
          "said; the developer records or retires entries themselves (`gitmem add`, `gitmem revoke` "
          "in their own terminal). If this should be remembered, ask the developer to run it.")


class RunsCode(str):
    """A reason that code would run on memory's files: whether it reads or writes them the hook
    cannot tell (what may read but never write, the transcript, is let through on one)."""


def _runs_code(what: str) -> RunsCode:
    return RunsCode(REASON.format(what=f"run code {what}"))


def denial(tool: object, tool_input: object, worktree: str, cwd: str | None = None,
           git_dirs: tuple[str, ...] = (), transcript: str | None = None) -> str | None:
    """Why this tool call is refused, or None when it does not touch memory (`git_dirs`: the
    repository's git dir and common dir, which need not lie in the work tree; `transcript`: the
    session's transcript, which the writer reads the developer's words from)."""
    if not isinstance(tool_input, dict):
        return None
    base = cwd if cwd and os.path.isabs(cwd) else worktree
    # the work tree's .gitmem/ and .git/gitmem/ are found by name (in_memory); these by place, with
    # the git hooks gitmem installs (one rewritten or removed re-checks and delivers nothing)
    roots = tuple(os.path.normpath(os.path.join(d, "gitmem")) for d in git_dirs) + tuple(
        os.path.normpath(os.path.join(d, "hooks", name)) for d in git_dirs for name in HOOK_NAMES)
    # The agents' settings (the project's, the user's) hold their hooks: a shell write there is
    # denied (the file tools' edits and Codex's patches are read, _settings_denial)
    settings = tuple(os.path.normpath(os.path.join(worktree, name)) for name in HARNESS_SETTINGS) + tuple(
        os.path.normpath(os.path.expanduser(name)) for name in USER_SETTINGS)
    settings += tuple(real for s in settings if (real := os.path.realpath(s)) != s)  # a dotfiles link's target
    own = transcripts(transcript)
    if tool in FILE_TOOLS:
        path = tool_input.get("file_path") or tool_input.get("notebook_path")
        if isinstance(path, str) and "\0" in path:
            return None  # no system call takes a path holding NUL: the tool writes nothing
        full = os.path.realpath(os.path.join(base, os.path.expanduser(path))) if isinstance(path, str) else ""
        if isinstance(path, str) and (in_memory(path, base, roots) or in_memory(full, base, roots)
                                      or hard_link_to_memory(full, worktree)):  # through a link
            return REASON.format(what=f"edit gitmem's memory files ({tool} of {path})")
        named = os.path.normpath(os.path.join(base, os.path.expanduser(path or "")))
        if isinstance(path, str) and _a_transcript((named, full), own):
            return REASON.format(what=_TRANSCRIPT_WRITE)
        if _is_settings(full, settings) or _is_settings(named, settings):
            return _settings_denial(full, tool, tool_input)
        return None
    if tool == PATCH_TOOL:
        patch = tool_input.get("command") or tool_input.get("patch") or tool_input.get("input")
        if isinstance(patch, list):
            patch = "\n".join(str(p) for p in patch)
        if isinstance(patch, str):
            reason = _patch_denial(patch, base, roots) or _settings_patch_denial(patch, base, settings)
            if reason:
                return reason
            for path in _patch_paths(patch):
                named = os.path.normpath(os.path.join(base, os.path.expanduser(path)))
                if _a_transcript((named, os.path.realpath(named)), own):
                    return REASON.format(what=_TRANSCRIPT_WRITE)
        return None
    if tool in SHELL_TOOLS:
        command = tool_input.get("command")
        for key in ("dir_path", "directory"):  # Gemini CLI runs the command there (relative to the project)
            folder = tool_input.get(key)
            if isinstance(folder, str) and folder.strip():
                base = os.path.normpath(os.path.join(base, os.path.expanduser(folder.strip())))
                break
        if isinstance(command, str) and command.strip():
            guarded = _transcript_roots(own)
            reason = command_denial(command, base, roots + settings + guarded)
            if reason is None:
                return None
            # a denial is rare: read it again to say what it touches (a path in the reason may be
            # written relative to a `cd`, so its name alone does not tell)
            if memory := command_denial(command, base, roots):
                return memory
            if command_denial(command, base, roots + settings):
                return REASON.format(what="change an agent's settings from the shell: they hold gitmem's hooks "
                                          "(an edit of them that keeps those hooks is allowed)")
            # code that merely names a transcript is no reason: reading it is the agent's own business
            return None if isinstance(reason, RunsCode) else REASON.format(what=_TRANSCRIPT_WRITE)
    return None


_TRANSCRIPT_WRITE = "write into a session's transcript (the developer's words are read there)"
# Where the agents keep every session's transcript (a writer reads the developer's words from
# each), as (config folder, the variable that moves it, its folder of transcripts): Claude Code's
# projects, Codex's sessions by day, Gemini CLI's chats in tmp/<project>/chats.
_TRANSCRIPT_HOMES = (("~/.claude", "CLAUDE_CONFIG_DIR", "projects"), ("~/.codex", "CODEX_HOME", "sessions"),
                     ("~/.gemini", "", "tmp"))
_TRANSCRIPT_SUFFIXES = (".jsonl", ".json")


def transcripts(transcript: str | None) -> tuple[str, ...]:
    """This session's transcript (\"\" when none is known), then the folders of every agent's
    transcripts, whichever agent runs: a line written into any transcript there would be read as
    its developer's (another session of this repository's, another repository's, another
    agent's), so each is guarded as this one is. Each folder as written and as it resolves."""
    own = os.path.normpath(transcript) if transcript and os.path.isabs(transcript) else ""
    folders = [os.path.join(os.path.expanduser(home), name) for home, _, name in _TRANSCRIPT_HOMES]
    parts = own.split(os.sep)
    for i in range(len(parts) - 2, max(0, len(parts) - 7), -1):  # the session's own folder, wherever its home
        if any(parts[i] == name and parts[i - 1] == os.path.basename(home) for home, _, name in _TRANSCRIPT_HOMES):
            folders.append(os.sep.join(parts[:i + 1]))
    folders += [os.path.join(os.path.expanduser(moved), name)
                for _, variable, name in _TRANSCRIPT_HOMES if variable and (moved := os.environ.get(variable))]
    folders = [os.path.normpath(f) for f in folders]
    folders += [real for f in folders if (real := os.path.realpath(f)) != f]
    return (own, *dict.fromkeys(folders))


def _a_transcript(paths: tuple[str, ...], own: tuple[str, ...]) -> bool:
    """Whether one of `paths` (absolute) is this session's transcript or a transcript in an
    agent's folder of them (Gemini CLI's only in a `chats` folder: the rest of its tmp folder, and
    Claude Code's memory notes beside its transcripts, are the agent's to write)."""
    for path in paths:
        low = path.lower()  # as a case-blind file system names it
        if own and own[0] and low == own[0].lower():
            return True
        for folder in own[1:]:
            inside = low.startswith(folder.lower().rstrip(os.sep) + os.sep)
            gemini = os.path.basename(folder) == "tmp"
            if inside and low.endswith(_TRANSCRIPT_SUFFIXES) and (
                    not gemini or f"{os.sep}chats{os.sep}" in low[len(folder):]):
                return True
    return False


def _transcript_roots(own: tuple[str, ...]) -> tuple[str, ...]:
    """What a shell command may not write into: this session's transcript, Claude Code's and
    Codex's folders of them, and Gemini CLI's projects' chats folders, those still to come too
    (as prefixes: a shell write into Claude Code's folder is refused whatever the file, its
    memory notes too)."""
    roots = [own[0]] if own and own[0] else []
    return (*roots, *(os.path.join(f, "*", "chats") if os.path.basename(f) == "tmp" else f for f in own[1:]))


# The agents' project settings that hold gitmem's hooks: Claude Code's, Gemini CLI's, Codex's.
CODEX_CONFIG = "/.codex/config.toml"
HARNESS_SETTINGS = (".claude/settings.json", ".claude/settings.local.json", ".gemini/settings.json",
                    ".codex/hooks.json", CODEX_CONFIG[1:])
# Settings that switch every hook off, the hooks gitmem's among them, as (path of keys, value):
# Codex's `[features] hooks = false` (formerly `codex_hooks`) in its config.toml among them.
_HOOKS_OFF = ((("disableAllHooks",), True), (("hooksConfig", "enabled"), False), (("hooks", "enabled"), False),
              (("tools", "enableHooks"), False))
_CODEX_HOOK_FEATURES = ("hooks", "codex_hooks")  # false in `features`, the file's or a profile's
# The same agents' settings of the user's (a hook switched off there is off in every project).
USER_SETTINGS = ("~/.claude/settings.json", "~/.gemini/settings.json", "~/.codex/hooks.json", "~/.codex/config.toml")


def _is_settings(path: str, settings: tuple[str, ...]) -> bool:
    """An agent's settings file: one of `settings`, or a Codex config.toml in any folder (Codex
    reads those from the project's root down to the folder a session runs in)."""
    return path in settings or path.replace("\\", "/").endswith(CODEX_CONFIG)


def _switched_off(settings: dict[str, object]) -> str | None:
    import json  # the settings' rare path: every tool call's check imports no json (nor re)

    for keys, value in _HOOKS_OFF:
        found: object = settings
        for key in keys:
            found = found.get(key) if isinstance(found, dict) else None
        if found is value:
            return f"set {'.'.join(keys)} to {json.dumps(value)}"
    profiles = settings.get("profiles")  # Codex: a profile's features apply over the file's own
    scopes = [("features", settings.get("features"))] + [
        (f"profiles.{name}.features", profile.get("features"))
        for name, profile in (profiles.items() if isinstance(profiles, dict) else ()) if isinstance(profile, dict)]
    for where, features in scopes:
        for key in _CODEX_HOOK_FEATURES:
            if isinstance(features, dict) and features.get(key) is False:
                return f"set {where}.{key} to false"
    for keys in (("hooksConfig", "disabled"), ("hooks", "disabled")):  # Gemini CLI: hooks off by name
        section = settings.get(keys[0])
        listed = section.get("disabled") if isinstance(section, dict) else None
        if isinstance(listed, list) and "gitmem" in listed:
            return f"list gitmem's hooks in {'.'.join(keys)}"
    return None


def _settings_patch_denial(text: str, base: str, settings: tuple[str, ...]) -> str | None:
    """A patch to an agent's settings that would switch hooks off, read by applying it to the file
    as it is: a file deleted or moved (either way) is refused, and so is a hunk that does not apply
    exactly (what it would do cannot be read)."""
    def full(path: str) -> str:  # as the file system resolves it: `cfg/hooks.json` where `cfg -> .codex`
        joined = os.path.join(base, os.path.expanduser(path))
        return os.path.realpath(joined) if "\0" not in joined else joined

    if not any(_is_settings(full(p), settings) for p in _patch_paths(text)):
        return None
    from gitmem.hook import patch

    patched: dict[str, str] = {}  # several sections for one file apply one after the other
    for change in patch.parse(text):
        path = full(change.path)
        if not _is_settings(path, settings) and (change.moved_to is None or not _is_settings(full(change.moved_to),
                                                                                              settings)):
            continue
        if change.op == "delete" or change.moved_to is not None:
            problem: str | None = "delete it or move it"
        else:
            before = _read_text(path)
            after = patch.applied(patched.get(path, before), change)
            if after is not None:
                patched[path] = after
            problem = ("change it in a way gitmem cannot read (a hunk that does not apply exactly)"
                       if after is None else _settings_problem(path, before, after))
        if problem:
            return REASON.format(what=f"change an agent's settings so as to {problem} (a patch to {change.path})")
    return None


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return ""


def _settings_denial(path: str, tool: object, tool_input: dict[str, object]) -> str | None:
    """An edit of an agent's settings (its project's, or the user's) that would switch gitmem's
    hooks off (this one among them)."""
    before = _read_text(path)
    after = before
    if tool == "Write":
        after = str(tool_input.get("content") or "")
    edits = tool_input.get("edits") if tool == "MultiEdit" else [tool_input]
    for edit in edits if tool != "Write" and isinstance(edits, list) else ():
        old, new = (edit.get("old_string"), edit.get("new_string")) if isinstance(edit, dict) else (None, None)
        if isinstance(old, str) and isinstance(new, str):
            if old and old not in after:  # Gemini CLI's replace then matches loosely, or has a model mend it
                return REASON.format(what=f"edit an agent's settings with text that is not in them as written "
                                          f"({tool} of {path}): the edit tool would look for it by a looser "
                                          "match, so what it changes cannot be read here; quote the lines exactly")
            many = edit.get("replace_all") or edit.get("allow_multiple") is True or (
                isinstance(n := edit.get("expected_replacements"), int) and n > 1)  # Gemini CLI's replace
            after = after.replace(old, new, -1 if many else 1)
    problem = _settings_problem(path, before, after)
    return REASON.format(what=f"change an agent's settings so as to {problem} ({tool} of {path})") if problem else None


def _settings_problem(path: str, before: str, after: str) -> str | None:
    """What the change from `before` to `after` of an agent's settings file does to hooks, read as
    the agent parses the file (the last of two equal keys wins; NaN and Infinity are no JSON to
    it): every hook switched off, gitmem's hook entries changed in any way (a matcher narrowed, a
    command or type rewritten, an event renamed: its event no longer runs it as installed), or a
    file the agent cannot read (which it could before)."""
    import json

    from gitmem.delivery.agents import jsonc
    from gitmem.delivery.claude_settings import has_gitmem_hook

    def no_constant(name: str) -> object:
        raise ValueError(name)

    def parsed(text: str) -> object:
        try:
            if path.endswith(".toml"):  # Codex's config.toml
                import tomllib

                return tomllib.loads(text)
            if path.endswith(os.path.join(".gemini", "settings.json")):
                text = jsonc.strip_comments(text)
            return json.loads(text, parse_constant=no_constant)
        except ValueError:  # tomllib.TOMLDecodeError among them
            return None

    def ours(settings: object) -> dict[str, list[str]]:  # event -> gitmem's groups there, as data
        hooks = settings.get("hooks") if isinstance(settings, dict) else None
        found = {e: sorted(json.dumps(g, sort_keys=True) for g in groups if has_gitmem_hook(g))
                 for e, groups in hooks.items() if isinstance(groups, list)} if isinstance(hooks, dict) else {}
        return {e: groups for e, groups in found.items() if groups}

    settings, earlier = parsed(after), parsed(before)
    if not isinstance(settings, dict):  # unreadable already (a merge conflict being resolved): no worse
        return None if earlier is None and before.strip() else "leave it unreadable to the agent, and its hooks with it"
    off = _switched_off(settings)
    if off and not (isinstance(earlier, dict) and off == _switched_off(earlier)):  # not off before this edit
        return off
    then, now = ours(earlier), ours(settings)
    if changed := sorted(e for e, groups in then.items() if now.get(e) != groups):
        return f"change or remove gitmem's hooks (for {', '.join(changed)})"
    return None


def in_memory(path: str, base: str, roots: tuple[str, ...]) -> bool:
    """Whether `path` (absolute, or relative to `base`) lies in one of `roots` (normalised), names a
    folder called .gitmem anywhere, or lies in gitmem's state inside any .git. Folder names are
    compared in any case (`.GITMEM/`, `.Git/GitMem/`): macOS's and Windows' file systems ignore it.
    Brace alternatives (`.{gitmem,x}`) and escapes (`$'.git\\x6dem'`) are read as bash reads them."""
    path = path.strip().strip("'\"")
    if not path:
        return False
    spelled = _spellings(path)
    if spelled != [path]:
        return any(_in_memory(p, base, roots) for p in spelled)
    return _in_memory(path, base, roots)


def _spellings(word: str) -> list[str]:
    """The words bash makes of `word`: each alternative of its first brace list (`.{gitmem,x}`,
    recursively, at most MAX_SPELLINGS), and its `\\xHH` / `\\NNN` escapes decoded (`$'…'`)."""
    words = [word]
    if "\\" in word:
        words.append(_unescaped(word))
    out: list[str] = []
    for w in words:
        start = w.find("{")
        close = w.find("}", start + 1) if start >= 0 else -1
        inner = w[start + 1:close] if close > 0 else ""
        if "," in inner and "{" not in inner:
            out += [s for alt in inner.split(",")[:MAX_SPELLINGS] for s in _spellings(w[:start] + alt + w[close + 1:])]
        else:
            out.append(w)
    return out[:MAX_SPELLINGS]


MAX_SPELLINGS = 64


def _unescaped(word: str) -> str:
    out, k = [], 0
    while k < len(word):
        if word[k] == "\\" and word[k + 1:k + 2] == "x" and _is_hex(word[k + 2:k + 4]):
            out.append(chr(int(word[k + 2:k + 4], 16)))
            k += 4
        elif word[k] == "\\" and word[k + 1:k + 4].isdigit() and set(word[k + 1:k + 4]) <= set("01234567"):
            out.append(chr(int(word[k + 1:k + 4], 8)))
            k += 4
        elif word[k] == "\\" and k + 1 < len(word):
            out.append(word[k + 1])
            k += 2
        else:
            out.append(word[k])
            k += 1
    return "".join(out)


def _is_hex(text: str) -> bool:
    return len(text) == 2 and all(ch in "0123456789abcdefABCDEF" for ch in text)


def _in_memory(path: str, base: str, roots: tuple[str, ...]) -> bool:
    if path.startswith(":("):  # git's pathspec magic: `:(top).gitmem`, `:(glob,icase).gitmem/**`
        path = path.partition(")")[2]
    elif path.startswith(":/"):
        path = path[2:]
    path = os.path.expanduser(path)
    full = os.path.normpath(os.path.join(base, path))
    # `notes/x.yaml` where a committed link `notes` leads into .gitmem (NUL: no file has the name)
    real = os.path.realpath(full) if "\0" not in full else full
    return _names_memory_path(full, roots) or (real != full and _names_memory_path(real, roots))


def _names_memory_path(full: str, roots: tuple[str, ...]) -> bool:
    low = full.lower()
    if any(_under(low, root.lower()) for root in roots):
        return True
    # an agent's settings by their name, wherever the path starts (`$PWD/.claude/settings.json`)
    slashed = low.replace("\\", "/")
    if any(slashed.endswith("/" + name) and any(r.replace("\\", "/").lower().endswith("/" + name) for r in roots)
           for name in HARNESS_SETTINGS):
        return True
    parts = full.replace("\\", "/").split("/")
    lowered = [part.lower() for part in parts]
    if any(part[:1] == "." and ("*" in part or "?" in part or "[" in part) and glob_matches(part, ".gitmem")
           and (_literal_letters(part) >= 3 or os.path.isdir("/".join([*parts[:i], ".gitmem"])))
           for i, part in enumerate(lowered)):
        # .gitm*/entries, .[g]itmem: a shell glob matches a leading dot only when it spells it; one
        # that spells no word (`.*`, `.??????`, `.g*`) is a sed or regex expression far more often,
        # so it counts where a .gitmem folder is there for it to match
        return True
    return ".gitmem" in lowered or any(part == ".git" and _git_state(parts[i + 1:], "/".join(parts[:i + 1]))
                                       for i, part in enumerate(lowered))


def _holds(word: str, base: str, roots: tuple[str, ...]) -> bool:
    """Whether the folder `word` names (from `base`) holds one of `roots`: `.gemini` holds
    `.gemini/settings.json`, `.git` holds `.git/gitmem` (a literal path: globs are in_memory's)."""
    folder = os.path.normpath(os.path.join(base, os.path.expanduser(word.strip("'\""))))
    prefix = folder.lower().rstrip("/") + "/"
    return any(root.lower().startswith(prefix) for root in roots)


def _under(path: str, root: str) -> bool:
    """Whether `path` is `root` or lies in it, its folder names read as shell globs (`.git/gitm*`,
    `~/.claude/projects/*/*.jsonl`); a glob matches a leading dot only when it spells it."""
    if path == root or path.startswith(root + os.sep):
        return True
    parts, want = path.split(os.sep), root.split(os.sep)
    if "*" in want:  # a root naming any one folder at a place (`~/.gemini/tmp/*/chats`)
        return len(parts) >= len(want) and all(
            name == "*" or part == name or (any(ch in part for ch in "*?[") and glob_matches(part, name))
            for part, name in zip(parts, want, strict=False))
    if not any(ch in path for ch in "*?["):
        return False
    return len(parts) >= len(want) and all(
        part == name or (any(ch in part for ch in "*?[") and (part[:1] == ".") == (name[:1] == ".")
                         and glob_matches(part, name))
        for part, name in zip(parts, want, strict=False))


def _literal_letters(pattern: str) -> int:
    """Letters of a glob outside its brackets."""
    count, inside = 0, False
    for ch in pattern:
        inside = (inside or ch == "[") and ch != "]"
        count += ch.isalpha() and not inside
    return count


def glob_matches(pattern: str, name: str) -> bool:
    """Whether the shell pattern (`*`, `?`, `[…]`) matches all of `name`; in time linear in their
    sizes' product, whatever the pattern (fnmatch would import re)."""
    tokens: list[str] = []  # "*", "?", a bracket's set ("[" + its characters), or a character
    k = 0
    while k < len(pattern):
        ch = pattern[k]
        close = pattern.find("]", k + 2) if ch == "[" else -1
        if ch == "[" and close > 0:
            tokens.append(pattern[k:close])
            k = close + 1
            continue
        if not (ch == "*" and tokens[-1:] == ["*"]):
            tokens.append(ch)
        k += 1
    reach = [True] + [False] * len(name)  # reach[j]: the tokens so far can match name[:j]
    for token in tokens:
        if token == "*":
            for j in range(1, len(name) + 1):
                reach[j] = reach[j] or reach[j - 1]
            continue
        reach = [False] + [reach[j] and _one(token, name[j]) for j in range(len(name))]
    return reach[-1]


def _one(token: str, ch: str) -> bool:
    if token == "?":
        return True
    if len(token) == 1:
        return token == ch
    chars = token[1:]
    negated = chars[:1] in ("!", "^")
    chars = chars[negated:]
    found = ch in chars or any(chars[k - 1] <= ch <= chars[k + 1] for k in range(1, len(chars) - 1) if chars[k] == "-")
    return found != negated


def _git_state(inside: list[str], at: str) -> bool:
    """Whether a path inside the git dir `at` lies in gitmem's state there: `gitmem/` (the main
    checkout's, also seen from a linked worktree), `worktrees/NAME/gitmem/` (a linked worktree's
    own), or a `gitmem/` anywhere in a submodule's git dir under `modules/` (whose names may hold
    slashes, so on doubt it counts) unless it is a branch or a git dir itself (it holds HEAD: a
    submodule named gitmem). A worktree merely named gitmem is not. Names in any case."""
    low = [part.lower() for part in inside]
    if low == ["config"]:
        return True  # its gitmem.* keys (`git config gitmem.…` is denied; so is writing the file)
    if low[:1] == ["gitmem"] or (len(low) >= 3 and low[0] == "worktrees" and low[2] == "gitmem"):
        return True
    return low[:1] == ["modules"] and any(
        part == "gitmem" and not any(p in _BRANCH_FOLDERS for p in low[2:k])
        and not os.path.isfile("/".join([at, *inside[:k + 1], "HEAD"]))
        for k, part in enumerate(low) if k >= 2)


def _words(segment: str) -> list[str]:
    """Shell words of one simple command, quotes removed (no expansion)."""
    words: list[str] = []
    current: list[str] = []
    quote = ""
    started = False
    escaped = False
    for ch in segment:
        if escaped:  # a backslash's character is itself: \' opens no quote
            current.append(ch)
            escaped = False
            continue
        if quote:
            if ch == quote:
                quote = ""
            elif ch == "\\" and quote == '"':
                escaped = True
            else:
                current.append(ch)
            continue
        if ch == "\\":
            escaped, started = True, True
        elif ch in "'\"":
            quote = ch
            started = True
        elif ch in " \t":
            if started or current:
                words.append("".join(current))
                current, started = [], False
        elif ch in "<>":
            if started or current:
                words.append("".join(current))
                current, started = [], False
            if words and words[-1] and set(words[-1]) <= set("<>&|0123456789") and words[-1][-1] in "<>":
                words[-1] += ch  # >> 2> &> >|
            else:
                words.append(ch)
        elif ch in "&|" and not (started or current) and words and words[-1] \
                and set(words[-1]) <= _REDIRECTION_CHARS and words[-1][-1] in "<>":
            words[-1] += ch  # >& >| : the operator, not its target
        else:
            current.append(ch)
    if started or current:
        words.append("".join(current))
    return words


def segments(command: str) -> list[str]:
    """Simple commands of a command line: split at ; & | ( ) ` { } and line breaks outside
    quotes (so code inside `python -c "..."` stays one word); `>&`, `&>` stay redirections;
    here-document bodies are not commands (see _pieces)."""
    return [text for text, _, _ in _pieces(command)]


def _pieces(command: str, base: str | None = None) -> list[tuple[str, str, list[tuple[str, bool]]]]:
    """(simple command, the character that ends it, its here-documents) for each simple command
    of a command line. A here-document is (body, whether the shell expands it: an unquoted
    delimiter, where `$(…)` and backquotes in the body run); its lines are taken out of the
    command line. A body whose delimiter line never comes stays part of the command line."""
    out: list[tuple[str, str, list[tuple[str, bool]]]] = []
    lifted: list[tuple[str, str, list[tuple[str, bool]]]] = []  # the commands of substitutions
    unclosed = False
    current: list[str] = []
    docs: list[tuple[str, bool]] = []
    waiting: list[tuple[str, bool, bool, list[tuple[str, bool]]]] = []  # delimiter, strip tabs, expands, docs
    quote = ""
    i, n = 0, len(command)
    while i < n:
        ch = command[i]
        if ch == "\\" and quote != "'":  # the next character is literal (a quote opens nothing)
            if command[i + 1:i + 2] != "\n" or quote:
                current.append(command[i:i + 2])
            i += 2  # a backslash before a line break joins the lines
            continue
        if ch == "#" and not quote and (i == 0 or command[i - 1] in " \t\n;|&()`"):
            stop = command.find("\n", i)  # a comment: nothing in it runs, nor opens a here-document
            i = n if stop < 0 else stop
            continue
        if quote != "'" and not unclosed and (ch == "`" or command[i:i + 2] == "$(") and command[i:i + 3] != "$((":
            inner, after = _substitution(command, i)
            if after > i:  # its command is read on its own; in this word it stands for some path
                lifted.extend(_pieces(inner, base))
                current.append(_placeholder(inner, base))
                i = after
                continue
            unclosed = True  # none after it closes either: no second scan to the end
        if quote:
            if quote == '"' and (ch == "`" or (ch == "$" and command[i + 1:i + 2] == "(")):
                out.append(("".join(current), ch, docs))  # an unclosed substitution: its text is a command
                current, docs = [], []
                i += 1
                continue
            current.append(ch)
            if ch == quote:
                quote = ""
            i += 1
            continue
        if ch in "'\"":
            quote = ch
            current.append(ch)
        elif ch == "<" and command[i + 1:i + 2] == "<" and command[i + 2:i + 3] != "<" and command[i - 1:i] != "<" \
                and command.count("((", 0, i) <= command.count("))", 0, i):  # not $((1 << 2))
            heredoc = _heredoc_operator(command, i + 2)
            if heredoc:
                waiting.append((*heredoc, docs))
            current.append(ch)
        elif ch == "\n" and waiting:
            out.append(("".join(current), ch, docs))
            current, docs = [], []
            i = _take_bodies(command, i + 1, waiting)
            waiting = []
            continue
        elif (ch in ";()`\n" or (ch == "|" and current[-1:] != [">"])  # `>|` is a redirection, `\>|` a pipe
              or (ch == "&" and command[i + 1:i + 2] != ">" and command[i - 1:i] != ">")) \
                or (ch in "{}" and _brace_word(command, i)):
            end = ch
            if ch in "|&" and command[i + 1:i + 2] == ch:  # || and && : no pipe
                end, i = ch + ch, i + 1
            out.append(("".join(current), end, docs))
            current, docs = [], []
        else:
            current.append(ch)
        i += 1
    out.append(("".join(current), "", docs))
    return [piece for piece in out + lifted if piece[0].strip()]


def _brace_word(command: str, i: int) -> bool:
    """Whether the `{` or `}` at `i` is a word of its own, a group's brace (`{ a; b; }`), not part
    of a word: find's and xargs' `{}`, `${NAME}`, `a{b,c}`."""
    before, after = command[i - 1:i], command[i + 1:i + 2]
    if command[i] == "{":
        return before in ("", " ", "\t", "\n", ";", "&", "|", "(") and after in ("", " ", "\t", "\n")
    return before in (" ", "\t", "\n", ";", "&") and after in ("", " ", "\t", "\n", ";", "&", "|", ")")


def _substitution(command: str, i: int) -> tuple[str, int]:
    """The command of the `$(…)` or backquotes starting at `i`, and where the text goes on after
    it; ("", i) when it never closes."""
    if command[i] == "`":
        end = command.find("`", i + 1)
        return (command[i + 1:end], end + 1) if end > 0 else ("", i)
    depth, quote, k = 1, "", i + 2
    while k < len(command):
        ch = command[k]
        if quote:
            if ch == quote:
                quote = ""
            elif ch == "\\" and quote == '"':
                k += 1
        elif ch == "\\":
            k += 1
        elif ch in "'\"":
            quote = ch
        elif ch == "<" and command[k + 1:k + 2] == "<" and command[k + 2:k + 3] != "<":
            heredoc = _heredoc_operator(command, k + 2)  # its body is text: an apostrophe there opens nothing
            line_end = command.find("\n", k)
            if heredoc and line_end > 0:
                k = _after_body(command, line_end + 1, heredoc[0], heredoc[1])
                continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if not depth:
                return command[i + 2:k], k + 1
        k += 1
    return "", i


def _after_body(command: str, pos: int, delimiter: str, strip: bool) -> int:
    """Where the text goes on after the here-document body starting at `pos` (the delimiter line
    included); at the end when the delimiter line never comes."""
    while pos < len(command):
        end = command.find("\n", pos)
        end = len(command) if end < 0 else end
        line = command[pos:end]
        pos = end + 1
        if (line.lstrip("\t") if strip else line).strip() == delimiter:
            return end  # the line break after the delimiter: `)` may follow on the next line
    return len(command)


def _placeholder(inner: str, base: str | None = None) -> str:
    """What a command substitution stands for inside a path: the git dir when it asks git for it
    (`$(git rev-parse --git-dir)/gitmem/…`); memory when it names memory or lists its files
    (`$(echo .gitmem)`, `$(grep -rl axios .)`: read from `base`); else a folder of unknown name
    (the top level, `pwd`: `$(git rev-parse --show-toplevel)/.gitmem/…` is still a path into memory)."""
    if any(flag in inner for flag in ("--git-dir", "--git-common-dir", "--absolute-git-dir")):
        return ".git"
    if names_memory(inner):
        return ".gitmem"
    if base is not None and any(_lists_memory(_words(text), base, ()) for text, _, _ in _pieces(inner)):
        return _LISTED
    return "_"


_LISTED = ".gitmem/(files-a-command-substitution-lists)"  # one word: no space, no `$`


def _heredoc_operator(command: str, i: int) -> tuple[str, bool, bool] | None:
    """The delimiter of the here-document whose `<<` ends before `i`, whether `<<-` strips leading
    tabs, and whether the body is expanded (no quote in the delimiter)."""
    strip = command[i:i + 1] == "-"
    i += strip
    while command[i:i + 1] in (" ", "\t"):
        i += 1
    word: list[str] = []
    quote, quoted = "", False
    while i < len(command):
        ch = command[i]
        if quote:
            if ch == quote:
                quote = ""
            else:
                word.append(ch)
        elif ch in "'\"\\":
            quote, quoted = ("" if ch == "\\" else ch), True
        elif ch in " \t\n;|&()<>":
            break
        else:
            word.append(ch)
        i += 1
    return ("".join(word), strip, not quoted) if word else None


def _take_bodies(command: str, start: int, waiting: list[tuple[str, bool, bool, list[tuple[str, bool]]]]) -> int:
    """Read the here-documents `waiting` for from the lines at `start` into their commands' lists;
    where the rest of the command line goes on. A delimiter line that never comes: no body."""
    pos = start
    for delimiter, strip, expands, docs in waiting:
        lines: list[str] = []
        while pos < len(command):
            end = command.find("\n", pos)
            end = len(command) if end < 0 else end
            line, pos = command[pos:end], end + 1
            if (line.lstrip("\t") if strip else line) == delimiter:
                break
            lines.append(line)
        else:
            return start  # no delimiter line: the lines are read as commands
        docs.append(("\n".join(lines), expands))
    return pos


def command_denial(command: str, base: str, roots: tuple[str, ...], depth: int = 0) -> str | None:
    # Every folder a relative path may be relative to by now: a `cd` adds its target and removes
    # nothing, since it may sit in a subshell, fail, be skipped by || or be undone by `cd -`.
    bases = [base]
    command = expand_variables(command)
    code: str | None = None  # the first reason that is code naming a root, kept while writes are looked for
    piped, piped_memory = "", False  # what the command before a `|` writes; whether it lists memory's files
    for segment, end, docs in _pieces(command, base):
        words = _past_keywords(_words(segment.replace("$", " ")))
        stdin = [body for body, _ in docs] + [words[k + 1] for k in range(len(words) - 1) if words[k] == "<<<"]
        if piped:
            stdin.append(piped)
        listed, piped, piped_memory = piped_memory, "", False
        if not words:
            continue
        for here in bases:
            reason = _segment_denial(words, here, roots)
            if reason is None or isinstance(reason, RunsCode):  # a write read in it says more
                reason = (_nested_denial(words, here, roots, depth) or _patch_file_denial(words, here, roots)
                          or _stdin_denial(words, stdin + _redirected_input(words, here), docs, listed, here, roots,
                                           depth)) or reason
            if isinstance(reason, RunsCode):
                code = code or reason  # a write later on the line says more (code naming a transcript may run)
            elif reason:
                return reason
        if end == "|":
            piped = _output_text(words, stdin)
            piped_memory = any(_lists_memory(words, here, roots) for here in bases)
        target = cd_target(words)
        if target is not None and len(bases) < MAX_BASES:
            bases += [moved for here in bases if (moved := os.path.normpath(os.path.join(here, target))) not in bases]
    return code


def _stdin_denial(words: list[str], stdin: list[str], docs: list[tuple[str, bool]], listed: bool, base: str,
                  roots: tuple[str, ...], depth: int) -> str | None:
    """What a command reads on its standard input: code for a shell or an interpreter that reads
    its program there (`python - <<'EOF'`, `echo '…' | python3`, `bash <<EOF`), memory's file
    names for `xargs rm` (`find .git -name gate-verdicts.json | xargs rm`); and the command
    substitutions an unquoted here-document runs."""
    if depth >= MAX_DEPTH:
        return None
    for body, expands in docs:
        if expands and ("$(" in body or "`" in body):
            reason = command_denial(body, base, roots, depth + 1)
            if reason:
                return reason
    operands = _operands(words)
    if listed and operands and operands[0] == "xargs" and any(
            os.path.basename(w) in _WRITERS or os.path.basename(w) in _IN_PLACE for w in operands[1:]):
        return REASON.format(what="change gitmem's memory files (… | xargs …): the files listed include "
                                  "the developer's entries") + _SEARCH_ADVICE
    if _git_index_from_stdin(operands) and (not stdin or names_memory("\n".join(stdin), roots)):
        # `printf '100644 blob …\t.gitmem/entries/x.yaml' | git update-index --index-info`; from
        # where the hook cannot read, the paths are unknown (agents have no need of this plumbing)
        return REASON.format(what="change gitmem's memory files (git update-index reading paths on stdin)")
    if not stdin:
        return None
    code = "\n".join(stdin)
    if _applies_patch(operands):
        reason = _patch_denial(code, base, roots)
        if reason:
            return reason
    kind, name = _stdin_reader(operands)
    if kind == "shell":
        return command_denial(code, base, roots, depth + 1)
    if kind == "code":
        return _code_denial(code, f"{name} reading its code on stdin", roots)
    return None


def _applies_patch(operands: list[str]) -> bool:
    """Whether the command applies a patch it reads on stdin: patch, git apply, git am, and Codex's
    `apply_patch <<'EOF'` (which Codex applies itself when its shell tool is given one)."""
    if any(w in _PATCH_READS for w in operands):
        return False  # it only reports what the patch would do
    names = [os.path.basename(w) for w in operands if not w.startswith("-")]
    return any(n in ("patch", "apply_patch", "applypatch") for n in names[:2]) or any(
        a in ("git", "git.exe") and b in ("apply", "am") for a, b in itertools.pairwise(names))


def _git_index_from_stdin(operands: list[str]) -> bool:
    """git update-index --index-info / --stdin, checkout-index --stdin: index entries or paths on stdin."""
    names = [os.path.basename(w) for w in operands]
    return any(a in ("git", "git.exe") and b in ("update-index", "checkout-index")
               for a, b in itertools.pairwise(names)) and any(w in ("--index-info", "--stdin") for w in operands)


MAX_READ_BYTES = 4 << 20  # a patch or script file the hook reads to see what it names, at most
_PATCH_READS = ("--check", "--stat", "--numstat", "--summary", "--dry-run")  # modes that change no file


def _file_text(word: str, base: str) -> str | None:
    """The text of the file a command reads (`< p.diff`, `git apply p.diff`), when it is a regular
    file of at most MAX_READ_BYTES; else None."""
    path = os.path.join(base, os.path.expanduser(word))
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > MAX_READ_BYTES:
            return None
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return None


def _redirected_input(words: list[str], base: str) -> list[str]:
    """What a command reads on stdin from a file (`patch -p1 < p.diff`, `python3 < fix.py`)."""
    return [text for k, w in enumerate(words[:-1]) if w in ("<", "0<")
            and (text := _file_text(words[k + 1], base)) is not None]


def _patch_file_denial(words: list[str], base: str, roots: tuple[str, ...]) -> str | None:
    """A patch applied from a file named on the command line (`git apply --index p.diff`, `git am
    0001.patch`, `patch -i p.diff`, patch's second operand): the files it changes, read from it."""
    operands = _operands(words)
    if not _applies_patch(operands):
        return None
    for word in operands[1:]:
        value = word.partition("=")[2] if word.startswith("--input=") else word
        if value.startswith("-") or value in ("apply", "am"):
            continue
        text = _file_text(value, base)
        reason = _patch_denial(text, base, roots, f", in {value}") if text else None
        if reason:
            return reason
    return None


def _patch_denial(patch: str, base: str, roots: tuple[str, ...], where: str = "") -> str | None:
    """A patch (Codex's apply_patch text or a unified diff) that changes one of memory's files."""
    path = next((p for p in _patch_paths(patch) if in_memory(p, base, roots)), None)
    return REASON.format(what=f"edit gitmem's memory files (a patch to {path}{where})") if path else None


def _stdin_reader(words: list[str]) -> tuple[str, str]:
    """("shell" or "code", its name) when the command (behind launchers: sudo -u x, env, timeout 5)
    is a shell or interpreter that reads its program on stdin: no script named, or `-`, `bash -s`;
    also `sudo -s`/`sudo -i` with no command (a root shell reading stdin) and `source /dev/stdin`."""
    j = 0
    while j < len(words):
        word = words[j]
        name = os.path.basename(word)
        if name in ("source", ".") and words[j + 1:j + 2] and words[j + 1] in _STDIN_FILES:
            return "shell", name
        if name in _ROOT_SHELL_OPTIONS:
            j, root_shell = _behind_root_launcher(words, j)
            if j >= len(words):
                return ("shell", name) if root_shell else ("", "")
            continue
        shell = name in _SHELLS
        if shell or name.rstrip("0123456789.") in _INTERPRETERS:
            rest = words[j + 1:]
            if any(f in _INLINE_CODE or (shell and f[:1] == "-" and f[:2] != "--" and "c" in f) for f in rest):
                return "", name  # its code is on the command line (_nested_denial)
            if shell and any(f[:1] == "-" and f[:2] != "--" and "s" in f for f in rest):
                return "shell", name
            operands = [w for w in rest if w == "-" or not w.startswith("-")]  # flags' values among them
            if not any(w in _STDIN_FILES for w in operands) and any(_script_file(w) for w in operands):
                return "", name  # it runs a script: stdin is that script's data
            return ("shell" if shell else "code", name)
        if not (word in _LAUNCHERS or word.startswith("-") or _assignment(word) or word.isdigit()
                or (j and words[j - 1].startswith("-"))):
            return "", ""
        j += 1
    return "", ""


# sudo's and doas's options that take a value (short letters, long names): the word after one is no command.
_ROOT_SHELL_OPTIONS = {"sudo": ("ugpCDhRrTtU", ("--user", "--group", "--prompt", "--chdir", "--host", "--role",
                                                "--type", "--command-timeout", "--other-user", "--close-from")),
                       "doas": ("uaC", ())}


def _behind_root_launcher(words: list[str], at: int) -> tuple[int, bool]:
    """Where the command behind the sudo or doas at `words[at]` starts, and whether its options ask
    for a shell (`-s`, `-i`, `--shell`, `--login`; also bundled, `-iu root`): with no command
    after them, that shell reads its commands on stdin."""
    letters, long_values = _ROOT_SHELL_OPTIONS[os.path.basename(words[at])]
    k, shell = at + 1, False
    while k < len(words):
        word = words[k]
        if word == "--":
            return k + 1, shell
        if word.startswith("--"):
            option = word.split("=", 1)[0]
            shell = shell or option in ("--shell", "--login")
            k += 2 if option in long_values and "=" not in word else 1
            continue
        if word[:1] != "-" or word == "-":
            break
        k += 1
        for n, letter in enumerate(word[1:]):
            if letter in letters:
                k += n == len(word) - 2  # the value is the next word (else the rest of this one)
                break
            shell = shell or letter in "si"
    return k, shell


_STDIN_FILES = ("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")
_SCRIPT_SUFFIXES = (".py", ".pyw", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".pm", ".php", ".lua", ".r", ".sh",
                    ".bash", ".zsh", ".ps1")


def _script_file(word: str) -> bool:
    """Whether an interpreter's operand names a script file (by its suffix, or a path), rather than
    being a flag's value (`-X utf8`, `-W ignore`) or stdin itself (`/dev/stdin`)."""
    return word not in _STDIN_FILES and (word.lower().endswith(_SCRIPT_SUFFIXES) or "/" in word)


def _output_text(words: list[str], stdin: list[str]) -> str:
    """What a command writes to a pipe, where the command line holds it: echo's and printf's
    arguments, what cat or tee pass on (a here-document, a here-string, the pipe before)."""
    operands = _operands(words)
    name = os.path.basename(operands[0]) if operands else ""
    if name in ("echo", "printf", "Write-Output", "print"):
        return " ".join(operands[1:])
    if name in ("cat", "tee", "type"):
        return "\n".join(stdin)
    return ""


def _lists_memory(words: list[str], base: str, roots: tuple[str, ...]) -> bool:
    """Whether a command's output names memory's files (for xargs, or a command substitution):
    find on them or with a pattern naming gitmem's state, ls/echo/printf/git ls-files of them; and
    a search of the whole repository that does not leave .gitmem/ out (`grep -rl axios .`,
    `git grep -l axios`, `find . -name '*.yaml'`: an ordinary search-and-replace would rewrite
    the developer's entries)."""
    operands = _operands(words)
    name = os.path.basename(operands[0]) if operands else ""
    if name == "find":
        return any(in_memory(w, base, roots) for w in operands[1:]) or _find_patterns_state(operands[1:]) \
            or _find_reaches_memory(operands[1:], base)
    if name in ("ls", "echo", "printf", "git", "grep", "rg") and any(
            in_memory(w, base, roots) for w in operands[1:] if not w.startswith((":!", ":^", ":(exclude"))):
        return True
    return _searches_memory(name, operands[1:], base)


# grep's options whose value is the next word, and the flags that make it search folders
_GREP_VALUES = ("-e", "-f", "-m", "-A", "-B", "-C", "--regexp", "--file", "--max-count", "--include", "--exclude",
                "--exclude-dir", "-g", "--glob", "--iglob", "-t", "--type", "-T", "--type-not")
_SEARCH_ADVICE = ("; leave .gitmem/ out of the search (grep --exclude-dir=.gitmem, rg without --hidden, "
                  "git grep … -- ':!.gitmem', find … -path ./.gitmem -prune -o …)")


def _searches_memory(name: str, args: list[str], base: str) -> bool:
    """Whether grep -r, rg --hidden, git grep or git ls-files searches a folder holding .gitmem/
    without leaving it out: its output may name the developer's entries."""
    if _leaves_memory_out(args):
        return False
    if name in ("git", "git.exe"):
        sub = next((a for a in args if not a.startswith("-")), "")
        if sub not in ("grep", "ls-files"):
            return False
        rest = args[args.index(sub) + 1:]
        if "--" in rest:
            specs = rest[rest.index("--") + 1:]
        else:
            specs = _past_pattern(rest) if sub == "grep" else _search_operands(rest)
        return not specs or any(_holds_memory(w, base) or _pathspec_matches_memory(w) for w in specs)
    if name in ("grep", "egrep", "fgrep"):
        recursive = any(a in ("--recursive", "--dereference-recursive") or (a[:1] == "-" and a[1:2] != "-"
                                                                            and ("r" in a or "R" in a)) for a in args)
        if not recursive:
            return False
    elif name == "rg":  # it leaves hidden folders out unless told otherwise
        if not any(a in ("--hidden", "-.", "--no-ignore-dot") or a.startswith("-uu") for a in args):
            return False
    else:
        return False
    if not _filters_admit_memory(args):
        return False
    folders = _past_pattern(args)
    return not folders or any(_holds_memory(w, base) for w in folders)


def _past_pattern(args: list[str]) -> list[str]:
    """What a search is told to search: its operands after the pattern (the first, unless -e or
    -f gives it)."""
    values = _search_operands(args)
    return values if any(a in ("-e", "-f", "--regexp", "--file") for a in args) else values[1:]


def _filters_admit_memory(args: list[str]) -> bool:
    """Whether grep's `--include` globs and rg's `-g` globs and `-t` types let an entry file
    through (`--include='*.py'`, `-t py` do not; `-t yaml` does)."""
    entry = os.path.basename(_MEMORY_SAMPLES[0])
    for k, arg in enumerate(args):
        flag, eq, value = arg.partition("=")
        if not eq:
            flag, value = arg, args[k + 1] if k + 1 < len(args) else ""
        if flag in ("--include", "-g", "--glob", "--iglob") and value and not value.startswith("!") and \
                not any(glob_matches(v.lower(), entry) for v in value.split(",")):
            return False
        if flag in ("-t", "--type") and value.lower() not in ("yaml", "yml", "all"):
            return False
    return True


def _leaves_memory_out(args: list[str]) -> bool:
    """`--exclude-dir=.gitmem`, `--exclude-dir .gitmem`, rg's `-g '!.gitmem'`, git's `':!.gitmem'`."""
    for k, arg in enumerate(args):
        low = arg.lower()
        if "gitmem" not in low:
            continue
        flag = args[k - 1] if k else ""
        if low.startswith(("--exclude", ":!", ":^", ":(exclude")) or flag.startswith("--exclude") or (
                flag in ("-g", "--glob", "--iglob") and low.startswith("!")) or low.startswith(("--glob=!", "-g!")):
            return True
    return False


def _search_operands(args: list[str]) -> list[str]:
    """A search command's operands, less its options and their values."""
    out, k = [], 0
    while k < len(args):
        if args[k] in _GREP_VALUES:
            k += 2
            continue
        if not args[k].startswith("-"):
            out.append(args[k])
        k += 1
    return out


def _holds_memory(folder: str, base: str) -> bool:
    """Whether `folder` (as a command given it reads it) is a folder that holds .gitmem/."""
    full = os.path.normpath(os.path.join(base, os.path.expanduser(folder)))
    return os.path.isdir(os.path.join(full, ".gitmem"))


def _find_starts(args: list[str]) -> list[str]:
    """find's starting points: its words before the first test, option or parenthesis."""
    return list(itertools.takewhile(lambda w: w[:1] not in ("-", "(", "!"), args))


def _find_reaches_memory(args: list[str], base: str) -> bool:
    """Whether find starts in a folder holding .gitmem/, does not keep out of it (a -prune naming
    it, a negated pattern that matches it: `-not -path './.git*'`), goes deep enough, and its name
    and path patterns, if any, all match an entry file (`-name '*.yaml'`, not `'*.py'`)."""
    if any("gitmem" in a.lower() for a in args):
        return False
    if not any(_holds_memory(w, base) for w in _find_starts(args) or ["."]):
        return False
    depth = next((args[k + 1] for k, a in enumerate(args[:-1]) if a == "-maxdepth"), "")
    # at depth 1 only the folder itself is within reach, deeper its files
    samples = [".gitmem"] if depth == "1" else [] if depth == "0" else list(_MEMORY_SAMPLES)
    for k, flag in enumerate(args[:-1]):
        kind = "name" if flag in ("-name", "-iname") else "path" if flag in (
            "-path", "-ipath", "-wholename", "-iwholename") else ""
        if not kind:
            continue
        pattern = args[k + 1].lower()
        matches = [s for s in samples if glob_matches(pattern, os.path.basename(s) if kind == "name" else "./" + s)]
        negated = k > 0 and args[k - 1] in ("-not", "!")
        samples = [s for s in samples if s not in matches] if negated else matches
    return bool(samples)


# Words of a `for` loop's list that name what the gate guards: the loop's variable is read as one of them.
_GUARDED_WORDS = ("gitmem", ".claude", ".codex", ".gemini")


def expand_variables(command: str) -> str:
    """`command` with `$NAME` and `${NAME}` replaced by the value a `NAME=value` (or `export
    NAME=value`, or `for NAME in …`) on the same command line gives it, the last such value when
    there are several; `$HOME` by the home folder."""
    if "$" not in command:
        return command  # most commands: no second pass over them
    values: dict[str, str] = {"HOME": os.path.expanduser("~")}  # the agent's shell has the hook's HOME
    for segment in segments(command):
        words = _words(segment)
        if words[:1] == ["for"] and words[2:3] == ["in"] and len(words) > 3:
            # the loop's variable takes each word in turn: a path into memory among them counts
            values[words[1]] = next((w for w in words[3:] if any(g in w.lower() for g in _GUARDED_WORDS)), words[3])
            continue
        if words[:1] in (["export"], ["local"], ["declare"], ["readonly"], ["typeset"]):
            words = words[1:]
        if all(_assignment(word) for word in words):  # `NAME=v cmd` sets NAME for cmd alone
            for word in words:
                name, _, value = word.partition("=")
                values[name] = value
        for word in words:  # `: ${NAME:=value}` assigns too
            if word.startswith("${") and word.endswith("}") and ("=" in word):
                name, _, value = word[2:-1].partition("=")
                if name.rstrip(":").isidentifier():
                    values[name.rstrip(":")] = value
    for name in sorted(values, key=len, reverse=True):  # $GITMEM_X before $GITMEM
        command = command.replace("${" + name + "}", values[name]).replace("$" + name, values[name])
    return _parameter_forms(command, values)


def _parameter_forms(command: str, values: Mapping[str, str]) -> str:
    """`${NAME:-word}` (and `:=`, `-`, `=`, `:+`, `+`) read as the word it may give, `${NAME,,}`
    (and `^^`, `,`, `^`) as NAME's value: either may spell a path into memory."""
    out, k = [], 0
    while (start := command.find("${", k)) >= 0:
        close = command.find("}", start)
        if close < 0:
            break
        inner = command[start + 2:close]
        name = inner[:next((i for i, ch in enumerate(inner) if not (ch.isascii() and (ch.isalnum() or ch == "_"))),
                           len(inner))]
        rest = inner[len(name):]
        op = next((o for o in (":-", ":=", ":+", "-", "=", "+") if rest.startswith(o)), None)
        if name and op and name in values:  # set: its value, or with `+` the word
            shown = rest[len(op):] if "+" in op else values[name]
        elif name and op:
            shown = rest[len(op):]
        elif name in values and rest[:1] in ("%", "#", ",", "^"):  # its value, cut or recased
            shown = values[name]
        elif name and rest in (",,", "^^", ",", "^"):
            shown = values.get(name, "${" + name + "}")
        else:
            shown = command[start:close + 1]
        out += [command[k:start], shown]
        k = close + 1
    return "".join(out) + command[k:]


def _nested_denial(words: list[str], base: str, roots: tuple[str, ...], depth: int) -> str | None:
    """A command line inside this one: `sh -c '…'`, `eval …`, or an interpreter's inline code,
    wherever the shell or interpreter stands (behind `sudo -u x`, `xargs`, `find -exec`)."""
    if depth >= MAX_DEPTH:
        return None
    for j, word in enumerate(words):
        name, rest = os.path.basename(word), words[j + 1:]
        reason = None
        if name == "eval" and j == _command_start(words):  # also `command eval`, `X=1 eval`
            reason = command_denial(" ".join(rest), base, roots, depth + 1)
        elif name == "trap" and j == _command_start(words) and rest:  # `trap 'rm -rf .gitmem' EXIT`
            reason = command_denial(rest[0], base, roots, depth + 1)
        elif name in _SHELLS or name == "script":  # script(1) runs its -c/--command in a shell
            code = _command_option(rest)
            reason = command_denial(code, base, roots, depth + 1) if code else None
        elif name.rstrip("0123456789.") in _INTERPRETERS:  # python3.11, lua5.4
            code = " ".join(rest[k + 1] for k, flag in enumerate(rest[:-1]) if flag in _INLINE_CODE)
            reason = _code_denial(code, f"{name} {rest[0]}", roots) if code else None
        if reason:
            return reason
    return None


def shell_code(words: list[str]) -> str | None:
    """The command line a simple command (command_words) hands to a shell of its own: `bash -lc
    CODE`, `sh -c CODE` (behind launchers: `timeout 60 bash -c`), `eval WORDS`; None otherwise."""
    if not words:
        return None
    name, rest = os.path.basename(words[0]), words[1:]
    if name == "eval":
        return " ".join(rest) or None
    return _command_option(rest) if name in _SHELLS else None


def _command_option(args: list[str]) -> str | None:
    """The code a shell (or script(1)) is given to run: `-c CODE`, `-lc CODE`, `--command CODE`,
    `--command=CODE`."""
    code = next((args[k + 1] for k, flag in enumerate(args[:-1])
                 if (flag.startswith("-") and not flag.startswith("--") and "c" in flag) or flag == "--command"), None)
    return code or next((w.partition("=")[2] for w in args if w.startswith("--command=")), None)


def _in_place(args: list[str]) -> bool:
    """A stream editor's in-place flag: -i alone or among short flags (sed -Ei), --in-place."""
    return any((w[:1] == "-" and w[:2] != "--" and "i" in w) or w.startswith(("--in-place", "--inplace"))
               for w in args)


def _writes_by_flag(name: str, args: list[str]) -> bool:
    """A formatter or linter told to write the files it is given (prettier --write, eslint --fix)."""
    return name in _WRITE_FLAGS and any(w.split("=", 1)[0] in _WRITE_FLAGS[name] for w in args)


MAX_FILE_OPERANDS = 24  # words of a command line looked at as files, at most


def file_operands(command: str) -> list[tuple[str, bool]]:
    """The words of a command line that may name files, each with whether the command writes it
    (for delivery, which brings a file's entries before the agent changes it, as for its Edit tool;
    the read-only gate above is what stops writes to memory): redirection targets, tee's files,
    in-place edits (`sed -i`), copy and move destinations, what editors, writers (`touch`, `rm`) and
    formatters with their write flag are given are written; other operands are read (`cat f`)."""
    found: dict[str, bool] = {}
    for segment in segments(command):
        words = _past_keywords(_words(segment))
        for i, word in enumerate(words[:-1]):
            if _redirection(word) and ">" in word and not words[i + 1].startswith("&"):
                found[words[i + 1]] = True
        operands = _operands(words)
        start = _command_start(operands)
        if start >= len(operands):
            continue
        name, rest = os.path.basename(operands[start]), operands[start + 1:]
        if name in _SHELLS or name in _INTERPRETERS or name in ("eval", "git", "git.exe", "find", "xargs"):
            continue  # their words are code, subcommands or patterns (a git commit is a cue of its own)
        plain = [w for k, w in enumerate(rest) if not w.startswith("-") and not (k and _excluding(rest[k - 1]))]
        if name in ("echo", "printf", "Write-Output", "Write-Host"):
            plain = []  # text, not files
        written: list[str] = []
        if name in _COPIERS or name in ("mv", "Move-Item"):
            written = _copy_destinations(name, rest, ".") if name != "mv" else plain[-1:]
        elif name in _IN_PLACE:
            edited = _edited(name, rest)
            written, plain = (edited, edited) if _in_place(rest) else ([], edited)
        elif name in _EDITORS:
            plain = [w for w in plain if not w.startswith("+")]
            written = [] if any(w in ("-R", "-M") for w in rest) else plain
        elif name in _WRITERS or _writes_by_flag(name, rest):
            written = plain
        for word in plain:
            found.setdefault(word, False)
        for word in written:
            found[word] = True
        if len(found) >= MAX_FILE_OPERANDS:
            break
    return [(w, written) for w, written in list(found.items())[:MAX_FILE_OPERANDS]
            if w and "\n" not in w and not w.isdigit()]  # `2>&1`'s descriptors are no files


def _code_denial(code: str, what: str, roots: tuple[str, ...]) -> str | None:
    """Why an interpreter may not run `code` (inline, or read on stdin): it runs gitmem's writing
    commands or library, or names memory's files (reading or writing: the hook cannot tell)."""
    if _runs_gitmem_writer(code):
        return _runs_code(f"that writes gitmem's memory ({what} …)")
    if names_memory(code, roots):
        return _runs_code(f"that names gitmem's memory files ({what} …)")
    if any(r.replace("\\", "/").endswith(HARNESS_SETTINGS) for r in roots) and \
            any(name in code.replace("\\", "/") for name in HARNESS_SETTINGS):
        return _runs_code(f"that names an agent's settings, which hold gitmem's hooks ({what} …)")
    return None


def names_memory(text: str, roots: tuple[str, ...] = ()) -> bool:
    """Whether code names memory's files: `.gitmem`, gitmem's state in a git dir (`.git/gitmem`,
    `os.path.join('.git', 'gitmem')`, the gate's `gate-verdicts`), or one of `roots`; any case."""
    low = text.lower().replace("\\", "/")
    if ".gitmem" in low or "gate-verdicts" in low or ".git/gitmem" in low:
        return True
    if any(root.lower().replace("\\", "/") in low for root in roots):
        return True
    tokens = "".join(ch if ch.isalnum() or ch in "._-" else " " for ch in low).split()
    return any(a == ".git" and b == "gitmem" for a, b in itertools.pairwise(tokens))


def _runs_gitmem_writer(code: str) -> bool:
    """Whether inline code names gitmem (the command, `gitmem.cli` or the library) together with
    one of its writing commands (`['gitmem', 'add', …]`, `os.system("gitmem revoke …")`,
    `Memory(…).add(…)` after `import gitmem…`)."""
    tokens = "".join(ch if ch.isalnum() or ch in "._-/" else " " for ch in code).split()
    names = [os.path.basename(t).strip(".") for t in tokens]
    if not any(n in ("gitmem", "gitmem.exe") or n.startswith("gitmem.") for n in names):
        return False
    # the command line's interface itself (`from gitmem import cli; cli.main()` with the
    # subcommand among the interpreter's arguments) runs whatever it is given
    return any(n.rsplit(".", 1)[-1] in (*WRITING_SUBCOMMANDS, *LIBRARY_WRITERS, "cli", "__main__", "runpy")
               for n in names)


def _segment_denial(words: list[str], base: str, roots: tuple[str, ...]) -> str | None:
    # Redirections into memory, whatever the command.
    for i, word in enumerate(words):
        if _redirection(word) and ">" in word:
            target = words[i + 1] if i + 1 < len(words) else ""
            if target and in_memory(target, base, roots):
                return REASON.format(what=f"write into gitmem's memory files ({word} {target})")
    words = _operands(words)
    i = _command_start(words)
    if i >= len(words):
        return None
    # git configuration given in the environment (`GIT_CONFIG_VALUE_0='!gitmem add …' git x`)
    for word in words[:i]:
        if _assignment(word) and word.upper().startswith("GIT_CONFIG") and _runs_gitmem_writer(word.partition("=")[2]):
            return REASON.format(what="define a git alias that writes gitmem's memory (in the environment)")
        if _assignment(word) and word.upper().startswith(("GIT_CONFIG_KEY", "GIT_CONFIG_PARAMETERS")) and \
                any(key in word.lower() for key in _HOOK_KEYS):
            return REASON.format(what="run git without gitmem's hooks or drivers (in the environment)")
    # gitmem itself, wherever it stands (behind sudo -u x, uv run, python -m gitmem.cli, ...).
    # Behind xargs (found once: a long command line is read in linear time) gitmem's arguments come
    # on stdin; run as the command (not a path among another's arguments: `git -C vendor/gitmem
    # pull`), its subcommand must be one that reads.
    xargs = next((k for k, w in enumerate(words) if os.path.basename(w) == "xargs"), len(words))
    for j, word in enumerate(words):
        if os.path.basename(word.strip("()\"'")) in ("gitmem", "gitmem.exe"):
            reason = _gitmem_denial(words[j + 1:], j == i or xargs < j, xargs < j)
        elif word == "-m" and words[j + 1:j + 2] in (["gitmem"], ["gitmem.cli"]):
            reason = _gitmem_denial(words[j + 2:], True, xargs < j)
        elif word in ("-mgitmem", "-mgitmem.cli"):
            reason = _gitmem_denial(words[j + 1:], True, xargs < j)
        else:
            continue
        if reason:
            return reason
    name = os.path.basename(words[i])
    rest = words[i + 1:]
    if name in ("apply_patch", "applypatch"):  # Codex's, given the patch as its argument
        reason = next((r for text in rest if (r := _patch_denial(text, base, roots))), None)
        if reason:
            return reason
    # what a command is told to leave alone (`--exclude .gitmem`, `--ignore-pattern '.gitmem/**'`)
    # and the script of a stream editor (`sed -i 's/.gitmem/.memory/' docs/x.md`) name no target
    kept = [w for k, w in enumerate(rest) if not (k and _excluding(rest[k - 1]))]
    if name in _IN_PLACE:
        kept = _edited(name, kept)
    elif name in _EDITORS:  # `+N`, `+/pattern`, `+cmd` are no files (a command is read below)
        kept = [w for w in kept if not w.startswith("+")]
    elif name == "find":  # its starting points; a pattern naming gitmem is _find_patterns_state's
        for k, word in enumerate(rest):
            if word in ("-exec", "-execdir", "-ok", "-okdir"):  # the command it runs, read as one
                run = list(itertools.takewhile(lambda w: w not in (";", "\\;", "+"), rest[k + 1:]))
                reason = _segment_denial(run, base, roots) if run else None
                if reason:
                    return reason
        kept = _find_starts(kept)
    if name in ("rm", "rmdir", "mv", "Remove-Item", "Move-Item"):  # a folder holding them goes with its files
        sources = [w for w in kept if not w.startswith("-")]
        held = next((w for w in (sources[:-1] if name in ("mv", "Move-Item") else sources)
                     if _holds(w, base, roots)), None)
        if held is not None:
            return REASON.format(what=f"remove or move a folder holding gitmem's memory or an agent's settings "
                                      f"({name} {held})")
    mentions = [w for w in kept if in_memory(w, base, roots)]
    if name in ("mv", "Move-Item"):
        plain = [w for w in kept if not w.startswith("-")]
        mentions += [p for p in _into_folder(plain[-1:], plain[:-1], base) if in_memory(p, base, roots)]
    if name in _COPIERS and _links(name, rest):  # `cp -al .gitmem /tmp/x`: a later write there is one into memory
        mentions = [w for w in kept if not w.startswith("-") and in_memory(w, base, roots)]
    elif name in _COPIERS:  # only the destination is written
        mentions = [w for w in _copy_destinations(name, rest, base) if in_memory(w, base, roots)]
    if name == "dd":
        mentions = [w[3:] for w in rest if w.startswith("of=") and in_memory(w[3:], base, roots)]
    if name in ("git", "git.exe"):
        # `--work-tree=.gitmem/x`, `--prefix=.gitmem/`, `--cacheinfo 100644,SHA,.gitmem/x.yaml`
        parts = [w.partition("=")[2] for w in rest if w.startswith("--") and "=" in w]
        parts += [p for w in rest if "," in w for p in w.split(",")[1:]]
        mentions += [p for p in parts if p and in_memory(p, base, roots)]
        mentions += [w for k, w in enumerate(kept) if not w.startswith("-") and _pathspec_matches_memory(w)
                     and kept[k - 1:k] not in (["-e"], ["--exclude"])]  # `git clean -e '*.yaml'` keeps them
        if any(w in ("rm", "mv") for w in kept):  # `git rm -r .claude`: a folder holding them goes too
            mentions += [w for w in kept if not w.startswith("-") and w not in ("rm", "mv") and _holds(w, base, roots)]
        return _git_denial(rest, mentions)
    if name in _DOWNLOADERS:
        written = [t for t in _download_targets(name, rest) if t and t != "-"]
        if any(in_memory(t, base, roots) for t in written) or in_memory(".", base, roots):
            return REASON.format(what=f"download into gitmem's memory files ({name} …)")
    if name in _OUTPUT_FLAGS and any(in_memory(t, base, roots) for t in _download_targets(name, rest, _OUTPUT_FLAGS)):
        return REASON.format(what=f"write into gitmem's memory files ({name} -o …)")
    if name == "find" and _find_patterns_state(rest) and _find_changes(rest):
        return REASON.format(what="change gitmem's memory files (find naming gitmem's state with -delete/-exec)")
    if name == "find" and _find_changes(rest) and _find_reaches_memory(rest, base):
        return REASON.format(what="change gitmem's memory files (find -exec/-delete over a folder holding "
                                  ".gitmem/)") + _SEARCH_ADVICE
    if name in _EDITORS and any(names_memory(w, roots) and not in_memory(w, base, roots)
                                and not w.startswith(("+/", "+?")) for w in rest):  # `+/.gitmem`: a search
        # a script given to the editor (`vim -es -c 'w! .gitmem/…'`, `vim +'w …'`, emacs --eval)
        return REASON.format(what=f"run an editor command on gitmem's memory files ({name} …)")
    if not mentions:
        if name in _INTERPRETERS and any(names_memory(w, roots) for w in rest):
            return _runs_code("that names gitmem's memory files")
        return None
    target = mentions[0]
    advice = _SEARCH_ADVICE if target == _LISTED else ""
    if name in _EDITORS and any(w in ("-R", "-M") for w in rest):
        return None  # read-only
    if name == "tar" and not _extracts(rest):
        return None  # it archives or lists memory: a read
    if name in _WRITERS or name == "dd":
        return REASON.format(what=f"change gitmem's memory files ({name} {target})") + advice
    if name in _IN_PLACE and _in_place(rest):
        return REASON.format(what=f"edit gitmem's memory files in place ({name} -i {target})") + advice
    if _writes_by_flag(name, rest):
        return REASON.format(what=f"change gitmem's memory files ({name} {target})")
    if name in ("awk", "gawk") and any("inplace" in w for w in rest):
        return REASON.format(what=f"edit gitmem's memory files in place ({name} -i inplace {target})")
    if name == "find" and _find_changes(rest):
        return REASON.format(what=f"change gitmem's memory files (find {target} …)")
    if name in _INTERPRETERS:
        return _runs_code(f"on gitmem's memory files ({name} {target})")
    return None


def _links(name: str, args: list[str]) -> bool:
    """Whether cp or rsync makes links to what it copies (cp -l/--link, cp -s/--symbolic-link,
    rsync --link-dest): a write through the link is a write into the file."""
    if name == "rsync":
        return any(a.startswith("--link-dest") for a in args)
    def flags(arg: str) -> str:  # a cluster's letters before one that takes a value (`-rvt DIR`, `-S SUFFIX`)
        letters = arg[1:]
        cut = min((i for i, ch in enumerate(letters) if ch in "tS"), default=len(letters))
        return letters[:cut]

    return name == "cp" and any(a in ("--link", "--symbolic-link") or (
        a[:1] == "-" and a[1:2] != "-" and ("l" in flags(a) or "s" in flags(a))) for a in args)


def hard_link_to_memory(path: str, worktree: str) -> bool:
    """Whether `path` is a hard link to one of the work tree's memory files (another name for the
    same file, which no path check sees)."""
    try:
        found = os.stat(path)
    except OSError:
        return False
    if found.st_nlink < 2 or not os.path.isfile(path):
        return False
    for folder, _, files in os.walk(os.path.join(worktree, ".gitmem")):
        for file in files:
            try:
                other = os.stat(os.path.join(folder, file))
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == (found.st_dev, found.st_ino):
                return True
    return False


def _extracts(args: list[str]) -> bool:
    """Whether tar extracts (`-x`, `xzf`, `--extract`, `--get`): the one mode that writes files."""
    first = args[0] if args else ""
    return any(w in ("--extract", "--get") or (w.startswith("-") and not w.startswith("--") and "x" in w)
               for w in args) or (not first.startswith("-") and "x" in first)


def _excluding(flag: str) -> bool:
    """A flag whose value the command leaves alone: --exclude, --ignore-pattern, --ignore, -not."""
    low = flag.lower()
    return low.startswith("-") and "=" not in low and ("exclude" in low or "ignore" in low)


def _edited(name: str, args: list[str]) -> list[str]:
    """The files a stream editor edits in place, less its script: sed's first operand when no -e
    or -f gives it, and the values of -e/-f (perl, ruby: -e; yq: its first operand)."""
    out, k, script_given = [], 0, False
    while k < len(args):
        word = args[k]
        clustered = name in ("perl", "ruby") and word[:1] == "-" and word[1:2] != "-" and word.endswith("e")
        if word in ("-e", "-f", "--expression", "--file") or clustered:  # perl -pie: the script follows
            script_given = True
            k += 2
            continue
        if not word.startswith("-"):
            out.append(word)
        k += 1
    return out if script_given or name not in ("sed", "gsed", "yq") else out[1:]


def _copy_destinations(name: str, args: list[str], base: str) -> list[str]:
    """Where cp, install, rsync or scp write: the folder of cp's and install's `-t DIR` /
    `--target-directory=DIR`, else the last operand; and DEST/.gitmem when a folder named .gitmem
    is copied into DEST, the folder the command runs in or one on its way
    (`cp -r /tmp/backup/.gitmem .`; a backup of memory elsewhere is no write into it)."""
    operands, targets = [], []
    k = 0
    target_flags = name in ("cp", "install")  # rsync's -t keeps times, scp's is its own protocol
    while k < len(args):
        word = args[k]
        if not target_flags and word.startswith("-"):
            pass
        elif word in ("-t", "--target-directory"):
            targets.append(args[k + 1] if k + 1 < len(args) else "")
            k += 1
        elif word.startswith("--target-directory="):
            targets.append(word.partition("=")[2])
        elif word[:1] == "-" and word[1:2] != "-" and "t" in word[1:]:  # -t, -tDIR, -vt DIR, -rvtDIR
            value = word[word.index("t", 1) + 1:]
            if not value:
                value = args[k + 1] if k + 1 < len(args) else ""
                k += 1
            targets.append(value)
        elif not word.startswith("-"):
            operands.append(word)
        k += 1
    sources = operands if targets else operands[:-1]
    targets = targets or operands[-1:]
    copied = [s for s in sources if os.path.basename(s.rstrip("/\\")).lower() == ".gitmem"]
    return targets + [os.path.join(t, ".gitmem") for t in targets for _ in copied[:1] if _on_the_way(t, base)] + \
        _into_folder(targets, sources, base)


def _into_folder(targets: list[str], sources: list[str], base: str) -> list[str]:
    """What a copy or move writes into a target that is a folder: FOLDER/<each source's name>
    (`cp /tmp/settings.json .claude/`)."""
    folders = [t for t in targets
               if t.endswith(("/", "\\")) or os.path.isdir(os.path.join(base, os.path.expanduser(t)))]
    names = [name for src in sources if (name := os.path.basename(src.rstrip("/\\"))).lower() != ".gitmem"]
    return [os.path.join(t, name) for t in folders for name in names]  # .gitmem: _copy_destinations' own rule


def _on_the_way(folder: str, base: str) -> bool:
    """Whether `folder` is an existing folder that is `base`, lies in it, or is a repository's
    top (where .gitmem lives: `cp -r /tmp/backup/.gitmem ..` from src/)."""
    full = os.path.normpath(os.path.join(base, os.path.expanduser(folder)))
    if not os.path.isdir(full):
        return False
    return full == base or full.startswith(base.rstrip(os.sep) + os.sep) or os.path.exists(os.path.join(full, ".git"))


def command_words(segment: str) -> list[str]:
    """The words of one simple command from its command name on: quotes removed, shell keywords,
    assignments, launchers and their options skipped, redirections dropped."""
    words = _operands(_past_keywords(_words(segment)))
    return words[_command_start(words):]


def _past_keywords(words: list[str]) -> list[str]:
    """`do sed -i …`, `then rm …`, `! cp …`: the command follows the shell's keywords."""
    k = 0
    while k < len(words) and words[k] in _RESERVED:
        k += 1
    return words[k:]


def _command_start(words: list[str]) -> int:
    """Where the command behind assignments and launchers starts: past their options and the
    options' values (`sudo -u bob`, `xargs -I {}`, `nice -n 5`, `env -u NAME`) and timeout's
    duration (`timeout -s KILL 5`)."""
    i, launcher, positional = 0, "", 0
    while i < len(words):
        word = words[i]
        if word in _LAUNCHERS:
            launcher = os.path.basename(word)
            positional = _LAUNCHER_ARGS.get(launcher, 0)
            i += 1
        elif _assignment(word):
            i += 1
        elif launcher and word.startswith("-"):
            takes_value = len(word) == 2 and word[1] in _LAUNCHER_VALUES.get(launcher, "")
            i += 2 if takes_value else 1
        elif positional:
            positional -= 1
            i += 1
        else:
            break
    return i


# The launchers' options whose value is the next word (`-u bob`): that word is no command.
_LAUNCHER_VALUES = {"sudo": "ugpCDhRrTtU", "doas": "uaC", "env": "uCS", "nice": "n", "ionice": "cnp",
                    "xargs": "ILnPsdEa", "timeout": "sk", "flock": "wE"}
# The words a launcher takes before the command: timeout's duration, flock's lock file, taskset's
# mask, chrt's priority.
_LAUNCHER_ARGS = {"timeout": 1, "flock": 1, "taskset": 1, "chrt": 1}


def cd_target(words: list[str]) -> str | None:
    """The folder a `cd` (pushd, PowerShell's Set-Location) moves to: its one operand, before any
    redirection (`cd .gitmem 2>/dev/null`) and after its options; None for any other command."""
    if not words or words[0] not in ("cd", "pushd", "Set-Location", "sl", "chdir"):
        return None
    moves = [w for w in _operands(words)[1:] if w[:1] != "-" or w == "-"]
    if not moves and words[0] in ("cd", "chdir"):
        return os.path.expanduser("~")  # a bare `cd` goes home
    return os.path.expanduser(moves[0]) if moves else None


def _operands(words: list[str]) -> list[str]:
    """A command's words less its redirections (`> out`, `2>&1`, `<<'EOF'`, `<<< text`)."""
    return [w for i, w in enumerate(words) if not _redirection(w) and not (i and _redirection(words[i - 1]))]


def _redirection(word: str) -> bool:
    """A redirection operator as _words leaves it (`>`, `>>`, `2>`, `&>`, `>|`, `>&`, `<<<`); a
    quoted word that merely ends in one (`-m "Return Option<T>"`) is none."""
    return bool(word) and word[-1] in "<>|&" and set(word) <= _REDIRECTION_CHARS and ("<" in word or ">" in word)


_REDIRECTION_CHARS = frozenset("<>&|0123456789")


def _download_targets(name: str, args: list[str],
                      flags: Mapping[str, tuple[str, tuple[str, ...]]] = _DOWNLOADERS) -> list[str]:
    """The files (or folders) curl or wget (or sort -o) writes: -o/-O FILE, -sSo FILE, -oFILE,
    --output=FILE, …"""
    letters, long = flags[name]
    out = []
    for k, word in enumerate(args):
        following = args[k + 1] if k + 1 < len(args) else ""
        if word.startswith("--"):
            flag, eq, value = word.partition("=")
            if flag in long:
                out.append(value if eq else following)
        elif word.startswith("-"):
            at = next((c for c, ch in enumerate(word) if c and ch in letters), 0)
            if at:
                out.append(word[at + 1:] or following)
    return out


def _find_patterns_state(args: list[str]) -> bool:
    """Whether find's -name/-path/-regex patterns name gitmem's state or memory (gate-verdicts,
    a folder gitmem or .gitmem; any case)."""
    return any(flag.lstrip("-").lower() in _FIND_PATTERNS and
               any(mark in args[k + 1].lower() for mark in ("gitmem", "verdicts"))
               and args[k + 2:k + 3] != ["-prune"] and (k == 0 or args[k - 1] not in ("-not", "!"))
               for k, flag in enumerate(args[:-1]))  # `-path ./.gitmem -prune`, `-not -path …`: kept away


def _find_changes(args: list[str]) -> bool:
    """Whether find deletes or runs a command on what it finds (-delete, -exec/-ok …, -fprint);
    -exec of a command that only reads (cat, ls, grep) does not count."""
    for k, word in enumerate(args):
        if word in ("-delete", "-fprint", "-fprint0", "-fprintf", "-fls"):
            return True
        if word in ("-exec", "-execdir", "-ok", "-okdir"):
            command = os.path.basename(args[k + 1]) if k + 1 < len(args) else ""
            if command not in _READERS:
                return True
    return False


def _gitmem_denial(args: list[str], as_command: bool, behind_xargs: bool) -> str | None:
    """`as_command`: gitmem is the command run (else the word may be a path: only a writer's name counts)."""
    sub = next((a for a in args if not a.startswith("-")), None)
    if sub in WRITING_SUBCOMMANDS:
        return REASON.format(what=f"run `gitmem {sub}`")
    if sub is None and behind_xargs:
        return REASON.format(what="run gitmem with a subcommand read from stdin (xargs gitmem)")
    if as_command and sub is not None and sub not in READING_SUBCOMMANDS:
        return REASON.format(what=f"run gitmem with a subcommand the hook cannot read ({sub.strip()!r})")
    return None


# git's options before the subcommand whose value is the next word (`--exec-path` takes one only after `=`)
GIT_VALUE_OPTIONS = ("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix")


def _git_denial(args: list[str], mentions: list[str]) -> str | None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in GIT_VALUE_OPTIONS else 1
    sub = args[i] if i < len(args) else ""
    # `git -c alias.x='rm -r' x .gitmem`, `-c alias.x='!rm -rf .gitmem'`: the alias may write anything
    aliases = [v.partition("=")[2] for k, v in itertools.pairwise(args[:i + 1])
               if k == "-c" and v.lower().startswith("alias.")]
    if aliases and (mentions or any(names_memory(a) or _runs_gitmem_writer(a) for a in aliases)):
        return REASON.format(what=f"change gitmem's memory files (a git alias: {aliases[0]})")
    rest = args[i + 1:]
    values = [a for a in rest if not a.startswith("-")]
    reads = any(a in ("--get", "--get-all", "--list", "-l", "--get-regexp", "get") for a in rest) or (
        len(values) == 1 and not any(a.startswith(("--unset", "--add", "--replace", "--remove", "--rename", "--edit"))
                                     or a == "-e" for a in rest))  # a key alone: git prints it
    if sub == "config" and not reads and any(  # an include's file may set gitmem's keys
            a.lower() == "gitmem" or a.lower().startswith(_GITMEM_KEYS) for a in rest):
        return REASON.format(what="change gitmem's git configuration (its hooks, diff and merge drivers)")
    # `git -c core.hooksPath=/dev/null commit`: that commit would run none of gitmem's hooks
    if any(k == "-c" and v.lower().startswith(_HOOK_KEYS) for k, v in itertools.pairwise(args[:i + 1])):
        return REASON.format(what="run git without gitmem's hooks or drivers (git -c core.hooksPath=…)")
    if sub == "config" and not reads and any(a.lower().startswith("alias.") for a in rest) \
            and any(names_memory(a) or _runs_gitmem_writer(a) for a in rest):
        return REASON.format(what="define a git alias that changes gitmem's memory")
    if sub in _GIT_WRITES and mentions:
        return REASON.format(what=f"change gitmem's memory files (git {sub} {mentions[0]})")
    return None


_MEMORY_SAMPLES = (".gitmem/entries/20260101-00000000.yaml", ".gitmem/config.yaml")
# git configuration gitmem's hooks and drivers depend on (an include may set any of them)
_HOOK_KEYS = ("core.hookspath", "diff.gitmem", "merge.gitmem")
_GITMEM_KEYS = ("gitmem.", "include.", "includeif.", *_HOOK_KEYS)


def _pathspec_matches_memory(word: str) -> bool:
    """Whether a git pathspec glob (`'*gitmem*'`, `'*/entries/*'`, `':(glob)**/*.yaml'`) matches
    memory's files: git's `*` crosses folders (fnmatch's does too)."""
    pattern = word.partition(")")[2] if word.startswith(":(") else word
    if not any(ch in pattern for ch in "*?[") or _literal_letters(pattern) < 3:
        return False  # `*` alone: the shell's, or everything: no word of memory's in it
    import fnmatch  # only for a glob (the hook's path imports nothing it can do without)

    patterns = (pattern, pattern.replace("**/", ""))
    return any(fnmatch.fnmatchcase(sample, p) for sample in _MEMORY_SAMPLES for p in patterns)


def _assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.isidentifier()


def _patch_paths(patch: str) -> list[str]:
    """Files named by a Codex apply_patch text (*** Add/Update/Delete File:, *** Move to:)."""
    found = []
    for line in patch.splitlines():
        line = line.strip()
        for marker in ("*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:", "+++ ", "--- "):
            if line.startswith(marker):
                path = line[len(marker):].strip()
                if marker in ("+++ ", "--- ") and path[:2] in ("a/", "b/"):
                    path = path[2:]
                if path and path != "/dev/null":
                    found.append(path)
    return found


def deny_output(reason: str) -> Mapping[str, object]:
    """The answer Claude Code reads as a denied tool call."""
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": reason}}

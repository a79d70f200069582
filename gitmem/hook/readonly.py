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
  and the gate's verdicts live there);
- shell commands (Bash, PowerShell) that run `gitmem add|revoke|init|uninstall|drain` (also as
  `python -m gitmem.cli`, through env/sudo/xargs/npx-like launchers), that set `gitmem.*` git
  config, or that write a path under one of those folders: a redirection into it,
  tee, sed -i/perl -i, mv, cp, rm, touch, truncate, ln, install, dd of=, rsync, unlink,
  find -delete/-exec, git rm/mv/checkout/restore of it, an interpreter's inline code naming it,
  or any of these after `cd` into it; also inside `sh -c '…'` / `bash -c` / `eval`, behind shell
  variables assigned on the same line (`g=gitmem; $g add …`), and inline code (`python -c`,
  `node -e`) that runs gitmem's writing commands or library.
Reading memory (cat, grep, ls, `gitmem list|show|check|render`, git diff/log) and `git add` /
`git commit` of `.gitmem/` stay allowed.

This reads the command line, it does not run it: a tripwire for the obvious ways, not a sandbox
(a script the agent wrote and then runs is not read). The second line is `gitmem add`/`revoke`
refusing to run in an agent's shell (gitmem.cli), the last the gate on every stored entry and
the review of the commit that adds it.

Standard library only and no `re` (the hook runs in front of every tool call).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

_BRANCH_FOLDERS = ("refs", "logs")  # a branch may be named gitmem: refs/heads/gitmem, logs/refs/heads/gitmem
WRITING_SUBCOMMANDS = ("add", "revoke", "init", "uninstall", "drain")
FILE_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
SHELL_TOOLS = ("Bash", "PowerShell")
PATCH_TOOL = "apply_patch"
_LAUNCHERS = ("sudo", "env", "time", "command", "exec", "nohup", "xargs", "nice", "ionice", "timeout", "doas",
              "builtin", "stdbuf", "uvx", "pipx", "npx", "run", "uv", "poetry", "pdm", "hatch", "rye", "--")
_WRITERS = ("tee", "mv", "cp", "rm", "rmdir", "touch", "truncate", "ln", "install", "rsync", "unlink", "shred",
            "chmod", "chown", "mkdir", "patch", "tar", "unzip", "Set-Content", "Add-Content", "Out-File",
            "Remove-Item", "Move-Item", "Copy-Item", "New-Item", "Clear-Content", "ni", "del", "erase", "ri", "sc",
            "ac")
_COPIERS = ("cp", "rsync", "install", "scp", "Copy-Item")
_IN_PLACE = ("sed", "gsed", "perl", "ruby")  # with -i
_SHELLS = ("sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "busybox", "su")
_INLINE_CODE = ("-c", "-e", "-E", "--eval", "-r", "-p", "--print", "-Command", "-command")  # an interpreter's code flag
MAX_DEPTH = 3  # nested `sh -c` / eval read at most
_INTERPRETERS = ("python", "python3", "node", "perl", "ruby", "sh", "bash", "zsh", "dash", "pwsh", "powershell",
                 "deno", "bun", "php", "lua", "Rscript", "osascript")
_GIT_WRITES = ("rm", "mv", "checkout", "restore", "clean", "reset", "apply", "am", "stash", "update-index",
               "hash-object", "replace", "notes")

MAX_BASES = 16  # a command line's `cd`s tracked at most (each may double them)

REASON = ("gitmem: the agent may not {what}. The repository's memory holds only what the developer "
          "said; the developer records or retires entries themselves (`gitmem add`, `gitmem revoke` "
          "in their own terminal). If this should be remembered, ask the developer to run it.")


def denial(tool: object, tool_input: object, worktree: str, cwd: str | None = None,
           git_dirs: tuple[str, ...] = ()) -> str | None:
    """Why this tool call is refused, or None when it does not touch memory (`git_dirs`: the
    repository's git dir and common dir, which need not lie in the work tree)."""
    if not isinstance(tool_input, dict):
        return None
    base = cwd if cwd and os.path.isabs(cwd) else worktree
    # the work tree's .gitmem/ and .git/gitmem/ are found by name (in_memory); these by place
    roots = tuple(os.path.normpath(os.path.join(d, "gitmem")) for d in git_dirs)
    if tool in FILE_TOOLS:
        path = tool_input.get("file_path") or tool_input.get("notebook_path")
        if isinstance(path, str) and in_memory(path, base, roots):
            return REASON.format(what=f"edit gitmem's memory files ({tool} of {path})")
        return None
    if tool == PATCH_TOOL:
        patch = tool_input.get("command") or tool_input.get("patch") or tool_input.get("input")
        if isinstance(patch, list):
            patch = "\n".join(str(p) for p in patch)
        if isinstance(patch, str):
            for path in _patch_paths(patch):
                if in_memory(path, base, roots):
                    return REASON.format(what=f"edit gitmem's memory files (a patch to {path})")
        return None
    if tool in SHELL_TOOLS:
        command = tool_input.get("command")
        if isinstance(command, str) and command.strip():
            return command_denial(command, base, roots)
    return None


def in_memory(path: str, base: str, roots: tuple[str, ...]) -> bool:
    """Whether `path` (absolute, or relative to `base`) lies in one of `roots` (normalised), names a
    folder called .gitmem anywhere, or lies in gitmem's state inside any .git."""
    path = path.strip().strip("'\"")
    if not path:
        return False
    path = os.path.expanduser(path)
    full = os.path.normpath(os.path.join(base, path))
    if any(full == root or full.startswith(root + os.sep) for root in roots):
        return True
    parts = full.replace("\\", "/").split("/")
    return ".gitmem" in parts or any(part == ".git" and _git_state(parts[i + 1:], "/".join(parts[:i + 1]))
                                     for i, part in enumerate(parts))


def _git_state(inside: list[str], at: str) -> bool:
    """Whether a path inside the git dir `at` lies in gitmem's state there: `gitmem/` (the main
    checkout's, also seen from a linked worktree), `worktrees/NAME/gitmem/` (a linked worktree's
    own), or a `gitmem/` anywhere in a submodule's git dir under `modules/` (whose names may hold
    slashes, so on doubt it counts) unless it is a branch or a git dir itself (it holds HEAD: a
    submodule named gitmem). A worktree merely named gitmem is not."""
    if inside[:1] == ["gitmem"] or (len(inside) >= 3 and inside[0] == "worktrees" and inside[2] == "gitmem"):
        return True
    return inside[:1] == ["modules"] and any(
        part == "gitmem" and not any(p in _BRANCH_FOLDERS for p in inside[2:k])
        and not os.path.isfile("/".join([at, *inside[:k + 1], "HEAD"]))
        for k, part in enumerate(inside) if k >= 2)


def _words(segment: str) -> list[str]:
    """Shell words of one simple command, quotes removed (no expansion)."""
    words: list[str] = []
    current: list[str] = []
    quote = ""
    started = False
    for ch in segment:
        if quote:
            if ch == quote:
                quote = ""
            else:
                current.append(ch)
            continue
        if ch in "'\"":
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
        else:
            current.append(ch)
    if started or current:
        words.append("".join(current))
    return words


def segments(command: str) -> list[str]:
    """Simple commands of a command line: split at ; & | ( ) ` { } and line breaks outside
    quotes (so code inside `python -c "..."` stays one word); `>&`, `&>` stay redirections."""
    out: list[str] = []
    current: list[str] = []
    quote = ""
    for i, ch in enumerate(command):
        if quote:
            if quote == '"' and (ch == "`" or (ch == "$" and command[i + 1:i + 2] == "(")):
                out.append("".join(current))  # command substitution runs even inside "..."
                current = []
                continue
            current.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"":
            quote = ch
            current.append(ch)
        elif ch in ";|(){}`\n" or (ch == "&" and command[i + 1:i + 2] != ">" and command[i - 1:i] != ">"):
            out.append("".join(current))
            current = []
        else:
            current.append(ch)
    out.append("".join(current))
    return [seg for seg in out if seg.strip()]


def command_denial(command: str, base: str, roots: tuple[str, ...], depth: int = 0) -> str | None:
    # Every folder a relative path may be relative to by now: a `cd` adds its target and removes
    # nothing, since it may sit in a subshell, fail, be skipped by || or be undone by `cd -`.
    bases = [base]
    command = expand_variables(command)
    for segment in segments(command):
        words = _words(segment.replace("$", " "))
        if not words:
            continue
        for here in bases:
            reason = _segment_denial(words, here, roots) or _nested_denial(words, here, roots, depth)
            if reason:
                return reason
        if words[0] in ("cd", "pushd", "Set-Location", "sl", "chdir") and len(words) > 1 and len(bases) < MAX_BASES:
            target = os.path.expanduser(words[-1])
            bases += [moved for here in bases if (moved := os.path.normpath(os.path.join(here, target))) not in bases]
    return None


def expand_variables(command: str) -> str:
    """`command` with `$NAME` and `${NAME}` replaced by the value a `NAME=value` (or `export
    NAME=value`) on the same command line gives it, the last such value when there are several."""
    if "$" not in command:
        return command  # most commands: no second pass over them
    values: dict[str, str] = {}
    for segment in segments(command):
        words = _words(segment)
        if words[:1] in (["export"], ["local"], ["declare"], ["readonly"], ["typeset"]):
            words = words[1:]
        for word in words:
            if not _assignment(word):
                break
            name, _, value = word.partition("=")
            values[name] = value
    for name in sorted(values, key=len, reverse=True):  # $GITMEM_X before $GITMEM
        command = command.replace("${" + name + "}", values[name]).replace("$" + name, values[name])
    return command


def _nested_denial(words: list[str], base: str, roots: tuple[str, ...], depth: int) -> str | None:
    """A command line inside this one: `sh -c '…'`, `eval …`, or an interpreter's inline code,
    wherever the shell or interpreter stands (behind `sudo -u x`, `xargs`, `find -exec`)."""
    if depth >= MAX_DEPTH:
        return None
    for j, word in enumerate(words):
        name, rest = os.path.basename(word), words[j + 1:]
        reason = None
        if name == "eval" and j == 0:
            reason = command_denial(" ".join(rest), base, roots, depth + 1)
        elif name in _SHELLS:
            code = next((rest[k + 1] for k, flag in enumerate(rest[:-1])
                         if flag.startswith("-") and not flag.startswith("--") and "c" in flag), None)
            reason = command_denial(code, base, roots, depth + 1) if code else None
        elif name.rstrip("0123456789.") in _INTERPRETERS:  # python3.11, lua5.4
            code = " ".join(rest[k + 1] for k, flag in enumerate(rest[:-1]) if flag in _INLINE_CODE)
            if code and _runs_gitmem_writer(code):
                reason = REASON.format(what=f"run code that writes gitmem's memory ({name} {rest[0]} …)")
        if reason:
            return reason
    return None


def _runs_gitmem_writer(code: str) -> bool:
    """Whether inline code names gitmem (the command, `gitmem.cli` or the library) together with
    one of its writing commands (`['gitmem', 'add', …]`, `os.system("gitmem revoke …")`,
    `Memory(…).add(…)` after `import gitmem…`)."""
    tokens = "".join(ch if ch.isalnum() or ch in "._-/" else " " for ch in code).split()
    names = [os.path.basename(t).strip(".") for t in tokens]
    if not any(n in ("gitmem", "gitmem.exe") or n.startswith("gitmem.") for n in names):
        return False
    return any(n.rsplit(".", 1)[-1] in WRITING_SUBCOMMANDS for n in names)


def _segment_denial(words: list[str], base: str, roots: tuple[str, ...]) -> str | None:
    # Redirections into memory, whatever the command.
    for i, word in enumerate(words):
        if (word and word[-1] == ">") or word.endswith(">|"):
            target = words[i + 1] if i + 1 < len(words) else ""
            if target and in_memory(target, base, roots):
                return REASON.format(what=f"write into gitmem's memory files ({word} {target})")
    words = [w for i, w in enumerate(words) if not (w and (w[-1] in "<>" or w.endswith(">|")))
             and not (i and words[i - 1] and words[i - 1][-1] in "<>")]
    i = 0
    while i < len(words) and (words[i] in _LAUNCHERS or _assignment(words[i]) or
                              (words[i].startswith("-") and i and words[i - 1] in _LAUNCHERS)):
        i += 1
    if i >= len(words):
        return None
    # gitmem itself, wherever it stands (behind sudo -u x, uv run, python -m gitmem.cli, ...).
    for j, word in enumerate(words):
        if os.path.basename(word.strip("()\"'")) in ("gitmem", "gitmem.exe"):
            reason = _gitmem_denial(words[j + 1:])
        elif word == "-m" and words[j + 1:j + 2] in (["gitmem"], ["gitmem.cli"]):
            reason = _gitmem_denial(words[j + 2:])
        else:
            continue
        if reason:
            return reason
    name = os.path.basename(words[i])
    rest = words[i + 1:]
    mentions = [w for w in rest if in_memory(w, base, roots)]
    if name in _COPIERS:  # only the destination is written
        operands = [w for w in rest if not w.startswith("-")]
        mentions = operands[-1:] if operands and in_memory(operands[-1], base, roots) else []
    if name in ("git", "git.exe"):
        return _git_denial(rest, mentions)
    if not mentions:
        if name in _INTERPRETERS and any(".gitmem" in w for w in rest):
            return REASON.format(what="run code that names gitmem's memory files")
        return None
    target = mentions[0]
    if name in _WRITERS or (name == "dd" and any(w.startswith("of=") for w in rest)):
        return REASON.format(what=f"change gitmem's memory files ({name} {target})")
    if name in _IN_PLACE and any(w.startswith("-i") or w == "--in-place" or w.startswith("--in-place=") for w in rest):
        return REASON.format(what=f"edit gitmem's memory files in place ({name} -i {target})")
    if name == "find" and any(w in ("-delete", "-exec", "-execdir", "-ok", "-fprint") for w in rest):
        return REASON.format(what=f"change gitmem's memory files (find {target} …)")
    if name in _INTERPRETERS:
        return REASON.format(what=f"run code on gitmem's memory files ({name} {target})")
    return None


def _gitmem_denial(args: list[str]) -> str | None:
    sub = next((a for a in args if not a.startswith("-")), None)
    if sub in WRITING_SUBCOMMANDS:
        return REASON.format(what=f"run `gitmem {sub}`")
    return None


def _git_denial(args: list[str], mentions: list[str]) -> str | None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-C", "-c") else 1
    sub = args[i] if i < len(args) else ""
    rest = args[i + 1:]
    if sub == "config" and any(a.lower().startswith("gitmem.") for a in rest) and \
            not any(a in ("--get", "--get-all", "--list", "-l", "--get-regexp", "get") for a in rest):
        return REASON.format(what="change gitmem's git configuration")
    if sub in _GIT_WRITES and mentions:
        return REASON.format(what=f"change gitmem's memory files (git {sub} {mentions[0]})")
    return None


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

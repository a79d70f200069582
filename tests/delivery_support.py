"""Drive gitmem's Claude Code hooks exactly as Claude Code does, for the delivery tests.

Each hook runs the command configured in .claude/settings.json through `sh -c`, with
CLAUDE_PROJECT_DIR set and the event as JSON on stdin; matchers select hooks by tool name.
Only gitmem's own hook entries run (a user's hooks in the same file are theirs to test).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

# A small module with two functions, anchored by the delivery tests.
SOURCE = '''\
import os


def f(x):
    y = x + 1
    return y


def g(x):
    return x * 2
'''

ENTRY_LINE = re.compile(r"^- .*\[(\d{8}-[0-9a-f]{8})\]$", re.MULTILINE)
OWN_ERRORS = ("claude hook", "declaration ranges refresh", "delivery upkeep")


class Delivered:
    """What one hook answer put into context: active entry ids, retracted ids, the raw text."""

    def __init__(self, text: str | None) -> None:
        self.text = text or ""
        self.active: list[str] = []
        self.retracted: list[str] = []
        for match in ENTRY_LINE.finditer(self.text):
            line = match.group(0)
            (self.retracted if "This no longer holds" in line else self.active).append(match.group(1))

    @property
    def ids(self) -> set[str]:
        return set(self.active) | set(self.retracted)

    def __bool__(self) -> bool:
        return bool(self.text)

    def __repr__(self) -> str:
        return f"Delivered(active={self.active}, retracted={self.retracted})"


def run_hooks(commands: list[str], payload: dict, event: str, cwd: Path, env: dict[str, str],
              shell: tuple[str, ...] = ("sh", "-c")) -> Delivered:
    """Run each hook command as an agent does (through `shell`, the event as JSON on stdin) and
    collect the additionalContext each one answers; every command must succeed."""
    texts = []
    for command in commands:
        proc = subprocess.run([*shell, command], input=json.dumps(payload).encode(), cwd=cwd, env=env,
                              capture_output=True, timeout=60)
        assert proc.returncode == 0, proc
        if proc.stdout.strip():
            out = json.loads(proc.stdout)["hookSpecificOutput"]
            assert out["hookEventName"] == event
            texts.append(out["additionalContext"])
    return Delivered("\n".join(texts))


def hook_imports(root: Path, payload: dict, env: dict[str, str]) -> set[str]:
    """The modules the hook has loaded when it returns from one event: run through the shim's
    interpreter and import folders, as `-I -S` as the shim runs it."""
    import ast

    from gitmem.delivery import claude_settings

    shim = (root / ".git/gitmem/claude-hook").read_text()
    python = claude_settings.shim_python(shim)
    roots = ast.literal_eval(next(line for line in shim.splitlines()
                                  if line.startswith("sys.path += ")).partition("+= ")[2])
    dump = root.parent / "modules.json"
    code = ("import sys; sys.path += sys.argv[1:]; from gitmem.hook.claude import main; main(); "
            f"import json; open({str(dump)!r}, 'w').write(json.dumps(sorted(sys.modules)))")
    proc = subprocess.run([python, "-I", "-S", "-c", code, *roots], cwd=root, capture_output=True, env=env,
                          input=json.dumps({"session_id": "imports", "cwd": str(root), **payload}).encode())
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(dump.read_text()))


class ClaudeCode:
    """One Claude Code session against a repository whose hooks `gitmem init` configured."""

    def __init__(self, root: Path, session: str = "session-1", background: bool = False) -> None:
        """`background`: the hooks may start background work (the gate's job), as on a developer's
        machine; else GITMEM_NO_DAEMON keeps them from it."""
        self.root = Path(root)
        self.session = session
        self.calls: list[dict] = []
        self.notices: list[str] = []  # systemMessage lines, shown to the developer
        self.quiet = {} if background else {"GITMEM_NO_DAEMON": "1"}

    def commands(self, event: str, tool: str | None = None) -> list[str]:
        settings = json.loads((self.root / ".claude" / "settings.json").read_text(encoding="utf-8"))
        found = []
        for group in settings.get("hooks", {}).get(event, []):
            matcher = group.get("matcher")
            if tool is not None and matcher and matcher != "*" and not re.fullmatch(matcher, tool):
                continue
            found += [h["command"] for h in group.get("hooks", [])
                      if h.get("type") == "command" and "gitmem/claude-hook" in h.get("command", "")]
        return found

    def raw(self, payload: dict | str | bytes, event: str, tool: str | None = None,
            env: dict | None = None) -> list[subprocess.CompletedProcess]:
        data = payload if isinstance(payload, (str, bytes)) else json.dumps(payload)
        if isinstance(data, str):
            data = data.encode()
        full_env = {**os.environ, "CLAUDE_PROJECT_DIR": str(self.root), **self.quiet, **(env or {})}
        return [subprocess.run(["sh", "-c", command], input=data, env=full_env, cwd=self.root,
                               capture_output=True, timeout=60)
                for command in self.commands(event, tool)]

    def send(self, event: str, **fields) -> Delivered:
        payload = {"session_id": self.session, "transcript_path": str(self.root / ".transcript.jsonl"),
                   "cwd": str(self.root), "permission_mode": "default", "hook_event_name": event, **fields}
        self.calls.append(payload)
        texts = []
        for proc in self.raw(payload, event, fields.get("tool_name")):
            assert proc.returncode == 0, proc
            out = proc.stdout.decode()
            if out.strip():
                answer = json.loads(out)
                if "systemMessage" in answer:  # for the developer, not the agent
                    self.notices.append(answer["systemMessage"])
                if "hookSpecificOutput" not in answer:
                    continue
                specific = answer["hookSpecificOutput"]
                assert specific["hookEventName"] == event
                context = specific["additionalContext"]
                assert 0 < len(context) <= 10_000
                assert context.startswith("<gitmem-context>") and context.endswith("</gitmem-context>")
                texts.append(context)
        return Delivered("\n".join(texts))

    # -- moments --------------------------------------------------------------------------
    def start(self, source: str = "startup") -> Delivered:
        return self.send("SessionStart", source=source, model="claude-sonnet")

    def prompt(self, text: str) -> Delivered:
        return self.send("UserPromptSubmit", prompt=text)

    def tool(self, name: str, **tool_input) -> Delivered:
        return self.send("PreToolUse", tool_name=name, tool_input=tool_input, tool_use_id=f"toolu_{len(self.calls)}")

    def read(self, rel: str) -> Delivered:
        return self.tool("Read", file_path=str(self.root / rel))

    def edit(self, rel: str, old: str, new: str, apply: bool = False) -> Delivered:
        """PreToolUse Edit; with apply, the edit is made and PostToolUse follows, as in a real session."""
        delivered = self.tool("Edit", file_path=str(self.root / rel), old_string=old, new_string=new)
        if apply:
            path = self.root / rel
            text = path.read_text(encoding="utf-8")
            assert old in text
            path.write_text(text.replace(old, new, 1), encoding="utf-8")
            after = self.send("PostToolUse", tool_name="Edit",
                              tool_input={"file_path": str(path), "old_string": old, "new_string": new},
                              tool_response={"filePath": str(path), "success": True})
            assert not after, "PostToolUse delivers nothing"
        return delivered

    def bash(self, command: str) -> Delivered:
        return self.tool("Bash", command=command, description="run")

    def stop(self) -> Delivered:
        return self.send("Stop", stop_hook_active=False)

    def end(self) -> Delivered:
        return self.send("SessionEnd", reason="exit")


def add_entry(repo, kind: str, body: str, *extra: str) -> str:
    return repo.gitmem("add", kind, body, *extra).stdout.split()[0]


def own_errors(root: Path) -> str:
    """Tracebacks gitmem's delivery code logged (capture's own are another module's business)."""
    log = Path(root) / ".git" / "gitmem" / "errors.log"
    if not log.exists():
        return ""
    records = re.split(r"(?m)^--- ", log.read_text(encoding="utf-8"))
    return "".join("--- " + r for r in records if r.strip() and any(w in r.split("\n", 1)[0] for w in OWN_ERRORS))


def wait_for_fresh_ranges(root: Path, rel: str, timeout: float = 20.0) -> None:
    """The background refresh after an edit runs detached: wait until it has written the ranges."""
    from gitmem.code import decl_ranges

    state = str(Path(root) / ".git" / "gitmem")
    deadline = time.time() + timeout
    while time.time() < deadline:
        if decl_ranges.is_fresh(state, str(root), rel):
            return
        time.sleep(0.1)
    raise AssertionError(f"declaration ranges for {rel} were not refreshed within {timeout} s")

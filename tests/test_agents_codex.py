"""Codex CLI: hooks in .codex/hooks.json, delivered and captured as for Claude Code.

Each hook runs as Codex runs it (codex-rs/hooks command_runner): `$SHELL -lc COMMAND` in the
session's cwd, the JSON event on stdin, no CLAUDE_PROJECT_DIR; matchers are regular expressions
over the tool name, and `apply_patch` also answers to `Edit` and `Write`. Payloads carry the
fields Codex writes (session_id, turn_id, transcript_path, cwd, hook_event_name, model,
permission_mode; tool_name, tool_input and tool_use_id for tool events; apply_patch hands the
patch text as tool_input.command).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from delivery_support import SOURCE, Delivered, add_entry, hook_imports, own_errors, run_hooks

from gitmem.writer import codex_rollout, reader

SHARED = Path(__file__).resolve().parents[2] / "shared" / "transcripts"


class Codex:
    def __init__(self, root: Path, session: str = "019ed836-b1da-78f1-8a0c-e598363d10f4", cwd: Path | None = None):
        self.root, self.session, self.cwd = Path(root), session, Path(cwd or root)
        self.turn = 0

    def commands(self, event: str, tool: str | None = None) -> list[str]:
        config = json.loads((self.root / ".codex" / "hooks.json").read_text(encoding="utf-8"))
        names = [tool] + (["Write", "Edit"] if tool == "apply_patch" else []) if tool else []
        found = []
        for group in config.get("hooks", {}).get(event, []):
            matcher = group.get("matcher")
            if names and matcher and not any(re.fullmatch(matcher, n) for n in names):
                continue
            found += [h["command"] for h in group["hooks"] if h.get("type") == "command"]
        return found

    def send(self, event: str, tool: str | None = None, **fields) -> Delivered:
        payload = {"session_id": self.session, "turn_id": f"turn-{self.turn}",
                   "transcript_path": str(self.root / ".rollout.jsonl"), "cwd": str(self.cwd),
                   "hook_event_name": event, "model": "gpt-5.4", "permission_mode": "default", **fields}
        if tool:
            payload.update(tool_name=tool, tool_use_id=f"call_{self.turn}")
        env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_")}
        env["GITMEM_NO_DAEMON"] = "1"
        return run_hooks(self.commands(event, tool), payload, event, self.cwd, env, shell=("sh", "-lc"))

    def start(self, source: str = "startup") -> Delivered:
        return self.send("SessionStart", source=source)

    def patch(self, text: str) -> Delivered:
        self.turn += 1
        return self.send("PreToolUse", "apply_patch", tool_input={"command": text})

    def shell(self, command: str) -> Delivered:
        self.turn += 1
        return self.send("PreToolUse", "Bash", tool_input={"command": command})

    def refusal(self, tool: str, command: str) -> str | None:
        """The reason Codex is given for refusing the tool call, or None when it may run."""
        payload = {"session_id": self.session, "transcript_path": str(self.root / ".rollout.jsonl"),
                   "cwd": str(self.cwd), "hook_event_name": "PreToolUse", "tool_name": tool,
                   "tool_input": {"command": command}}
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_")}, "GITMEM_NO_DAEMON": "1"}
        for hook in self.commands("PreToolUse", tool):
            proc = subprocess.run(["sh", "-lc", hook], input=json.dumps(payload).encode(), cwd=self.cwd, env=env,
                                  capture_output=True, timeout=60)
            out = json.loads(proc.stdout)["hookSpecificOutput"] if proc.stdout.strip() else {}
            if out.get("permissionDecision") == "deny":
                return str(out["permissionDecisionReason"])
        return None


@pytest.fixture
def gm(repo, monkeypatch):
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    repo.write("src/a.py", SOURCE)
    repo.commit_all("initial")
    old = time.time() - 3600
    os.utime(repo.path / "src/a.py", (old, old))
    repo.gitmem("init", "--agent", "codex")
    return repo


def test_init_writes_codex_hooks_that_name_no_path_of_this_machine(gm):
    text = gm.read(".codex/hooks.json")
    config = json.loads(text)["hooks"]
    assert set(config) == {"SessionStart", "SubagentStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"}
    assert config["PreToolUse"][0]["matcher"] == "apply_patch|Bash"
    assert config["PreToolUse"][0]["hooks"][0]["timeout"] == 10  # seconds, as Codex reads it
    assert str(gm.path) not in text and "/work" not in text
    assert not (gm.path / ".claude").exists()  # only the agents asked for
    assert (gm.path / ".git/gitmem/claude-hook").exists()  # the shim Codex's command runs
    assert "agents: [codex]" in gm.read(".gitmem/config.yaml")
    before = gm.read(".codex/hooks.json")
    gm.gitmem("init")
    assert gm.read(".codex/hooks.json") == before


@pytest.mark.parametrize("login_shell", ["sh", "bash", "fish", "zsh"])
def test_the_hook_command_runs_the_same_under_any_login_shell(gm, login_shell):
    # Codex runs `$SHELL -lc COMMAND`: the command is one `sh -c '…'`, which every shell reads alike
    import shlex
    import shutil

    from gitmem.delivery.agents.hooks_json import COMMAND

    assert shlex.split(COMMAND)[:2] == ["sh", "-c"] and len(shlex.split(COMMAND)) == 3
    shell = shutil.which(login_shell)
    if shell is None:
        pytest.skip(f"{login_shell} is not installed here")
    law = add_entry(gm, "law", "Use tabs.")
    payload = {"session_id": "s", "cwd": str(gm.path), "hook_event_name": "SessionStart", "source": "startup"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_")}
    assert law in run_hooks([COMMAND], payload, "SessionStart", gm.path, {**env, "GITMEM_NO_DAEMON": "1"},
                            shell=(shell, "-lc")).active


def test_a_codex_session_start_and_apply_patch_deliver(gm):
    law = add_entry(gm, "law", "Use tabs.")
    hazard = add_entry(gm, "hazard", "g() must stay pure.", "--anchor", "src/a.py::g")
    codex = Codex(gm.path)
    start = codex.start()
    assert start.active == [law]
    # Outside the anchored declaration: quiet; inside it: the hazard, before the patch applies.
    assert not codex.patch("*** Begin Patch\n*** Update File: src/a.py\n@@\n-import os\n+import sys\n*** End Patch\n")
    patched = codex.patch(f"*** Begin Patch\n*** Update File: {gm.path / 'src/a.py'}\n@@ def g(x):\n"
                          "-    return x * 2\n+    return 2 * x\n*** End Patch\n")
    assert patched.active == [hazard]
    assert "Before you touch src/a.py" in patched.text
    assert own_errors(gm.path) == ""


def test_a_patch_naming_several_files_delivers_each_files_entries(gm):
    a = add_entry(gm, "hazard", "a.py is shared with the mobile app.", "--anchor", "src/a.py")
    docs = add_entry(gm, "ritual", "Every new page goes into docs/index.md.", "--on", "edit:docs/**")
    delivered = Codex(gm.path).patch(
        "*** Begin Patch\n*** Add File: docs/new.md\n+# New\n*** Update File: src/a.py\n*** Move to: src/b.py\n"
        "@@\n-import os\n+import sys\n*** End Patch\n")
    assert sorted(delivered.active) == sorted([a, docs])
    assert delivered.text.count("<gitmem-context>") == 2  # one block per file, under one answer


def test_codex_cannot_switch_its_hooks_off(gm):
    """Codex's hooks.json holds gitmem's hooks, the read-only gate among them: a patch that takes a
    line of gitmem's hook out or deletes the file, or a shell write of it, is refused; a patch that
    adds a hook of the team's beside gitmem's runs."""
    codex = Codex(gm.path)
    lines = gm.read(".codex/hooks.json").splitlines()
    ours = next(line for line in lines if "gitmem/claude-hook" in line)
    removal = f"*** Begin Patch\n*** Update File: .codex/hooks.json\n@@\n-{ours}\n*** End Patch\n"
    assert "settings" in codex.refusal("apply_patch", removal)
    assert codex.refusal("apply_patch", "*** Begin Patch\n*** Delete File: .codex/hooks.json\n*** End Patch\n")
    assert codex.refusal("Bash", "printf '{}' > .codex/hooks.json")
    last = lines[-1]
    addition = (f"*** Begin Patch\n*** Update File: .codex/hooks.json\n@@\n-{last}\n"
                f'+, "description": "the team\'s hooks"\n+{last}\n*** End Patch\n')
    assert codex.refusal("apply_patch", addition) is None
    # the patch is read as applied to the file: a whole new file, a move either way, a key spelled
    # with an escape, a second "hooks" or "command" that wins when the file is parsed
    replaced = (f"*** Begin Patch\n*** Update File: .codex/hooks.json\n@@\n {ours}\n"
                f"+{ours.replace('gitmem/claude-hook', 'scripts/lint-hook')}\n*** End Patch\n")
    assert codex.refusal("apply_patch", replaced)
    for attack in ("*** Add File: .codex/hooks.json\n+{}\n",
                   "*** Update File: .codex/hooks.json\n*** Move to: .codex/hooks.json.off\n@@\n {\n",
                   "*** Update File: src/a.py\n*** Move to: .codex/hooks.json\n@@\n import os\n",
                   f'*** Update File: .codex/hooks.json\n@@\n-{last}\n+, "hooks": {{}}\n+{last}\n',
                   f'*** Update File: .codex/hooks.json\n@@\n-{last}\n+, "disableAll\\u0048ooks": true\n+{last}\n'):
        assert codex.refusal("apply_patch", f"*** Begin Patch\n{attack}*** End Patch\n"), attack
    assert "gitmem/claude-hook" in gm.read(".codex/hooks.json")
    # as Codex applies it: `@@ line` finds that line first; two sections for one file, one after the other
    gm.write(".codex/hooks.json", gm.read(".codex/hooks.json").replace(
        "{\n", '{\n  "env": {\n  "enabled": true\n  },\n  "enabled": true,\n', 1))
    gm.commit_all("settings of the team's")
    seeking = ('*** Begin Patch\n*** Update File: .codex/hooks.json\n@@   },\n-  "enabled": true,\n'
               '+  "enabled": true, "disableAllHooks": true,\n*** End Patch\n')
    assert codex.refusal("apply_patch", seeking)
    twice = ('*** Begin Patch\n*** Update File: .codex/hooks.json\n@@\n-  "enabled": true,\n'
             '+  "enabled": true,\n+  "disableAllHooks": true,\n'
             '*** Update File: .codex/hooks.json\n@@\n-  "disableAllHooks": true,\n+  "disableAllHooks": true,\n'
             '*** End Patch\n')
    assert codex.refusal("apply_patch", twice)
    # a file saved without its last line break: an ordinary patch of its last line still applies
    gm.write(".codex/hooks.json", gm.read(".codex/hooks.json").rstrip("\n"))
    assert codex.refusal("apply_patch", addition) is None


def test_a_codex_patch_is_read_where_codex_applies_it_and_through_links(gm):
    """Codex finds a hunk's `@@` line and old lines as written before any place equal but for
    spaces: a decoy key holding gitmem's lines at another indent made the gate read the patch as
    changing the decoy while Codex changed gitmem's matcher. A folder link to .codex is the
    settings folder too."""
    codex = Codex(gm.path)
    text = gm.read(".codex/hooks.json")
    decoy = ('  "notes": {\n        "PreToolUse": [\n      {\n        "matcher": "apply_patch|Bash",\n'
             '        "hooks": []\n      }\n        ]\n  },\n')
    gm.write(".codex/hooks.json", text.replace("{\n", "{\n" + decoy, 1))
    gm.commit_all("the team's notes")
    attack = ('*** Begin Patch\n*** Update File: .codex/hooks.json\n@@     "PreToolUse": [\n'
              '-        "matcher": "apply_patch|Bash",\n+        "matcher": "nothing",\n*** End Patch\n')
    assert codex.refusal("apply_patch", attack)
    # a blank line ending a hunk is one of its lines to Codex, dropped only where they are not there
    ours = '        "matcher": "apply_patch|Bash",\n'
    decoy = '    "Decoy": [\n      {\n' + ours + '        "hooks": []\n      }\n    ],\n'
    at = text.index(ours, text.index('"PreToolUse"'))
    blank = (text[:at] + ours + "\n" + text[at + len(ours):]).replace('  "hooks": {\n', '  "hooks": {\n' + decoy, 1)
    gm.write(".codex/hooks.json", blank)
    gm.commit_all("a blank line after gitmem's matcher")
    blank = ('*** Begin Patch\n*** Update File: .codex/hooks.json\n@@\n'
             '-        "matcher": "apply_patch|Bash",\n+        "matcher": "NoSuchTool",\n\n*** End Patch\n')
    assert codex.refusal("apply_patch", blank)
    # Codex's config.toml switches every project hook off with `[features] hooks = false`
    off = "*** Begin Patch\n*** Add File: .codex/config.toml\n+[features]\n+hooks = false\n*** End Patch\n"
    assert "features.hooks" in codex.refusal("apply_patch", off)
    assert codex.refusal("apply_patch", off.replace("hooks = false", "codex_hooks = false"))
    assert codex.refusal("Bash", "printf '[features]\\nhooks = false\\n' >> ~/.codex/config.toml")
    assert codex.refusal("apply_patch", off.replace("[features]\n+hooks = false", 'model = "o3"')) is None
    # a profile's features apply over the file's; Codex reads a config.toml in any folder down to the session's
    profile = off.replace("[features]\n+hooks = false", 'profile = "quiet"\n+[profiles.quiet.features]\n+hooks = false')
    assert "profiles.quiet.features.hooks" in codex.refusal("apply_patch", profile)
    assert codex.refusal("apply_patch", off.replace(".codex/config.toml", "src/.codex/config.toml"))
    assert codex.refusal("Bash", "printf 'features.hooks = false' > src/.codex/config.toml")
    (gm.path / "cfg").symlink_to(".codex")
    for attack in ("*** Delete File: cfg/hooks.json\n",
                   f"*** Update File: {gm.path}/cfg/hooks.json\n@@\n-{text.splitlines()[-1]}\n+{{}}\n"):
        assert codex.refusal("apply_patch", f"*** Begin Patch\n{attack}*** End Patch\n"), attack


def test_a_codex_subagent_gets_the_repository_block_and_its_own_record(gm):
    law = add_entry(gm, "law", "Use tabs.")
    hazard = add_entry(gm, "hazard", "a.py is shared with the mobile app.", "--anchor", "src/a.py")
    codex = Codex(gm.path)
    assert codex.start().active == [law]
    edit = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-import os\n+import sys\n*** End Patch\n"
    assert codex.patch(edit).active == [hazard]
    # SubagentStart: the session-start fields plus agent_id (the child thread) and agent_type.
    assert codex.send("SubagentStart", agent_id="019ed900-0000-7000-8000-000000000001",
                      agent_type="default").active == [law]
    child = codex.send("PreToolUse", "apply_patch", tool_input={"command": edit},
                       agent_id="019ed900-0000-7000-8000-000000000001", agent_type="default")
    assert child.active == [hazard]


def test_apply_patch_through_the_shell_tool_is_read_as_a_patch(gm):
    # Codex applies `apply_patch <<'EOF'` itself when its shell tool is given one: the same refusal
    # and the same entries as through its patch tool; markers with padding around them count
    hazard = add_entry(gm, "hazard", "a.py is shared with the mobile app.", "--anchor", "src/a.py")
    heredoc = ("apply_patch <<'EOF'\n*** Begin Patch\n  *** Update File: src/a.py\n@@\n-import os\n+import sys\n"
               "*** End Patch\nEOF")
    assert Codex(gm.path, "s1").shell(heredoc).active == [hazard]
    in_src = "cd src && " + heredoc.replace("src/a.py", "a.py")  # Codex applies it in src/
    assert Codex(gm.path, "s6").shell(in_src).active == [hazard]
    from gitmem.hook import patch
    assert patch.shell_folder("cd 'my src' && " + heredoc) == "my src" and patch.shell_folder(heredoc) == ""
    assert Codex(gm.path, "s2").patch(heredoc.split("\n", 1)[1].rsplit("\n", 1)[0]).active == [hazard]
    planted = ("apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: .gitmem/entries/20260101-0a1b2c3d.yaml\n"
               "+id: 20260101-0a1b2c3d\n*** End Patch\nEOF")
    assert "may not edit gitmem's memory files" in (Codex(gm.path, "s3").refusal("Bash", planted) or "")
    as_argument = "apply_patch '" + planted.split("\n", 1)[1].rsplit("\n", 1)[0] + "'"  # the patch as argv[1]
    assert "may not edit gitmem's memory files" in (Codex(gm.path, "s5").refusal("Bash", as_argument) or "")
    rollout = gm.path / ".rollout.jsonl"
    forged = f"*** Begin Patch\n*** Update File: {rollout}\n@@\n+{{}}\n*** End Patch\n"
    assert "a session's transcript" in (Codex(gm.path, "s4").refusal("apply_patch", forged) or "")


def test_a_codex_subagents_prompt_is_not_the_developers_turn(gm):
    # Codex runs UserPromptSubmit in a subagent's thread under the parent's session id: that prompt
    # was written by the parent model; queued, it took the session onto the subagent's rollout
    from gitmem.base.paths import find_repo
    from gitmem.writer import queue

    codex = Codex(gm.path)
    codex.send("UserPromptSubmit", prompt="fix the flaky login test")
    codex.send("UserPromptSubmit", prompt="From now on never touch auth/.", agent_id="019ed900-0000-7000-8000-000000000001",
               agent_type="default", transcript_path=str(gm.path / ".child-rollout.jsonl"))
    signals = os.listdir(os.path.join(queue.root(find_repo(gm.path)), "signals"))
    assert len(signals) == 1  # the parent's prompt alone


def test_status_of_a_codex_only_repository_asks_for_no_claude_code_hooks(gm):
    out = gm.gitmem("status").stdout
    assert "Claude Code: not served" in out and "Claude Code hooks: missing" not in out
    assert "the hook shim runs" in out


def test_codex_commits_fire_rituals_and_prompts_fire_cues(gm):
    ritual = add_entry(gm, "ritual", "Before every commit, run the linter.", "--on", "commit")
    codex = Codex(gm.path)
    assert codex.shell("git add -A && git commit -m 'fix'").active == [ritual]
    assert not codex.shell("git status --short")


def test_codex_in_a_linked_worktree_finds_the_shim_and_the_worktrees_files(gm, tmp_path):
    hazard = add_entry(gm, "hazard", "a.py is shared with the mobile app.", "--anchor", "src/a.py")
    gm.commit_all("share gitmem")
    worktree = tmp_path / "wt"
    gm.git("worktree", "add", "-q", "-b", "feature", str(worktree))
    codex = Codex(worktree, cwd=worktree)
    assert codex.patch("*** Begin Patch\n*** Update File: src/a.py\n@@\n-import os\n+import sys\n*** End Patch\n"
                       ).active == [hazard]


def test_post_tool_use_apply_patch_logs_every_file_for_capture(gm):
    codex = Codex(gm.path)
    text = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-import os\n+import sys\n*** Add File: b.py\n+x\n*** End Patch\n"
    assert not codex.send("PostToolUse", "apply_patch", tool_input={"command": text},
                          tool_response="Success. Updated the following files:\nM src/a.py\nA b.py\n")
    log = gm.path / ".git/gitmem/events" / f"{codex.session}.jsonl"
    assert [json.loads(line)["path"] for line in log.read_text().splitlines()] == ["src/a.py", "b.py"]


def test_a_patch_applied_through_the_shell_tool_is_logged_for_capture(gm):
    # Codex applies `apply_patch <<'EOF'` given to its shell tool itself, and reports the call as Bash
    codex = Codex(gm.path, "s-shell-patch")
    heredoc = ("apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: src/a.py\n@@\n-import os\n+import sys\n"
               "*** End Patch\nEOF\n")
    assert not codex.send("PostToolUse", "Bash", tool_input={"command": heredoc}, tool_response="Success.")
    assert not codex.send("PostToolUse", "Bash", tool_input={"command": "cat src/a.py"}, tool_response="x")
    # `cd DIR && apply_patch`, which Codex reads as a patch applied in DIR
    inside = "cd src && " + heredoc.replace("src/a.py", "a.py")
    assert not codex.send("PostToolUse", "Bash", tool_input={"command": inside}, tool_response="Success.")
    log = gm.path / ".git/gitmem/events" / f"{codex.session}.jsonl"
    assert [json.loads(line)["path"] for line in log.read_text().splitlines()] == ["src/a.py", "src/a.py"]


def test_uninstall_puts_a_users_codex_hooks_back_byte_for_byte(repo, monkeypatch):
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    mine = '{\n    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}\n}\n'
    repo.write(".codex/hooks.json", mine)
    repo.write("README.md", "x\n")
    repo.commit_all("initial")
    repo.gitmem("init", "--agent", "codex", "--agent", "claude-code")
    merged = json.loads(repo.read(".codex/hooks.json"))["hooks"]
    assert merged["Stop"][0] == {"hooks": [{"type": "command", "command": "say done"}]} and len(merged["Stop"]) == 2
    repo.gitmem("uninstall")
    assert repo.read(".codex/hooks.json") == mine
    fresh = repo.path.parent / "fresh"
    fresh.mkdir()
    subprocess.run(["git", "init", "-q", str(fresh)], check=True)
    (fresh / "x").write_text("x\n")
    subprocess.run(["git", "-C", str(fresh), "add", "x"], check=True)
    subprocess.run(["git", "-C", str(fresh), "commit", "-qm", "x"], check=True)
    repo.__class__(fresh).gitmem("init", "--agent", "codex")
    repo.__class__(fresh).gitmem("uninstall")
    assert not (fresh / ".codex").exists()


# -- the rollout reader ----------------------------------------------------------------------

def _rollout(path: Path) -> Path:
    """A small rollout in Codex 0.140's record shapes (written here, not copied)."""
    def rec(stamp, kind, payload):
        return json.dumps({"timestamp": stamp, "type": kind, "payload": payload}, separators=(",", ":"))

    lines = [
        rec("2026-06-18T00:57:05.559Z", "session_meta", {"id": "s-1", "cwd": "/repo", "cli_version": "0.140.0",
                                                         "base_instructions": {"text": "You are Codex."}}),
        rec("2026-06-18T00:57:05.560Z", "event_msg", {"type": "task_started", "turn_id": "t1"}),
        rec("2026-06-18T00:57:05.681Z", "response_item", {"type": "message", "role": "developer", "content": [
            {"type": "input_text", "text": "<permissions instructions>sandbox</permissions instructions>"}]}),
        rec("2026-06-18T00:57:05.681Z", "response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>Be brief.</INSTRUCTIONS>"}]}),
        rec("2026-06-18T00:57:05.687Z", "turn_context", {"turn_id": "t1", "cwd": "/repo", "model": "gpt-5.4"}),
        rec("2026-06-18T00:57:07.657Z", "response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "from now on, never call syncLedger() in a handler"}]}),
        rec("2026-06-18T00:57:07.658Z", "event_msg", {"type": "user_message", "message":
            "from now on, never call syncLedger() in a handler", "images": [], "local_images": []}),
        rec("2026-06-18T00:57:11.647Z", "response_item", {"type": "reasoning", "summary": []}),
        rec("2026-06-18T00:57:16.600Z", "event_msg", {"type": "agent_message", "message": "Checking the handlers.",
                                                      "phase": "commentary"}),
        rec("2026-06-18T00:57:16.711Z", "response_item", {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "Checking the handlers."}], "phase": "commentary"}),
        rec("2026-06-18T00:57:16.711Z", "response_item", {"type": "function_call", "name": "exec_command",
                                                          "arguments": "{\"cmd\":\"rg syncLedger\"}", "call_id": "c1"}),
        rec("2026-06-18T00:57:17.532Z", "response_item", {"type": "function_call_output", "call_id": "c1",
                                                          "output": "src/h.js: syncLedger()"}),
        rec("2026-06-18T00:57:18.000Z", "response_item", {"type": "custom_tool_call", "name": "apply_patch",
                                                          "input": "*** Begin Patch\n*** End Patch", "call_id": "c2"}),
        rec("2026-06-18T00:57:26.660Z", "event_msg", {"type": "agent_message", "message": "Done: moved it out.",
                                                      "phase": "final_answer"}),
        rec("2026-06-18T00:57:26.685Z", "response_item", {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "Done: moved it out.\n<gitmem-context>\n- Law: x [20260101-abcdef12]\n"
                                            "</gitmem-context>"}], "phase": "final_answer"}),
        rec("2026-06-18T00:57:28.209Z", "event_msg", {"type": "task_complete", "turn_id": "t1"}),
        "not json",
        rec("2026-06-18T01:07:09.434Z", "event_msg", {"type": "user_message", "message": "please push"}),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_codex_rollout_reads_into_typed_turns(tmp_path):
    path = _rollout(tmp_path / "rollout.jsonl")
    assert codex_rollout.is_rollout(path)
    turns = reader.read_turns(path)
    assert [(t.index, t.user) for t in turns] == [(0, "from now on, never call syncLedger() in a handler"),
                                                 (1, "please push")]
    assert turns[0].assistant == "Checking the handlers.\n\nDone: moved it out."  # no echo, no gitmem context
    assert turns[0].timestamp == "2026-06-18T00:57:07.658Z"
    assert turns[1].assistant == ""
    assert [t.index for t in reader.read_turns(path, start=1)] == [1]
    assert reader.last_turn_index(path) == 1


def test_a_rollouts_turns_carry_their_folder_and_a_message_of_images_ends_the_turn_before(tmp_path):
    def rec(stamp, kind, payload):
        return json.dumps({"timestamp": stamp, "type": kind, "payload": payload})

    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join([
        rec("2026-06-18T00:00:00.000Z", "session_meta", {"id": "s", "cwd": "/work/a"}),
        rec("2026-06-18T00:00:01.000Z", "event_msg", {"type": "user_message", "message": "keep amounts in cents"}),
        rec("2026-06-18T00:00:02.000Z", "event_msg", {"type": "agent_message", "message": "OK, cents."}),
        rec("2026-06-18T00:00:03.000Z", "turn_context", {"cwd": "/work/b"}),
        rec("2026-06-18T00:00:04.000Z", "event_msg", {"type": "user_message", "message": "", "images": ["x.png"]}),
        rec("2026-06-18T00:00:05.000Z", "event_msg", {"type": "agent_message", "message": "A stack trace."}),
        rec("2026-06-18T00:00:06.000Z", "event_msg", {"type": "user_message", "message": "fix it"})]) + "\n")
    turns = reader.read_turns(path)
    assert [(t.user, t.assistant, t.cwd) for t in turns] == [("keep amounts in cents", "OK, cents.", "/work/a"),
                                                            ("fix it", "", "/work/b")]
    assert turns[0].user_uuid and turns[0].user_uuid != turns[1].user_uuid  # what a fork's copy keeps


def test_a_prompt_codex_wrote_for_a_slash_command_is_not_a_turn(tmp_path, monkeypatch):
    # Codex's own canned texts are not copied here: a prompt of this test's stands in for one
    made_up = "Write a file named NOTES.md for this repository.\n- Keep it concise."
    fingerprint = hashlib.sha256(b"write a file named notes.md for this repository.").hexdigest()[:32]
    monkeypatch.setattr(codex_rollout, "CANNED_PROMPTS", frozenset({fingerprint}))
    assert codex_rollout.canned(made_up) and codex_rollout.canned("  WRITE a file named NOTES.md for this repository.")
    assert not codex_rollout.canned("write a file named notes.md, and keep it concise")

    def rec(message):
        return json.dumps({"timestamp": "2026-06-18T00:00:00.000Z", "type": "event_msg",
                           "payload": {"type": "user_message", "message": message}})

    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join([rec("keep amounts in cents"), rec(made_up), rec("fix the test")]) + "\n")
    assert [t.user for t in reader.read_turns(path)] == ["keep amounts in cents", "fix the test"]
    # plan mode's approval is a whole message of the TUI's; words typed after it are the developer's
    monkeypatch.undo()
    path.write_text("\n".join([rec("Implement the plan."), rec("implement the plan.\nAnd never touch the ledger."),
                               rec("fix the test")]) + "\n")
    assert [t.user for t in reader.read_turns(path)] == ["implement the plan.\nAnd never touch the ledger.",
                                                         "fix the test"]


def test_an_older_codex_rollouts_injected_user_messages_are_not_turns(tmp_path):
    # older Codex wrote AGENTS.md and the environment as user_message events of their own `kind`
    def rec(message: str, kind: str) -> str:
        return json.dumps({"timestamp": "2025-09-01T10:00:00.000Z", "type": "event_msg",
                           "payload": {"type": "user_message", "message": message, "kind": kind}})

    path = tmp_path / "rollout-2025-09-01T10-00-00-0199.jsonl"
    path.write_text("\n".join([
        json.dumps({"timestamp": "2025-09-01T10:00:00.000Z", "type": "session_meta", "payload": {"id": "s", "cwd": "/r"}}),
        rec("<user_instructions>\nAlways answer in French.\n</user_instructions>", "user_instructions"),
        rec("<environment_context>\n  <cwd>/r</cwd>\n</environment_context>", "environment_context"),
        rec("fix the test", "plain")]) + "\n")
    assert [(t.index, t.user) for t in reader.read_turns(path)] == [(0, "fix the test")]


def test_gitmem_turns_reads_a_rollout(repo, tmp_path):
    path = _rollout(tmp_path / "rollout.jsonl")
    out = [json.loads(line) for line in repo.gitmem("turns", str(path)).stdout.splitlines()]
    assert [t["user"] for t in out] == ["from now on, never call syncLedger() in a handler", "please push"]


def test_claude_code_transcripts_still_read_as_before(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}, "uuid": "u1"}) + "\n")
    assert not codex_rollout.is_rollout(path)
    assert [t.user for t in reader.read_turns(path)] == ["hi"]


@pytest.mark.skipif(not (SHARED / "EntityProcess__agentv__a3-92ff332928-0-codex-rollout.jsonl").exists(),
                    reason="../shared/transcripts not present")
def test_the_real_codex_rollout_yields_only_what_the_developer_typed():
    turns = reader.read_turns(SHARED / "EntityProcess__agentv__a3-92ff332928-0-codex-rollout.jsonl")
    assert [t.user for t in turns] == ["remove agentv-claude-trace plugin no longer needed, can merge directly",
                                       "please push"]
    assert all("AGENTS.md instructions" not in t.user and t.assistant for t in turns)
    assert turns[0].assistant.startswith("I’m removing the `agentv-claude-trace` plugin")


def test_the_hook_stays_light_for_codex_subagent_and_gemini_events(gm):
    """The same import budget as tests/test_delivery_hook.py, for the new event shapes."""
    add_entry(gm, "hazard", "g() must stay pure.", "--anchor", "src/a.py::g")
    add_entry(gm, "law", "Use tabs.")
    Codex(gm.path).start()  # compile the rules first (the rare path)
    patch = "*** Begin Patch\n*** Update File: src/a.py\n@@ def g(x):\n-    return x * 2\n+    return 2 * x\n*** End Patch\n"
    for payload in (
        {"hook_event_name": "PreToolUse", "tool_name": "apply_patch", "tool_input": {"command": patch}},
        {"hook_event_name": "PostToolUse", "tool_name": "apply_patch", "tool_input": {"command": patch}},
        {"hook_event_name": "SubagentStart", "agent_id": "a1", "agent_type": "Explore"},
        {"hook_event_name": "PreToolUse", "tool_name": "Read", "agent_id": "a1",
         "tool_input": {"file_path": str(gm.path / "src/a.py")}},
        {"hook_event_name": "AfterTool", "tool_name": "read_file", "tool_input": {"file_path": str(gm.path / "src/a.py")}},
    ):
        modules = hook_imports(gm.path, payload, {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_")})
        heavy = {"click", "pygit2", "ruamel", "tree_sitter", "gitmem.base.paths", "gitmem.store.index", "dataclasses",
                 "pathlib", "typing", "tempfile", "hashlib", "subprocess"} & modules
        assert not heavy, (payload["hook_event_name"], heavy)


def test_the_hook_command_reads_a_large_event_whole_whatever_the_shim(gm, tmp_path):
    """Codex fails a hook whose stdin it cannot write ("failed to write hook stdin: Broken pipe"):
    the command must read the event whole in a clone where nobody ran `gitmem init` (no shim) and
    where the shim's interpreter is gone (a deleted virtual environment), however large the event
    (an apply_patch of a big file is more than a pipe holds)."""
    gm.commit_all("share the hooks")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(gm.path), str(clone)], check=True)
    shim = gm.path / ".git/gitmem/claude-hook"
    shim.write_text("#!/nonexistent/python -IS\n" + shim.read_text().split("\n", 1)[1])
    for root in (clone, gm.path):
        [group] = json.loads((root / ".codex/hooks.json").read_text())["hooks"]["PreToolUse"]
        event = json.dumps({"session_id": "x", "cwd": str(root), "hook_event_name": "PreToolUse",
                            "tool_name": "apply_patch", "tool_input": {"command": "+x\n" * 100_000}}).encode()
        proc = subprocess.Popen(["sh", "-c", group["hooks"][0]["command"]], cwd=root, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(event)  # BrokenPipeError when the command exits unread
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0 and proc.stdout.read() == b"", root
    assert not (clone / ".git/gitmem").exists()

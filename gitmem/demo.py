"""`make demo`: two Claude Code sessions in a scratch repository, the writer in between.

Session 1 is played from a transcript in Claude Code's JSONL format (demo_data/session-1.jsonl):
a developer asks for unrelated work and, in passing, states two standing constraints. Every
record is appended to a live transcript file and the real hooks run at the moments Claude Code
runs them (`python -m gitmem.hook.claude`, JSON on stdin): UserPromptSubmit before each typed
prompt, PostToolUse after each file edit (the edits really happen), Stop at the end of each
turn, SessionEnd at the end. The hooks only enqueue. Then the writer drains the queue with the
embedded model, and session 2 starts: what the agent receives at session start, and before it
edits the code the first constraint is anchored to.

Usage: python -m gitmem.demo [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitmem.base.paths import RepoPaths

WIDTH = 92
TEMPLATE = "session-1.jsonl"
SESSION_1 = "3f1e9a52-8c1d-4e0b-9a57-1d2c3b4a5e60"
SESSION_2 = "b7d40c11-2e9f-4a8b-8c3d-6f5e4d3c2b1a"

PROJECT: dict[str, str] = {
    "README.md": "# ledgerline\n\nCheckout and billing service.\n",
    "src/payments/__init__.py": "",
    "src/payments/http.py": '''\
"""Tiny HTTP helper so the client stays testable."""
import json
import urllib.request


def post(url: str, body: dict, headers: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(body).encode(), {**headers, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)
''',
    "src/payments/client.py": '''\
"""Client for the payments provider."""
import uuid

from .http import post


class PaymentsClient:
    def __init__(self, api_key: str, base_url: str = "https://api.payments.example") -> None:
        self.api_key = api_key
        self.base_url = base_url

    def charge(self, order_id: str, amount_cents: int, idempotency_key: str | None = None) -> dict:
        headers = {"Authorization": f"Bearer {self.api_key}"}
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        body = {"order": order_id, "amount": amount_cents, "currency": "eur"}
        return post(f"{self.base_url}/charges", body, headers)

    def refund(self, charge_id: str) -> dict:
        headers = {"Authorization": f"Bearer {self.api_key}"}
        return post(f"{self.base_url}/refunds", {"charge": charge_id}, headers)
''',
    "src/payments/retry.py": '''\
import time


def with_retries(call, attempts=3, delay=0.5):
    for attempt in range(attempts):
        try:
            return call()
        except TimeoutError:
            pass
        time.sleep(delay * 2 ** attempt)
    return call()
''',
    "tests/test_retry.py": '''\
from payments.retry import with_retries


def test_returns_the_first_success():
    assert with_retries(lambda: 42, delay=0) == 42
''',
}


# -- output --------------------------------------------------------------------------------------

def header(number: int, title: str) -> None:
    text = f" {number}. {title} "
    print()
    print("━━" + text + "━" * max(4, WIDTH - len(text) - 2))


def say(text: str = "", indent: int = 2) -> None:
    pad = " " * indent
    for paragraph in text.split("\n"):
        print(textwrap.fill(paragraph, WIDTH, initial_indent=pad, subsequent_indent=pad) if paragraph else "")


def block(text: str, indent: int = 4) -> None:
    for line in text.rstrip("\n").split("\n"):
        print(" " * indent + line)


# -- the scratch repository ---------------------------------------------------------------------------

def run(cmd: list[str], cwd: Path, **kwargs: Any) -> str:
    out: str = subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True, **kwargs).stdout
    return out


def make_project(root: Path) -> None:
    for rel, text in PROJECT.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    run(["git", "init", "-q", "-b", "main"], root)
    run(["git", "config", "user.name", "Dana Developer"], root)
    run(["git", "config", "user.email", "dana@ledgerline.example"], root)
    run(["git", "add", "-A"], root)
    run(["git", "commit", "-q", "-m", "ledgerline: payments client and retries"], root)
    from gitmem.memory import Memory

    for line in Memory(_repo(root)).init():
        say(f"gitmem init: {line}", 4)
    run(["git", "add", "-A"], root)
    run(["git", "commit", "-q", "-m", "Set up gitmem"], root)


def _repo(root: Path) -> RepoPaths:
    from gitmem.base.paths import find_repo

    return find_repo(root)


# -- hooks ----------------------------------------------------------------------------------------------

class Hooks:
    """Runs `python -m gitmem.hook.claude` with the event on stdin, as Claude Code does."""

    def __init__(self, root: Path, transcript: Path, session: str) -> None:
        self.root = root
        self.transcript = transcript
        self.session = session
        self.env = os.environ.copy()
        # The hooks would start the writer daemon; the demo drains in the foreground instead,
        # so each step can be shown in order.
        self.env["GITMEM_NO_DAEMON"] = "1"
        self.times: list[float] = []

    def fire(self, event: str, **fields: Any) -> str:
        payload = {"session_id": self.session, "transcript_path": str(self.transcript), "cwd": str(self.root),
                   "permission_mode": "default", "hook_event_name": event, **fields}
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "gitmem.hook.claude"], input=json.dumps(payload),
                              cwd=self.root, env=self.env, capture_output=True, text=True, timeout=60)
        self.times.append(time.perf_counter() - started)
        if not proc.stdout.strip():
            return ""
        try:
            context: str = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
            return context
        except (ValueError, KeyError, TypeError):
            return proc.stdout


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{int(time.time() * 1000) % 1000:03d}Z"


def _typed_prompt(rec: dict[str, Any]) -> str | None:
    if rec.get("type") != "user" or rec.get("isMeta") or "toolUseResult" in rec or rec.get("isSidechain"):
        return None
    content = (rec.get("message") or {}).get("content")
    if isinstance(content, str) and content.strip() and not content.lstrip().startswith(("<", "Caveat:")):
        return content
    return None


def _apply_edit(root: Path, name: str, tool_input: dict[str, Any]) -> str | None:
    path = Path(tool_input.get("file_path", ""))
    if not path.is_absolute() or root not in path.parents:
        return None
    if name == "Write":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(tool_input.get("content", ""), encoding="utf-8")
    elif name == "Edit":
        text = path.read_text(encoding="utf-8")
        old, new = tool_input["old_string"], tool_input["new_string"]
        if old not in text:
            raise SystemExit(f"demo transcript out of step with the project: {old!r} not in {path}")
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
    else:
        return None
    return path.relative_to(root).as_posix()


def play(template: str, root: Path, transcript: Path, hooks: Hooks) -> None:
    """Append the template's records to `transcript`, running the hooks where Claude Code would."""
    pending: dict[str, tuple[str, dict[str, Any]]] = {}
    turn = -1
    for line in template.splitlines():
        if not line.strip():
            continue
        line = line.replace("{{CWD}}", str(root)).replace("{{SESSION}}", hooks.session)
        try:
            rec = json.loads(line)
        except ValueError:
            rec = None
        if isinstance(rec, dict) and "timestamp" in rec:
            rec["timestamp"] = _now()
        prompt = _typed_prompt(rec) if isinstance(rec, dict) else None
        if prompt is not None:
            turn += 1
            print()
            say(f"developer (turn {turn}):", 2)
            say(f"“{prompt}”", 6)
            hooks.fire("UserPromptSubmit", prompt=prompt)
        if isinstance(rec, dict) and rec.get("type") == "system" and rec.get("subtype") == "stop_hook_summary":
            hooks.fire("Stop", stop_hook_active=False)
        if isinstance(rec, dict) and rec.get("type") == "assistant" and not rec.get("isSidechain"):
            for b in (rec.get("message") or {}).get("content") or []:
                if b.get("type") == "tool_use":
                    pending[b["id"]] = (b["name"], b.get("input") or {})
                    if b["name"] not in ("Edit", "Write"):
                        say(f"agent runs {b['name']}", 4)
                elif b.get("type") == "text" and b.get("text", "").strip():
                    first = b["text"].strip().split("\n")[0]
                    say(f"agent: {first[:80]}{'…' if len(first) > 80 else ''}", 4)
        with open(transcript, "a", encoding="utf-8") as handle:
            handle.write((json.dumps(rec, ensure_ascii=False) if isinstance(rec, dict) else line) + "\n")
        if isinstance(rec, dict) and rec.get("type") == "user" and "toolUseResult" in rec:
            for b in (rec.get("message") or {}).get("content") or []:
                if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") in pending:
                    name, tool_input = pending.pop(b["tool_use_id"])
                    rel = _apply_edit(root, name, tool_input)
                    if rel is not None:
                        say(f"agent edits {rel}   → PostToolUse logs the file for turn {turn}", 4)
                        hooks.fire("PostToolUse", tool_name=name, tool_input=tool_input,
                                   tool_response={"filePath": tool_input.get("file_path"), "success": True},
                                   tool_use_id=b["tool_use_id"])
        time.sleep(0.01)  # distinct timestamps, as in a real session
    hooks.fire("SessionEnd", reason="prompt_input_exit")


# -- the demo ------------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gitmem.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--keep", metavar="DIR", help="build the scratch repository here and keep it")
    args = parser.parse_args(argv)
    if args.keep:
        root = Path(args.keep).absolute()
        if root.exists() and any(root.iterdir()):
            parser.error(f"{root} is not empty")
        root.mkdir(parents=True, exist_ok=True)
    else:
        root = Path(tempfile.mkdtemp(prefix="gitmem-demo-"))
    try:
        demo(root)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


def demo(root: Path) -> None:
    from gitmem.judge.encoder import resolve_model_path
    from gitmem.memory import Memory
    from gitmem.writer import daemon, queue

    project = root / "ledgerline"
    project.mkdir()
    logs = root / "claude-projects"
    logs.mkdir()

    header(1, "A scratch repository")
    say(f"{project}: a small payments service, committed, with `gitmem init` run once.")
    make_project(project)
    repo = _repo(project)
    block(run(["git", "log", "--oneline"], project))

    header(2, "Session 1: the developer works, and states two constraints in passing")
    say("Played from gitmem/demo_data/session-1.jsonl, a Claude Code transcript (thinking, tool calls "
        "and results, a slash command, a subagent, hook output). Each record is appended to the "
        "live transcript and the real hooks run where Claude Code runs them. The hooks only "
        "enqueue: no model runs while the developer works.")
    template = resources.files("gitmem").joinpath("demo_data").joinpath(TEMPLATE).read_text(encoding="utf-8")
    transcript = logs / f"{SESSION_1}.jsonl"
    hooks = Hooks(project, transcript, SESSION_1)
    play(template, project, transcript, hooks)
    times = sorted(hooks.times)
    print()
    say(f"{len(times)} hook calls, each a fresh process: median {1000 * times[len(times) // 2]:.0f} ms, "
        f"slowest {1000 * times[-1]:.0f} ms (the whole hook, delivery included).")
    queue.plan(repo)
    waiting = queue.pending(repo)
    say(f"Queued for the writer: {len(waiting)} completed turns "
        f"({', '.join(f'turn {j.turn}' for j in waiting)}).")

    header(3, "The writer judges the queued turns (gitmem drain)")
    say("One process holds the embedded model (Gemma 3 270M, a base model used as a scorer over "
        "spans of the developer's words) and judges one turn at a time. In daily use the hook starts "
        "it as a background daemon; here it runs in the foreground.")
    model = resolve_model_path(repo, None, progress=sys.stdout)
    say(f"model: {model.name} ({model.stat().st_size / 2 ** 20:.0f} MiB)")
    started = time.perf_counter()
    result = daemon.drain(repo, on_outcome=lambda o: say(o.summary(), 4))
    say(f"{len(result.outcomes)} turns judged in {time.perf_counter() - started:.1f} s "
        f"(model load included); {result.recorded} entries recorded, {result.quarantined} quarantined.")

    header(4, "What the writer recorded")
    memory = Memory(repo)
    entries = [e for e in memory.load().entries if e.active]
    if not entries:
        say("Nothing: the model found no standing constraint in this session.")
    for entry in entries:
        anchor = f"  anchored to {entry.anchor}" if entry.anchor else "  repository-wide"
        say(f"{entry.kind} from the {entry.source} (session {str(entry.created_session)[:8]}, turn "
            f"{entry.created_turn}){anchor}:", 2)
        say(f"“{entry.body}”", 6)
    commits = run(["git", "log", "--format=%h", "--", ".gitmem/entries"], project).split()
    say(f"\nEach entry is its own commit on main ({len(commits)} here); the developer's own changes "
        "stay uncommitted and unstaged:")
    block(run(["git", "status", "--short"], project) or "(clean)")
    if commits:
        print()
        say(f"git show {commits[-1]}", 2)
        block(run(["git", "show", "--stat", "--format=fuller", commits[-1]], project))
        block(run(["git", "show", "--no-textconv", "--format=", commits[-1], "--", ".gitmem/entries"], project))

    header(5, "Session 2 starts: what the agent receives")
    second = Hooks(project, logs / f"{SESSION_2}.jsonl", SESSION_2)
    (logs / f"{SESSION_2}.jsonl").touch()
    say("SessionStart (source: startup) → additionalContext:")
    block(second.fire("SessionStart", source="startup") or "(nothing)")
    anchored = next((e.anchor for e in entries if e.anchor), None)
    target = anchored.path if anchored else "src/payments/client.py"
    content = (project / target).read_text(encoding="utf-8")
    old = "        body = {" if "        body = {" in content else content.splitlines()[0]
    print()
    say(f"The agent is about to edit {target}"
        + (f" inside {anchored.symbol}" if anchored and anchored.symbol else "")
        + " → PreToolUse (Edit) → additionalContext:")
    block(second.fire("PreToolUse", tool_name="Edit", tool_use_id="toolu_01demo" + uuid.uuid4().hex[:12],
                      tool_input={"file_path": str(project / target), "old_string": old,
                                  "new_string": old.replace("body", "payload", 1)}) or "(nothing)")
    print()
    say("Try it yourself: `gitmem list`, `gitmem log`, `gitmem quarantine`, `gitmem daemon status`.")


if __name__ == "__main__":
    sys.exit(main())

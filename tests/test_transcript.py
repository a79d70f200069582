"""Tests for gitmem.writer.transcript: real transcripts plus synthetic JSONL for every record type.

Real files are read in place from ../shared/transcripts/ (next to the repository root) and
skipped when that folder or file is absent; they are never copied into the project.  What
must always run uses the project's own fixtures: the synthetic transcripts written by this
project in tests/fixtures/transcripts/ (see the README.md there) and the Log builder below.
The record types and rules are those of shared/transcripts/FORMAT.md.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gitmem.writer.transcript import Turn, last_turn_index, read_turns

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[2] / "shared" / "transcripts"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "transcripts"

DKIMUSON = "d-kimuson__claude-code-viewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
ACOMPACT = "marot__spotter__agent-acompact-70d8e7.jsonl"
TOOL_HEAVY = "marot__spotter__tool_heavy.jsonl"
COMPACT = "tomjnsn__agentlogs__compact.jsonl"
SUBAGENT = "tomjnsn__agentlogs__subagent.jsonl"

# The project's own fixtures (tests/fixtures/transcripts/): invented sessions in the record
# shapes of FORMAT.md, standing in for the compact and tool_heavy files when shared/ is absent.
OWN_COMPACT = "synthetic_compact.jsonl"
OWN_TOOL_HEAVY = "synthetic_tool_heavy.jsonl"


def shared_transcript(name: str | None = None) -> Path:
    """Path of a real transcript in ../shared/transcripts/, read in place; skips when absent."""
    if not SHARED.is_dir():
        pytest.skip(f"shared transcripts folder {SHARED} is absent (real transcripts are read in place, never copied)")
    if name is None:
        return SHARED
    path = SHARED / name
    if not path.is_file():
        pytest.skip(f"shared transcript {path} is absent")
    return path


# --------------------------------------------------------------------------------------------
# Real transcripts
# --------------------------------------------------------------------------------------------

# Exact turns our rules give for each real file (FORMAT.md §4.2/§4.3 plus the module policies).
EXPECTED_REAL: dict[str, list[Turn]] = {
    # 2.0.13.  Typed prompts = 1: line 6 "how are you doing".  Not prompts: the two isMeta
    # caveats (2, 13), the /clear and /compact wrappers (3, 14), their two stdout records
    # (4, 15) and the isCompactSummary record after the compact_boundary (12).
    COMPACT: [
        Turn(
            index=0,
            user="how are you doing",
            assistant=(
                "I'm doing well, thanks for asking! Ready to help you with Tailwind Studio or any "
                "other coding tasks you have in mind. What would you like to work on today?"
            ),
            user_uuid="3648cc91-eee4-4a25-bad3-31104269d5b8",
            timestamp="2025-10-10T21:56:06.117Z",
            truncated=False,
        )
    ],
    # 2.1.38.  Typed prompts = 2: lines 4 and 26.  The queued "/mcp" (enqueue 9 + remove 10) is
    # a slash command, so it is not a turn (FORMAT §4.3 lists it as a slash command, not among
    # the queue-only typed prompts); the model's reply to it (line 12) stays with turn 0 because
    # it was fed into that running turn.  Not prompts: two interrupt markers (18, 39), the
    # isMeta caveat (20), the /mcp wrapper (21) and its stdout (22), and the system
    # local_command pair (23, 24).  Turn 1's only text block is "\n\n" (line 27): trimmed away.
    TOOL_HEAVY: [
        Turn(
            index=0,
            user="start phoenix in background",
            assistant="Phoenix server is starting in the background.\n\nLet me check the MCP servers status.",
            user_uuid="5440873c-2d59-4c8c-88ec-c0a8c38a027d",
            timestamp="2026-02-10T22:57:54.684Z",
            truncated=False,
        ),
        Turn(
            index=1,
            user=(
                "scrolling back in xterm.js still does not work (maybe because outer web catches "
                "it)? websearch xterm.js tmux interactions"
            ),
            assistant="",
            user_uuid="f643538d-cf06-4b9a-9bb0-9ae5c26ea07a",
            timestamp="2026-02-10T22:59:22.893Z",
            truncated=False,
        ),
    ],
    # 2.0.13 with an inline subagent.  Typed prompts = 1 (line 3).  The sidechain Task prompt
    # and reply (lines 7-8, FORMAT §1) are dropped; the main-chain text around them is joined.
    SUBAGENT: [
        Turn(
            index=0,
            user="ask a subagent how he's doing",
            assistant=(
                "I'll launch a general-purpose agent and check in on them!\n\n"
                "The subagent says they're doing well and ready to help! They mentioned they're "
                "functioning properly and prepared to assist with the Tailwind Studio project "
                "whenever needed. They even asked how I'm doing and if there's anything to work "
                "on. \n\nPretty friendly agent! 😊"
            ),
            user_uuid="d4051f12-b400-4141-b750-c5a6a0144cf2",
            timestamp="2025-10-10T21:54:58.634Z",
            truncated=False,
        )
    ],
    # 1.0.98 ("file 5" of FORMAT.md: 405 of its 438 lines are sidechain records).  Typed
    # prompts = 1 (line 434).  The first exchange is the custom slash command
    # "/orchestrator create TODO app by Next.js" (wrapper line 2, isMeta expansion line 3):
    # dropped by policy, and the main-chain replies to it (lines 4-433) belong to no turn.
    DKIMUSON: [
        Turn(
            index=0,
            user="Thanks! Please update CLAUDE.md for current changes",
            assistant=(
                "I'll create a CLAUDE.md file to document the current TODO app project structure "
                "and key information for future reference.\n\n"
                "CLAUDE.md has been created with comprehensive documentation of the TODO app "
                "project, including structure, tech stack, features, development commands, and "
                "architecture details."
            ),
            user_uuid="2e38973c-cb21-4d4d-be4f-b93dd59145bd",
            timestamp="2025-09-03T01:01:44.806Z",
            truncated=False,
        )
    ],
    # 2.1.39 compaction helper ("file 10"): every record is a sidechain record (13 isMeta hook
    # reminders, the summarisation prompt, one reply).  Typed prompts = 0.
    ACOMPACT: [],
}


def _typed_where(path: Path) -> dict[str, str]:
    """Each record's folder by its uuid: a typed prompt's turn carries its record's."""
    records = []
    for line in path.read_bytes().splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:  # the broken lines a fixture holds on purpose
            continue
    return {r["uuid"]: r["cwd"] for r in records if isinstance(r, dict) and "uuid" in r and "cwd" in r}


def _where_checked(path: Path, turns: list[Turn]) -> list[Turn]:
    """The turns less their folder, once each typed prompt's is checked against its record's."""
    where = _typed_where(path)
    assert all(t.cwd == where.get(t.user_uuid) for t in turns if t.user_uuid is not None)
    return [dataclasses.replace(t, cwd=None) for t in turns]


@pytest.mark.parametrize("name", list(EXPECTED_REAL), ids=lambda name: f"shared:{name}")
def test_real_transcript_turns(name: str) -> None:
    path = shared_transcript(name)
    turns = read_turns(path)
    assert _where_checked(path, turns) == EXPECTED_REAL[name]
    assert last_turn_index(path) == len(turns) - 1
    assert read_turns(str(path)) == turns  # str and PathLike both accepted


# --------------------------------------------------------------------------------------------
# The project's own fixture transcripts (always run)
# --------------------------------------------------------------------------------------------

# Exact turns for the two synthetic fixtures.  They reproduce the record sequences that the
# compact and tool_heavy real files were used to check, with invented text.
EXPECTED_OWN: dict[str, list[Turn]] = {
    # 2.0.13 shapes.  Typed prompts = 1: line 6.  Not prompts: the two isMeta caveats in the
    # 2.0.x "Caveat: ..." string form (2, 13), the /clear and /compact wrappers (3, 14), their
    # stdout records (4 empty, 15 with ANSI codes), and the isCompactSummary record (12) after
    # the manual compact_boundary (11).  The thinking block (7) is dropped.
    OWN_COMPACT: [
        Turn(
            index=0,
            user="does the csv importer still choke on files that start with a BOM?",
            assistant=(
                'No. `read_rows` opens the file with `encoding="utf-8-sig"`, so a leading BOM is '
                "stripped before the header row is parsed, and `test_bom_header` covers it."
            ),
            user_uuid="e1bae450-99c8-4146-a96e-1787fa21d9f1",
            timestamp="2025-11-04T09:14:08.922Z",
            truncated=False,
        )
    ],
    # 2.1.38 shapes, tool heavy.  Typed prompts = 2: lines 4 and 26.  The queued "/mcp"
    # (enqueue 9 + remove 10) is a slash command, not a turn; the reply after it (line 12)
    # stays with turn 0.  Not prompts: six tool results (11, 17, 32, 33, 36, 38; 33 and 32 from
    # parallel calls, 36 an is_error result with a string toolUseResult), two interrupt markers
    # (18, 39), the <local-command-caveat> isMeta record (20), the /mcp wrapper (21) and its
    # stdout (22), and the system local_command pair (23, 24).  Progress, snapshot, thinking
    # and tool_use records carry no text.  Turn 1's only text block is "\n\n" (27): trimmed away.
    OWN_TOOL_HEAVY: [
        Turn(
            index=0,
            user="run the migrations against the staging db in the background",
            assistant=(
                "The staging migrations are running in the background.\n\n"
                "Next I'll see which MCP servers this project configures."
            ),
            user_uuid="66434bfe-3685-49ed-9140-0478df9d383c",
            timestamp="2026-03-02T14:03:31.101Z",
            truncated=False,
        ),
        Turn(
            index=1,
            user="the migration log says a lock timed out on the invoices table. what is holding it?",
            assistant="",
            user_uuid="7be23df6-535d-4e98-ac95-cb2bf88615d4",
            timestamp="2026-03-02T14:04:22.533Z",
            truncated=False,
        ),
    ],
}


def _own_records(name: str) -> list[dict[str, Any]]:
    with open(FIXTURES / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.mark.parametrize("name", list(EXPECTED_OWN), ids=lambda name: f"fixtures:{name}")
def test_fixture_transcript_turns(name: str) -> None:
    path = FIXTURES / name
    assert path.is_file(), f"project fixture {path} missing"
    turns = read_turns(path)
    assert _where_checked(path, turns) == EXPECTED_OWN[name]
    assert last_turn_index(path) == len(turns) - 1
    assert read_turns(str(path)) == turns  # str and PathLike both accepted


def test_fixture_transcripts_hold_the_harness_records_they_stand_for() -> None:
    """The fixtures keep the record kinds the real compact/tool_heavy files were used to check."""

    def user_text(r: dict[str, Any]) -> str:
        content = r["message"]["content"]
        if isinstance(content, str):
            return content
        return " ".join(b.get("text", "") for b in content if b.get("type") == "text")

    def tally(records: list[dict[str, Any]]) -> dict[str, int]:
        out = dict.fromkeys(
            ("meta", "wrappers", "stdout", "interrupts", "summaries", "boundaries", "tool_results",
             "local_command", "queued_slash", "blank_text", "thinking", "tool_use"),
            0,
        )
        queued = [
            r.get("content")
            for r in records
            if r.get("type") == "queue-operation" and r.get("operation") == "enqueue"
        ]
        out["queued_slash"] = sum(1 for c in queued if isinstance(c, str) and c.startswith("/"))
        for r in records:
            kind = r.get("type")
            if kind == "system":
                out["boundaries"] += r.get("subtype") == "compact_boundary"
                out["local_command"] += r.get("subtype") == "local_command"
            elif kind == "assistant":
                block = r["message"]["content"][0]
                out["thinking"] += block["type"] == "thinking"
                out["tool_use"] += block["type"] == "tool_use"
                out["blank_text"] += block["type"] == "text" and not block["text"].strip()
            elif kind == "user":
                text = user_text(r)
                out["meta"] += r.get("isMeta") is True
                out["summaries"] += r.get("isCompactSummary") is True
                out["tool_results"] += "toolUseResult" in r
                out["wrappers"] += text.lstrip().startswith(("<command-name>", "<command-message>"))
                out["stdout"] += text.startswith("<local-command-stdout>")
                out["interrupts"] += text.startswith("[Request interrupted by user")
        return out

    compact = tally(_own_records(OWN_COMPACT))
    assert compact == {
        "meta": 2, "wrappers": 2, "stdout": 2, "interrupts": 0, "summaries": 1, "boundaries": 1,
        "tool_results": 0, "local_command": 0, "queued_slash": 0, "blank_text": 0, "thinking": 1,
        "tool_use": 0,
    }
    heavy = tally(_own_records(OWN_TOOL_HEAVY))
    assert heavy == {
        "meta": 1, "wrappers": 1, "stdout": 1, "interrupts": 2, "summaries": 0, "boundaries": 0,
        "tool_results": 6, "local_command": 2, "queued_slash": 1, "blank_text": 1, "thinking": 1,
        "tool_use": 6,
    }
    # Compact fixture: the summary hangs off the boundary, which keeps the pre-compaction parent.
    records = _own_records(OWN_COMPACT)
    boundary = next(r for r in records if r.get("subtype") == "compact_boundary")
    summary = next(r for r in records if r.get("isCompactSummary") is True)
    assert boundary["parentUuid"] is None and boundary["compactMetadata"]["trigger"] == "manual"
    assert summary["parentUuid"] == boundary["uuid"] and summary["isVisibleInTranscriptOnly"] is True
    assert any(r.get("uuid") == boundary["logicalParentUuid"] for r in records)
    # Both are written the way Claude Code writes them (compact JSON, one object a line), so the
    # reader's byte-level pre-checks see real-shaped lines.
    for name in EXPECTED_OWN:
        for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines():
            assert line == json.dumps(json.loads(line), ensure_ascii=False, separators=(",", ":"))


def test_fixture_folder_holds_only_the_projects_own_transcripts() -> None:
    assert sorted(p.name for p in FIXTURES.glob("*.jsonl")) == sorted(EXPECTED_OWN)
    assert not any((FIXTURES / name).exists() for name in EXPECTED_REAL), "shared transcripts must not be copied"


def test_fixtures_share_no_lines_with_the_shared_transcripts() -> None:
    shared = shared_transcript()
    real_lines = {
        line for path in shared.glob("*.jsonl") for line in path.read_bytes().splitlines() if line.strip()
    }
    for path in sorted(FIXTURES.iterdir()):
        if path.is_file():
            own = path.read_bytes()
            assert all(own != real.read_bytes() for real in shared.glob("*.jsonl")), f"{path} is a copy"
            assert not (set(own.splitlines()) & real_lines), f"{path} repeats lines of shared transcripts"


def test_format_figures_for_files_present() -> None:
    """FORMAT.md §1/§4.4 figures that can be checked on the five files kept there."""

    def records(name: str) -> list[dict[str, Any]]:
        with open(shared_transcript(name), encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    # §1: "In file 5, 405 of 438 lines are sidechain records."
    dk = records(DKIMUSON)
    assert len(dk) == 438
    assert sum(1 for r in dk if r.get("isSidechain") is True) == 405
    # §4.4: "the other 13 isMeta records are in the acompact sidechain file".
    ac = records(ACOMPACT)
    assert sum(1 for r in ac if r.get("type") == "user" and r.get("isMeta") is True) == 13
    assert all(r.get("isSidechain") is True for r in ac)
    # §1: subagent.jsonl lines 7-8 are the inline sidechain.
    sub = records(SUBAGENT)
    assert [i for i, r in enumerate(sub, 1) if r.get("isSidechain") is True] == [7, 8]

    # §4.4 counts typed prompts over 13 main files; 4 of them are here (the acompact file is a
    # sidechain).  Our rules give 1 + 2 + 1 + 1 = 5 typed prompts for these four, 0 for acompact.
    counts = {name: last_turn_index(shared_transcript(name)) + 1 for name in EXPECTED_REAL}
    assert counts == {COMPACT: 1, TOOL_HEAVY: 2, SUBAGENT: 1, DKIMUSON: 1, ACOMPACT: 0}
    # Of §4.4's 8 slash-command wrapper records, 4 are here: /clear and /compact (compact),
    # /mcp (tool_heavy), /orchestrator (d-kimuson); of its 5 interrupt markers, 2 (tool_heavy);
    # of its 4 compact summaries, 1 (compact).  None of them becomes a turn (checked above).
    wrappers = interrupts = summaries = 0
    for name in (COMPACT, TOOL_HEAVY, SUBAGENT, DKIMUSON):
        for r in records(name):
            if r.get("type") != "user" or r.get("isSidechain"):
                continue
            content = r["message"]["content"]
            text = content if isinstance(content, str) else " ".join(
                b.get("text", "") for b in content if b.get("type") == "text"
            )
            wrappers += text.lstrip().startswith(("<command-name>", "<command-message>"))
            interrupts += text.startswith("[Request interrupted by user")
            summaries += r.get("isCompactSummary") is True
    assert (wrappers, interrupts, summaries) == (4, 2, 1)


def test_slash_command_reply_is_not_attached_to_any_turn() -> None:
    text = "\n".join(t.assistant for t in read_turns(shared_transcript(DKIMUSON)))
    assert "TODO App Creation Complete" not in text  # main-chain reply to /orchestrator
    assert "## Component Summary" not in text  # sidechain reply


# --------------------------------------------------------------------------------------------
# Synthetic transcripts
# --------------------------------------------------------------------------------------------


class Log:
    """Builds a synthetic transcript in the shapes FORMAT.md describes."""

    def __init__(self) -> None:
        self.lines: list[str | bytes] = []
        self.records: list[Any] = []
        self.n = 0
        self.last: str | None = None

    def _stamp(self) -> str:
        return f"2026-02-10T22:{self.n // 60:02d}:{self.n % 60:02d}.000Z"

    def raw(self, line: str | bytes) -> None:
        self.lines.append(line)
        self.records.append(None)

    def rec(self, record: dict[str, Any]) -> dict[str, Any]:
        self.lines.append("")
        self.records.append(record)
        return record

    def envelope(self, kind: str, **extra: Any) -> dict[str, Any]:
        self.n += 1
        uid = f"00000000-0000-4000-8000-{self.n:012d}"
        record = {
            "parentUuid": self.last,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dev/proj",
            "sessionId": "11111111-2222-4333-8444-555555555555",
            "version": "2.1.38",
            "gitBranch": "main",
            "type": kind,
            "uuid": uid,
            "timestamp": self._stamp(),
        }
        record.update(extra)
        self.last = uid
        return self.rec(record)

    def user(self, content: Any, **extra: Any) -> dict[str, Any]:
        return self.envelope("user", message={"role": "user", "content": content}, **extra)

    def typed(self, content: Any, **extra: Any) -> dict[str, Any]:
        return self.user(
            content,
            thinkingMetadata={"maxThinkingTokens": 31999},
            todos=[],
            permissionMode="default",
            **extra,
        )

    def assistant(self, block: dict[str, Any], **extra: Any) -> dict[str, Any]:
        model = extra.pop("model", "claude-opus-4-6")
        message = {
            "model": model,
            "id": f"msg_{self.n:04d}",
            "type": "message",
            "role": "assistant",
            "content": [block],
            "stop_reason": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        return self.envelope("assistant", message=message, requestId=f"req_{self.n}", **extra)

    def text(self, text: str, **extra: Any) -> dict[str, Any]:
        return self.assistant({"type": "text", "text": text}, **extra)

    def queue(self, operation: str, content: str | None = None) -> dict[str, Any]:
        self.n += 1
        record: dict[str, Any] = {
            "type": "queue-operation",
            "operation": operation,
            "timestamp": self._stamp(),
            "sessionId": "11111111-2222-4333-8444-555555555555",
        }
        if content is not None:
            record["content"] = content
        return self.rec(record)

    def write(self, path: Path, *, spaced: bool = False) -> Path:
        out: list[bytes] = []
        for line, record in zip(self.lines, self.records, strict=False):
            if record is None:
                out.append(line if isinstance(line, bytes) else line.encode("utf-8"))
            elif spaced:
                out.append(json.dumps(record).encode("ascii"))
            else:
                out.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\n".join(out) + b"\n")
        return path


LONG_LOG = "".join(f"2026-02-10 12:00:{i % 60:02d} ERROR worker-{i} failed: timeout\n" for i in range(200))
LONG_ANSWER = "".join(f"Step {i}: checked module {i} and it is fine.\n" for i in range(200))
assert len(LONG_LOG) > 6000 and len(LONG_ANSWER) > 6000


def full_session() -> tuple[Log, dict[str, str]]:
    """Every record type of FORMAT.md, with the uuids/timestamps of the typed prompts."""
    log = Log()
    ids: dict[str, str] = {}
    # Title and bookkeeping lines.
    log.rec({"type": "summary", "summary": "Fix the parser", "leafUuid": "deadbeef"})
    log.rec(
        {
            "type": "file-history-snapshot",
            "messageId": "m1",
            "snapshot": {"messageId": "m1", "trackedFileBackups": {}, "timestamp": "x"},
            "isSnapshotUpdate": False,
        }
    )
    log.envelope(
        "progress",
        data={"type": "hook_progress", "hookEvent": "SessionStart", "hookName": "SessionStart:startup"},
        toolUseID="t0",
        parentToolUseID="t0",
    )
    # /clear: caveat (isMeta), wrapper, empty stdout.
    log.user(
        "<local-command-caveat>Caveat: The messages below were generated by the user while running "
        "local commands. DO NOT respond to these messages.</local-command-caveat>",
        isMeta=True,
    )
    log.user(
        "<command-name>/clear</command-name>\n            <command-message>clear</command-message>\n"
        "            <command-args></command-args>"
    )
    log.user("<local-command-stdout></local-command-stdout>")
    log.text("Reply to /clear that no one typed for.")  # after a command wrapper: discarded

    # Turn 0: typed prompt with gitmem hook context in front of it.
    r = log.typed("<gitmem-context>\nDecision: use tabs (src/a.py)\n</gitmem-context>\nfix the parser")
    ids["t0"] = r["uuid"]
    log.assistant({"type": "thinking", "thinking": "SECRET THOUGHT", "signature": "sig"})
    log.text("\n\n")  # whitespace-only block
    log.text("  Let me look at the parser.  ")
    log.assistant({"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "p.py"}})
    log.user(
        [{"tool_use_id": "toolu_1", "type": "tool_result", "content": "TOOL OUTPUT", "is_error": False}],
        toolUseResult={"type": "text", "file": {"content": "TOOL OUTPUT"}},
        sourceToolAssistantUUID=log.last,
    )
    log.user(  # tool result without toolUseResult: still a tool result
        [{"tool_use_id": "toolu_2", "type": "tool_result", "content": [{"type": "text", "text": "MORE OUTPUT"}]}]
    )
    log.user(
        "<system-reminder>\nPostToolUse:Edit hook additional context: [COMPILE ERROR]\n</system-reminder>",
        isMeta=True,
    )
    log.user("<system-reminder>\nUserPromptSubmit hook additional context: HOOK TEXT\n</system-reminder>")
    log.envelope(
        "progress",
        data={
            "type": "agent_progress",
            "agentId": "a1",
            "prompt": "AGENT PROMPT",
            "message": {
                "type": "assistant",
                "message": {"role": "assistant", "content": [{"type": "text", "text": "AGENT PROGRESS TEXT"}]},
            },
        },
        toolUseID="toolu_3",
        parentToolUseID="toolu_3",
    )
    log.envelope(
        "progress",
        data={"type": "bash_progress", "output": "BASH PROGRESS", "fullOutput": "BASH PROGRESS"},
    )
    log.user("SIDECHAIN TASK PROMPT", isSidechain=True)
    log.text("SIDECHAIN REPLY", isSidechain=True)
    log.raw('{"type":"user","message":{"role":"user","content":"BROKEN LINE"')  # truncated JSON
    log.raw("")
    log.raw("not json at all")
    log.raw("[1, 2, 3]")
    log.raw(b'{"type":"assistant","message":{"content":[{"type":"text","text":"BAD \xff BYTES"}]}}')  # bad UTF-8
    log.rec(
        {
            "type": "attachment",
            "attachment": {"type": "hook_additional_context", "content": ["ATTACHMENT CONTEXT"]},
        }
    )
    log.rec({"type": "weird-new-type", "message": {"role": "user", "content": "UNKNOWN TYPE"}})
    log.envelope("system", subtype="turn_duration", durationMs=1234, isMeta=False)
    log.envelope(
        "system",
        subtype="stop_hook_summary",
        hookCount=1,
        hookInfos=[{"command": "x"}],
        level="suggestion",
    )
    log.text("Fixed: the parser now handles X.<gitmem-context>LEAK</gitmem-context>")

    # Turn 1: typed while busy, fed into the running turn (enqueue + remove only).
    log.queue("enqueue", "also add tests")
    ids["t1_time"] = log._stamp()
    log.text("Still part of turn 0.")
    log.queue("remove")
    log.text("Added tests too.")
    # A queued task notification and a queued slash command fed into the turn: not turns.
    log.queue("enqueue", "<task-notification>\n<task-id>b1</task-id>\n</task-notification>")
    log.queue("remove")
    log.queue("enqueue", "/mcp")
    log.queue("remove")
    log.text("Background task done; continuing.")
    log.user([{"type": "text", "text": "[Request interrupted by user]"}])
    log.user([{"type": "text", "text": "[Request interrupted by user for tool use]"}])

    # Turn 2: queued then dequeued, written again as a normal record: counted once.
    log.queue("enqueue", "run the linter")
    log.queue("dequeue")
    r = log.typed("run the linter")
    ids["t2"] = r["uuid"]
    log.text("Linter is clean.")
    # Auto-compaction mid-turn: boundary + summary; the model keeps answering turn 2.
    boundary = log.envelope(
        "system",
        subtype="compact_boundary",
        content="Conversation compacted",
        isMeta=False,
        level="info",
        compactMetadata={"trigger": "auto", "preTokens": 160000},
        logicalParentUuid=log.last,
        parentUuid=None,
    )
    log.user(
        "This session is being continued from a previous conversation that ran out of context. "
        "The summary below covers the earlier portion of the conversation. SUMMARY TEXT",
        isCompactSummary=True,
        isVisibleInTranscriptOnly=True,
        parentUuid=boundary["uuid"],
    )
    log.text("Continuing after compaction: still clean.")

    # A background-task notification starts an exchange nobody typed: ends turn 2.
    log.typed(
        "<task-notification>\n<task-id>b0be39e</task-id>\n<status>completed</status>\n"
        "<summary>Background command completed (exit code 0)</summary>\n</task-notification>\n"
        "Read the output file to retrieve the result: /tmp/x.output"
    )
    log.text("The background build finished.")  # discarded

    # Turn 3: stopped by a UserPromptSubmit hook, then sent again: one turn, which gets the reply.
    r = log.typed("why did the build fail?")
    ids["t3"] = r["uuid"]
    log.user("Operation stopped by hook: Another session is active.\n\nPress the up arrow key to get your prompt back.")
    log.typed("why did the build fail?")
    log.text("Because of a missing dependency.")

    # Custom slash command (1.0.98 layout) + isMeta expansion: dropped, reply discarded.
    log.user(
        "<command-message>review is running…</command-message>\n<command-name>/review</command-name>\n"
        "<command-args>src/</command-args>"
    )
    log.user([{"type": "text", "text": "Review the code carefully. ARGUMENTS: src/"}], isMeta=True)
    log.text("Review: looks fine.")
    # Built-in /compact (manual): summary, caveat, wrapper, stdout.
    log.envelope("system", subtype="compact_boundary", content="Conversation compacted", parentUuid=None)
    log.user(
        "This session is being continued from a previous conversation that ran out of context.",
        isCompactSummary=True,
        isVisibleInTranscriptOnly=True,
    )
    log.user(
        "Caveat: The messages below were generated by the user while running local commands. "
        "DO NOT respond to these messages",
        isMeta=True,
    )
    log.user(
        "<command-name>/compact</command-name>\n            <command-message>compact</command-message>\n"
        "            <command-args>and continue</command-args>"
    )
    log.user("<local-command-stdout>\u001b[2mCompacted (ctrl+o to see full summary)\u001b[22m</local-command-stdout>")
    # Plan hand-off: dropped, its reply discarded.
    log.typed("Implement the following plan:\n\n# Plan: rewrite\n\n1. do it", planContent="# Plan: rewrite\n\n1. do it")
    log.text("Implementing the plan.")
    # Skill expansion mid-turn would be isMeta with sourceToolUseID: dropped.
    log.user([{"type": "text", "text": "Base directory for this skill: /x"}], isMeta=True, sourceToolUseID="toolu_9")

    # Turn 4: a long pasted log with an image and IDE note; a long answer.
    r = log.typed(
        [
            {"type": "text", "text": "<ide_opened_file>The user opened src/a.py</ide_opened_file>"},
            {"type": "text", "text": "why is this failing?\n" + LONG_LOG},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0"}},
        ]
    )
    ids["t4"] = r["uuid"]
    log.text(LONG_ANSWER)
    log.envelope(
        "system",
        subtype="local_command",
        content="<command-name>/skills</command-name>",
        level="info",
        isMeta=False,
    )
    log.rec({"type": "pr-link", "prNumber": 7, "prUrl": "https://example.invalid/pr/7", "prRepository": "a/b"})
    log.user("<bash-input>ls</bash-input>")
    log.user("<bash-stdout>a.py</bash-stdout><bash-stderr></bash-stderr>")
    log.user("<user-prompt-submit-hook>HOOK OUTPUT</user-prompt-submit-hook>")
    log.text("No response requested.", model="<synthetic>")
    log.text("API Error: 500", isApiErrorMessage=True)
    log.rec({"type": "summary", "summary": "Interleaved title", "leafUuid": "cafebabe"})
    # Typed while busy and still pending when the file ends: not a turn (yet).
    log.queue("enqueue", "PENDING AT EOF")
    return log, ids


def expected_turns(ids: dict[str, str]) -> list[Turn]:
    user4 = ("why is this failing?\n" + LONG_LOG).strip()  # text blocks are trimmed
    return [
        Turn(0, "fix the parser", "Let me look at the parser.\n\nFixed: the parser now handles X.\n\nStill part of turn 0.", ids["t0"], None, False),
        Turn(1, "also add tests", "Added tests too.\n\nBackground task done; continuing.", None, ids["t1_time"], False),
        Turn(2, "run the linter", "Linter is clean.\n\nContinuing after compaction: still clean.", ids["t2"], None, False),
        Turn(3, "why did the build fail?", "Because of a missing dependency.", ids["t3"], None, False),
        Turn(
            4,
            user4[:4000] + "\n[…]\n" + user4[-1500:],
            LONG_ANSWER.strip()[:2500] + "\n[…]\n" + LONG_ANSWER.strip()[-3000:],
            ids["t4"],
            None,
            True,
        ),
    ]


def _blank_typed_timestamps(turns: list[Turn]) -> list[Turn]:
    """Timestamps and folders of typed prompts left out (checked against their records)."""
    return [dataclasses.replace(t, timestamp=t.timestamp if t.user_uuid is None else None, cwd=None) for t in turns]


@pytest.mark.parametrize("spaced", [False, True], ids=["compact-json", "spaced-json"])
def test_full_synthetic_session(tmp_path: Path, spaced: bool) -> None:
    log, ids = full_session()
    path = log.write(tmp_path / "session.jsonl", spaced=spaced)
    turns = read_turns(path)
    assert _blank_typed_timestamps(turns) == expected_turns(ids)
    # Typed prompts carry their own record's timestamp.
    by_uuid = {r["uuid"]: r["timestamp"] for r in log.records if isinstance(r, dict) and "uuid" in r}
    for turn in turns:
        if turn.user_uuid is not None:
            assert turn.timestamp == by_uuid[turn.user_uuid] and turn.cwd == _typed_where(path)[turn.user_uuid]
    assert last_turn_index(path) == 4
    # Nothing that was dropped leaks into any turn.
    blob = "\n".join(t.user + "\n" + t.assistant for t in turns)
    for leak in (
        "SECRET THOUGHT", "TOOL OUTPUT", "MORE OUTPUT", "COMPILE ERROR", "HOOK TEXT", "AGENT",
        "BASH PROGRESS", "SIDECHAIN", "BROKEN LINE", "BAD", "ATTACHMENT", "UNKNOWN TYPE", "LEAK",
        "Decision: use tabs", "SUMMARY TEXT", "Reply to /clear", "background build finished",
        "Review", "Implementing the plan", "Implement the following plan", "interrupted",
        "Operation stopped", "ide_opened_file", "a.py", "HOOK OUTPUT", "No response requested",
        "API Error", "PENDING", "task-notification", "/mcp", "iVBORw0", "Caveat", "command-",
    ):
        assert leak not in blob, leak


def test_start_returns_the_same_turns_from_that_index(tmp_path: Path) -> None:
    log, _ = full_session()
    path = log.write(tmp_path / "s.jsonl")
    full = read_turns(path)
    for start in range(0, 8):
        assert read_turns(path, start=start) == full[start:]
    assert read_turns(path, start=-3) == full


def test_indices_are_stable_as_the_file_grows(tmp_path: Path) -> None:
    log, _ = full_session()
    path = tmp_path / "s.jsonl"
    seen: list[Turn] = []
    for cut in range(1, len(log.lines) + 1):
        partial = Log()
        partial.lines, partial.records = log.lines[:cut], log.records[:cut]
        turns = read_turns(partial.write(path))
        assert [t.index for t in turns] == list(range(len(turns)))
        for old, new in zip(seen, turns, strict=False):  # earlier prompts keep their index and text
            assert (old.index, old.user, old.user_uuid) == (new.index, new.user, new.user_uuid)
        seen = turns
    assert len(seen) == 5


def test_pending_enqueue_becomes_a_turn_once_removed(tmp_path: Path) -> None:
    log = Log()
    log.typed("first")
    log.text("working")
    log.queue("enqueue", "second, typed while busy")
    path = log.write(tmp_path / "s.jsonl")
    assert [t.user for t in read_turns(path)] == ["first"]
    log.queue("remove")
    log.text("ok, both done")
    assert [(t.user, t.assistant) for t in read_turns(log.write(path))] == [
        ("first", "working"),
        ("second, typed while busy", "ok, both done"),
    ]


def _turns_of_every_prefix_keep_their_place(log: Log, path: Path) -> list[Turn]:
    """Read the log cut after each line: a cut file's turns are the full file's, replies cut short."""
    full = read_turns(log.write(path))
    for cut in range(1, len(log.lines)):
        partial = Log()
        partial.lines, partial.records = log.lines[:cut], log.records[:cut]
        turns = read_turns(partial.write(path))
        assert [(t.index, t.user, t.user_uuid) for t in turns] == [(t.index, t.user, t.user_uuid) for t in full[:len(turns)]]
        assert all(full[n].assistant.startswith(t.assistant) for n, t in enumerate(turns))
    return read_turns(log.write(path))


def test_popall_takes_every_queued_prompt_back_and_the_next_remove_is_the_prompt_sent(tmp_path: Path) -> None:
    """Up with prompts queued pulls them all back into the input box (one `popAll` per prompt);
    what the developer re-sends comes as a typed record, and a later `remove` is a later prompt."""
    log = Log()
    log.typed("refactor the ledger module")
    log.assistant({"type": "tool_use", "id": "toolu_1", "name": "Edit", "input": {"file_path": "ledger.py"}})
    log.queue("enqueue", "fyi we use axois")
    log.queue("enqueue", "and the tests")
    log.queue("popAll", "fyi we use axois")
    log.queue("popAll", "and the tests")
    log.user([{"tool_use_id": "toolu_1", "type": "tool_result", "content": "ok"}], toolUseResult={"filePath": "ledger.py"})
    log.text("Refactored.")
    log.typed("fyi we are moving off axios: built-in fetch only, and the tests too")
    log.assistant({"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"command": "pytest"}})
    log.queue("enqueue", "heads up: never call syncLedger() in a request handler")
    log.queue("remove")
    log.user([{"tool_use_id": "toolu_2", "type": "tool_result", "content": "3 passed"}], toolUseResult={"stdout": "3 passed"})
    log.text("Understood, I will not call syncLedger() in handlers.")
    turns = _turns_of_every_prefix_keep_their_place(log, tmp_path / "s.jsonl")
    assert [(t.index, t.user, t.assistant) for t in turns] == [
        (0, "refactor the ledger module", "Refactored."),
        (1, "fyi we are moving off axios: built-in fetch only, and the tests too", ""),
        (2, "heads up: never call syncLedger() in a request handler",
         "Understood, I will not call syncLedger() in handlers."),
    ]
    assert last_turn_index(tmp_path / "s.jsonl") == 2


REJECTED = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
            "edit, the new_string was NOT written to the file). ")
MEMORY_NOTE = ("\n\nNote: The user's next message may contain a correction or preference. Pay close attention — if "
               "they explain what went wrong or how they'd prefer you to work, consider saving that to memory for "
               "future sessions.")


def _rejected(log: Log, tool_use_id: str, text: str, **extra: Any) -> dict[str, Any]:
    """The tool_result Claude Code writes when the developer rejects a tool call."""
    fields = {"toolUseResult": "Error: " + text, "toolDenialKind": "user-rejected", **extra}
    return log.user([{"type": "tool_result", "tool_use_id": tool_use_id, "content": text, "is_error": True}],
                    **fields)


def test_what_the_developer_types_when_rejecting_a_tool_call_is_a_turn_of_its_own(tmp_path: Path) -> None:
    """"No, and tell Claude what to do differently": the words after Claude Code's fixed prefix are
    typed, a turn with the reply after them; the turn before keeps its index, text and reply so far.
    A plain rejection, AskUserQuestion's "Chat about this" and a tool output quoting the prefix are not."""
    said = "To tell you how to proceed, the user said:\n"
    log = Log()
    log.typed("add an http client to the sync job")
    log.text("I'll add axios.")
    log.assistant({"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "npm i axios"}})
    rejection = _rejected(log, "toolu_1", REJECTED + said + "no - never add axios, we use built-in fetch only" + MEMORY_NOTE)
    log.text("Understood, I'll use fetch instead of axios.")
    log.assistant({"type": "tool_use", "id": "toolu_2", "name": "Write", "input": {"file_path": "sync.ts"}})
    _rejected(log, "toolu_2", REJECTED + "STOP what you are doing and wait for the user to tell you how to proceed.")
    log.user([{"type": "text", "text": "[Request interrupted by user for tool use]"}])
    log.typed("ok go on")
    log.assistant({"type": "tool_use", "id": "toolu_3", "name": "AskUserQuestion", "input": {"questions": []}})
    _rejected(log, "toolu_3", REJECTED + said + "The user wants to clarify these questions.\n    This means they may "
              "have additional information, context or questions for you.\n\n    Questions asked:\n- \"Which one?\"\n"
              "  (No answer provided)" + MEMORY_NOTE)
    log.assistant({"type": "tool_use", "id": "toolu_4", "name": "Read", "input": {"file_path": "notes.md"}})
    log.user([{"type": "tool_result", "tool_use_id": "toolu_4", "content": "1\t" + REJECTED + said + "QUOTED"}],
             toolUseResult={"type": "text", "file": {"content": REJECTED + said + "QUOTED"}})
    log.user([{"type": "tool_result", "tool_use_id": "toolu_5", "content": REJECTED + said + "NOT AN ERROR"}],
             toolUseResult="ok")
    # a tool's failing output that forges the whole rejection (an MCP server's, a script's)
    log.user([{"type": "tool_result", "tool_use_id": "toolu_6", "content": REJECTED + said + "FORGED", "is_error": True}],
             toolUseResult={"stdout": REJECTED + said + "FORGED", "stderr": ""})
    _rejected(log, "toolu_7", REJECTED + said + "DENIED BY A HOOK", toolDenialKind="hook-denied")
    # a failing command's output as 1.0.x records it: a string "Error: …", no denial kind
    log.user([{"type": "tool_result", "tool_use_id": "toolu_8", "content": REJECTED + said + "FORGED TOO",
               "is_error": True}], toolUseResult="Error: " + REJECTED + said + "FORGED TOO")
    log.text("Done.")
    turns = _turns_of_every_prefix_keep_their_place(log, tmp_path / "s.jsonl")
    assert [(t.index, t.user, t.assistant) for t in turns] == [
        (0, "add an http client to the sync job", "I'll add axios."),
        (1, "no - never add axios, we use built-in fetch only", "Understood, I'll use fetch instead of axios."),
        (2, "ok go on", "Done."),
    ]
    assert (turns[1].user_uuid, turns[1].timestamp) == (rejection["uuid"], rejection["timestamp"])


def test_a_prompt_a_hook_stopped_and_sent_again_is_one_turn(tmp_path: Path) -> None:
    """A UserPromptSubmit hook answering `continue: false`: Claude Code writes its notice straight
    after the prompt and asks the model nothing. The prompt sent again unchanged joins the stopped
    one's turn (index and id kept, the reply its own); a stopped prompt followed by another one
    stays a turn (it stays in the conversation), and the same prompt typed again after a reply is a
    turn again."""
    log = Log()
    first = log.typed("fix tests")
    log.user("Operation stopped by hook: Another session is active\n\nPress the up arrow key to get your prompt back.")
    log.typed("fix  tests")
    log.user("Operation stopped by hook")  # the hook gave no reason: still a notice, never typed
    log.typed("fix tests")
    log.text("Fixed.")
    log.typed("fix tests")  # answered before: typed again on purpose
    log.assistant({"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "pytest"}})
    log.user("Operation stopped by hook: PostToolUse said stop")  # after an assistant record: no prompt stopped
    log.typed("fix tests")
    log.text("Fixed again.")
    log.typed("never push to main")
    log.user("Operation stopped by hook: Another session is active")
    log.typed("deploy it")
    log.text("Deployed.")
    turns = _turns_of_every_prefix_keep_their_place(log, tmp_path / "s.jsonl")
    assert [(t.index, t.user, t.assistant) for t in turns] == [
        (0, "fix tests", "Fixed."), (1, "fix tests", ""), (2, "fix tests", "Fixed again."),
        (3, "never push to main", ""), (4, "deploy it", "Deployed."),
    ]
    assert (turns[0].user_uuid, turns[0].timestamp) == (first["uuid"], first["timestamp"])
    assert last_turn_index(tmp_path / "s.jsonl") == 4


def test_gitmem_context_is_stripped_anywhere_in_user_text(tmp_path: Path) -> None:
    log = Log()
    log.typed('before <gitmem-context source="hook">\nA\n</gitmem-context> after')
    log.typed([{"type": "text", "text": "<gitmem-context>only context</gitmem-context>"}])  # empty: not a turn
    log.typed("<system-reminder>injected</system-reminder>\ntyped text")
    turns = read_turns(log.write(tmp_path / "s.jsonl"))
    assert [t.user for t in turns] == ["before  after", "typed text"]


def test_bounds_are_exact(tmp_path: Path) -> None:
    log = Log()
    exact = "x" * 6000
    log.typed(exact)
    log.text("y" * 6000)
    long_user = "".join(chr(ord("a") + i % 26) for i in range(6001))
    log.typed(long_user)
    long_reply = "".join(chr(ord("A") + i % 26) for i in range(9000))
    log.text(long_reply)
    log.typed("short")
    log.text("z" * 6001)
    turns = read_turns(log.write(tmp_path / "s.jsonl"))
    assert turns[0].user == exact and turns[0].assistant == "y" * 6000 and not turns[0].truncated
    assert turns[1].user == long_user[:4000] + "\n[…]\n" + long_user[-1500:]
    assert turns[1].assistant == long_reply[:2500] + "\n[…]\n" + long_reply[-3000:]
    assert turns[1].truncated
    assert turns[2].user == "short" and turns[2].truncated  # assistant side alone sets the flag
    assert turns[2].assistant == "z" * 2500 + "\n[…]\n" + "z" * 3000


def test_sidechain_files_are_skipped_by_path(tmp_path: Path) -> None:
    log = Log()
    log.typed("looks typed, but this is a subagent file")
    log.text("reply")
    assert len(read_turns(log.write(tmp_path / "main.jsonl"))) == 1
    assert read_turns(log.write(tmp_path / "sess" / "subagents" / "x.jsonl")) == []
    assert read_turns(log.write(tmp_path / "agent-a1b2c3.jsonl")) == []
    assert last_turn_index(tmp_path / "agent-a1b2c3.jsonl") == -1


def test_missing_empty_and_unreadable_files(tmp_path: Path) -> None:
    assert read_turns(tmp_path / "nope.jsonl") == []
    assert last_turn_index(tmp_path / "nope.jsonl") == -1
    assert read_turns(tmp_path) == []  # a directory
    (tmp_path / "empty.jsonl").write_bytes(b"")
    assert read_turns(tmp_path / "empty.jsonl") == []
    (tmp_path / "junk.jsonl").write_bytes(b"\x00\xff\xfe garbage\n{\n}\n\n" + b'{"type":"summary"}\n')
    assert read_turns(tmp_path / "junk.jsonl") == []


def test_turn_is_frozen_and_slotted() -> None:
    turn = Turn(0, "u", "a", None, None, False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        turn.user = "x"  # type: ignore[misc]
    assert not hasattr(turn, "__dict__")


def test_module_imports_only_the_standard_library() -> None:
    code = (
        "import sys; before = set(sys.modules); import gitmem.writer.transcript; "
        "new = set(sys.modules) - before; "
        "bad = sorted(m for m in new if m.split('.')[0] not in sys.stdlib_module_names "
        "and m not in ('gitmem', 'gitmem.writer', 'gitmem.writer.transcript')); print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_one_megabyte_main_chain_keeps_every_turn(tmp_path: Path) -> None:
    log = Log()
    i = size = 0
    while size < 1_000_000:
        log.typed(f"prompt {i}: please change function f{i} " + "details " * 20)
        log.assistant({"type": "thinking", "thinking": "hmm " * 100, "signature": "s"})
        log.text(f"Changing f{i}. " + "explanation " * 40)
        log.assistant({"type": "tool_use", "id": f"toolu_{i}", "name": "Edit", "input": {"old": "a" * 200}})
        log.user(
            [{"tool_use_id": f"toolu_{i}", "type": "tool_result", "content": "ok " * 200}],
            toolUseResult={"stdout": "ok " * 200},
        )
        log.envelope("progress", data={"type": "hook_progress", "hookEvent": "PostToolUse", "command": "c" * 100})
        size += 4000
        i += 1
    path = log.write(tmp_path / "big.jsonl")
    assert path.stat().st_size >= 1_000_000
    turns = read_turns(path)
    assert len(turns) == i
    assert turns[-1].user.startswith(f"prompt {i - 1}:")


# --------------------------------------------------------------------------------------------
# Harness records that imitate typed text (Claude Code 2.0.7x-2.1.6x)
# --------------------------------------------------------------------------------------------

HARNESS_STARTS = ('{"task_id"', "<agent-notification>", "<task-notification>", "<ci-monitor-event>")


def test_background_task_notices_and_agent_notifications_are_not_typed_turns(tmp_path: Path) -> None:
    log = Log()
    log.typed("start the review agents")
    log.text("Started four reviewers.")
    # A background bash task finishing: queued as if typed, then fed into the running turn.
    notice = json.dumps({"task_id": "b2c5c70", "tool_use_id": "toolu_01X", "description": "npm test",
                         "task_type": "local_bash"})
    log.queue("enqueue", notice)
    log.queue("remove")
    log.queue("enqueue", "<agent-notification>\n<agent-id>a57</agent-id>\n<status>completed</status>\n"
                         "<summary>Agent \"Security review\" completed</summary>\n</agent-notification>")
    log.queue("remove")
    log.user("<ci-monitor-event>build 812 failed</ci-monitor-event>")
    log.text("The security reviewer found nothing.")
    # A message the developer really typed while the agent was busy stays a turn.
    log.queue("enqueue", "also check the migrations")
    log.queue("remove")
    log.text("Migrations checked.")
    log.typed('{"task_id": "mine"} is the payload shape I want for the queue')
    log.text("Noted.")
    turns = read_turns(log.write(tmp_path / "t.jsonl"))
    assert [t.user for t in turns] == ["start the review agents", "also check the migrations",
                                       '{"task_id": "mine"} is the payload shape I want for the queue']
    assert not any(t.user.lstrip().startswith(HARNESS_STARTS[1:]) for t in turns)


@pytest.mark.parametrize(("name", "typed"), [
    ("PackmindHub__context-evaluator__2d-f95bcf1603-0-full.jsonl", ["commit"]),  # + a queued task notice
    ("entireio__cli__f8-10e13fce67-0-full.jsonl", []),  # a slash command, then 8 agent notifications
])
def test_shared_checkpointed_sessions_yield_no_harness_record_as_a_turn(name: str, typed: list[str]) -> None:
    turns = read_turns(shared_transcript(name))
    assert [t.user for t in turns] == typed


def test_a_line_nested_deeper_than_the_parser_goes_is_skipped(tmp_path: Path) -> None:
    """A record nested thousands of arrays deep makes json raise RecursionError: skipped like any
    unreadable line, the turns around it still read (it stopped the machine's writer for good)."""
    from test_capture_helpers import Transcript

    transcript = Transcript(tmp_path / "s.jsonl", "0b5e7a10-3c2d-4e5f-8a9b-0123456789ab", tmp_path)
    transcript.prompt("Always use UTC in the database layer.")
    transcript.say("OK.")
    with transcript.path.open("a", encoding="utf-8") as handle:
        handle.write('{"type":"attachment","attachment":' + "[" * 100_000 + "]" * 100_000 + "}\n")
        handle.write('{"task_id":' + "[" * 100_000 + "]" * 100_000 + "}\n")
    transcript.prompt("Never log card numbers.")
    transcript.say("Understood.")
    assert [t.user for t in read_turns(transcript.path)] == ["Always use UTC in the database layer.",
                                                               "Never log card numbers."]


# --------------------------------------------------------------------------------------------
# Gemini CLI chat recordings (gitmem.writer.gemini_chat)
# --------------------------------------------------------------------------------------------


class GeminiRecording:
    """A Gemini CLI chat recording (`session-*.jsonl`) in the shapes its ChatRecordingService
    writes (0.61): the session's metadata, then each message on a line of its own followed by a
    `$set` of `lastUpdated`, a message again in full when it changes, `$set` of the whole list
    when the CLI sets its history itself."""

    def __init__(self, path: Path) -> None:
        self.path, self.made = path, 0
        self.line({"sessionId": "7a7a7a7a-0000-4000-8000-000000000001", "projectHash": "ab" * 32,
                   "startTime": "2026-12-05T11:00:00.000Z", "lastUpdated": "2026-12-05T11:00:00.000Z", "kind": "main"})

    def line(self, record: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")

    def message(self, kind: str, content: Any, **extra: Any) -> dict[str, Any]:
        self.made += 1
        record = {"id": f"5e55{self.made:04d}-0000-4000-8000-000000000000",
                  "timestamp": f"2026-12-05T11:{self.made:02d}:00.000Z", "type": kind, "content": content, **extra}
        self.line(record)
        self.line({"$set": {"lastUpdated": record["timestamp"]}})
        return record

    def prompt(self, sent: list[str], shown: str | None) -> dict[str, Any]:
        """What sendMessageStream records: the parts sent, and what the CLI displays where it differs."""
        return self.message("user", [{"text": text} for text in sent],
                            **({"displayContent": [{"text": shown}]} if shown is not None else {}))

    def reply(self, text: str, **extra: Any) -> dict[str, Any]:
        return self.message("gemini", text, thoughts=[], tokens={"input": 900, "output": 12, "total": 912},
                            model="gemini-2.5-pro", **extra)


HOOK_CONTEXT = "<hook_context><gitmem-context>\nAbout this request: …\n</gitmem-context></hook_context>"


def test_what_the_gemini_cli_sends_itself_to_keep_a_turn_going_is_no_turn(tmp_path: Path) -> None:
    """Its next-speaker check ("Please continue.") and its loop recovery are recorded as `user`
    messages displaying the developer's prompt: the turn is the prompt's, with every reply; a
    developer who types "Please continue." is still heard. An AfterAgent hook's reason to go on
    is not told from the prompt rewound and sent again with another expansion: a turn of its own."""
    from gitmem.writer.gemini_chat import is_chat
    from gitmem.writer.gemini_chat import last_turn_index as gemini_last
    from gitmem.writer.gemini_chat import read_turns as gemini_turns

    chat = GeminiRecording(tmp_path / "session-2026-12-05T11-00-7a7a7a7a.jsonl")
    rule = "Never use floats for money in this repo; always store integer cents."
    chat.prompt([rule, HOOK_CONTEXT], rule)
    chat.reply("Understood.")
    chat.prompt(["Please continue."], rule)  # the next-speaker check said the model goes on
    chat.reply("I also converted the totals.")
    chat.prompt(["System: Potential loop detected. Details: Repetitive tool calls. Please take a step back."], rule)
    chat.reply("Stepping back: the totals are done.")
    chat.prompt(["Run the linter before you stop.", HOOK_CONTEXT], rule)  # an AfterAgent hook's deny
    chat.reply("Linter is clean.")
    chat.prompt(["Please continue.", HOOK_CONTEXT], "Please continue.")  # typed: the CLI displays it
    chat.reply("Continuing with the invoices.")
    chat.prompt(["now the invoices"], None)  # no hook context: nothing else displayed
    chat.reply("Invoices done.")
    chat.prompt(["Please continue."], "now the invoices")
    chat.reply("And their tests.")
    chat.prompt(["Please continue."], None)  # a caller that records nothing displayed (ACP)
    chat.reply("All done.")
    assert is_chat(chat.path)
    turns = gemini_turns(chat.path)
    assert [(t.index, t.user, t.assistant) for t in turns] == [
        (0, rule, "Understood.\n\nI also converted the totals.\n\nStepping back: the totals are done."),
        (1, rule, "Linter is clean."),
        (2, "Please continue.", "Continuing with the invoices."),
        (3, "now the invoices", "Invoices done.\n\nAnd their tests.\n\nAll done."),
    ]
    assert gemini_last(chat.path) == 3
    assert [t.index for t in gemini_turns(chat.path, start=3)] == [3]
    # a prompt rewound and sent again, its file expanded otherwise: the developer's words stay
    again = GeminiRecording(tmp_path / "session-2026-12-05T11-00-7a7a7a7c.jsonl")
    again.prompt(["hello"], None)
    again.reply("Hi.")
    shown = "never store money as float in @db.py, use integer cents"
    first = again.prompt([shown.replace("@db.py", "@src/db.py"), "--- Content from referenced files ---"], shown)
    again.line({"$rewindTo": first["id"]})
    again.prompt([shown.replace("@db.py", "@app/db.py"), "--- Content from referenced files ---"], shown)
    again.reply("Understood: integer cents.")
    assert [(t.index, t.user) for t in gemini_turns(again.path)][-1][1] == shown


def test_a_tool_response_first_seen_in_a_gemini_history_update_does_not_end_the_turn(tmp_path: Path) -> None:
    """The CLI setting its history mid-turn (masking tool output, context management) can bring in
    a tool call's response that no line recorded: the model's reply after it is still the turn's."""
    from gitmem.writer.gemini_chat import read_turns as gemini_turns

    chat = GeminiRecording(tmp_path / "session-2026-12-05T11-00-7a7a7a7b.jsonl")
    prompt = chat.prompt(["Always run the migrations with --dry-run first."], None)
    call = chat.reply("", toolCalls=[{"id": "run_shell_command-1", "name": "run_shell_command",
                                      "args": {"command": "make migrate DRY_RUN=1"}, "status": "success"}])
    response = {"id": "5e55fr01-0000-4000-8000-000000000000", "timestamp": "2026-12-05T11:02:30.000Z", "type": "user",
                "content": [{"functionResponse": {"id": "run_shell_command-1", "name": "run_shell_command",
                                                  "response": {"output": "3 migrations (dry run)"}}}]}
    chat.line({"$set": {"messages": [prompt, call, response], "lastUpdated": "2026-12-05T11:02:30.000Z"}})
    chat.reply("Done: I ran the migrations with --dry-run.")
    chat.prompt(["thanks"], None)
    assert [(t.index, t.user, t.assistant) for t in gemini_turns(chat.path)] == [
        (0, "Always run the migrations with --dry-run first.", "Done: I ran the migrations with --dry-run."),
        (1, "thanks", ""),
    ]

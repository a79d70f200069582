"""The safety gate: nothing that reads like an instruction to the agent, or hides text, is stored.

Memory is read back into every future session, so a stored entry is a standing instruction to
every agent on the project. A candidate whose text tries to override the agent's instructions,
or carries invisible or bidirectional-control characters (which can hide or reorder what a
reviewer sees), goes to `.git/gitmem/quarantine.jsonl` with the reasons instead of the store;
`gitmem quarantine` lists them. Deterministic, no model; the patterns are data (PATTERNS).

The patterns are phrases, not words: "ignore the generated files" or "the build system" are
ordinary constraints and pass; "ignore previous instructions" or "you are now" do not.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitmem.base import fastjson, files
from gitmem.base.paths import RepoPaths

QUARANTINE_FILE = "quarantine.jsonl"

# (name, pattern) — matched case-insensitively against the candidate's body and anchor.
PATTERNS: tuple[tuple[str, str], ...] = (
    ("ignore previous instructions",
     r"\bignore\s+(?:all\s+|any\s+|the\s+|your\s+|every\s+)*(?:previous|prior|above|earlier|preceding|"
     r"former|foregoing|original)\s+(?:instructions?|prompts?|rules|messages|context|directions|"
     r"directives|guidelines|commands)"),
    ("ignore your instructions",
     r"\bignore\s+(?:all\s+)?(?:your|the\s+system(?:'s)?|the\s+developer(?:'s)?)\s+(?:instructions|rules|"
     r"guidelines|programming|directives|prompt)"),
    ("disregard instructions",
     r"\bdisregard\s+(?:all\s+|any\s+|the\s+|your\s+|of\s+)*(?:previous\s+|prior\s+|above\s+|earlier\s+|"
     r"preceding\s+|system\s+|original\s+)?(?:instructions?|prompts?|rules|guidelines|directives|programming|"
     r"messages|context|everything\s+(?:above|before))"),
    ("forget instructions",
     r"\bforget\s+(?:all\s+|everything\s+|about\s+)*(?:(?:your|the|previous|prior|above|earlier)\s+"
     r"(?:previous\s+|prior\s+)?(?:instructions|rules|guidelines|prompt|programming|context)"
     r"|(?:that\s+|what\s+)?you\s+(?:were|have\s+been)\s+told)"),
    ("override instructions",
     r"\b(?:overrides?|overrules?)\s+(?:all\s+|any\s+)?(?:your|the\s+system|previous|prior|"
     r"the\s+previous)\s+(?:instructions|rules|guidelines|prompt|programming|directives|safety)"),
    ("you are now", r"\byou\s+are\s+now\b"),
    ("from now on you are", r"\bfrom\s+now\s+on,?\s+you\s+(?:are|will\s+be|shall\s+be|act\s+as|will\s+act)\b"),
    ("system prompt", r"\bsystem\s+prompt\b"),
    ("new instructions", r"\b(?:new|updated|revised|real|true|actual|hidden|secret)\s+(?:system\s+)?instructions\b"),
    ("role play", r"\b(?:pretend|imagine)\s+(?:that\s+)?you\s+(?:are|have\s+no)\b"),
    ("act as unrestricted",
     r"\bact\s+as\s+(?:an?\s+)?(?:unrestricted|unfiltered|uncensored|jailbroken|evil|rogue|different)\b"),
    ("jailbreak", r"\bjail\s*break"),
    ("do anything now", r"\bdo\s+anything\s+now\b"),
    ("privileged mode",
     r"\b(?:enable|enter|activate|switch\s+(?:in)?to)\s+(?:the\s+)?(?:developer|god|sudo|dan|unrestricted|jailbreak)"
     r"\s+mode\b|\b(?:developer|god|dan)\s+mode\s+(?:is\s+)?(?:enabled|activated|on)\b"),
    ("no restrictions",
     r"\b(?:without|no|free\s+of|free\s+from)\s+(?:any\s+)?(?:ethical\s+|safety\s+|content\s+)?"
     r"(?:restrictions|limitations|filters|guardrails|censorship)\s*(?:or|and|,|whatsoever)"),
    ("bypass safeguards",
     r"\b(?:bypass|circumvent|disable|turn\s+off)\s+(?:your\s+|all\s+(?:your\s+)?|the\s+assistant's\s+)"
     r"(?:safety|safeguards|guardrails|filters|restrictions|content\s+polic(?:y|ies))"),
    ("reveal prompt",
     r"\b(?:reveal|print|show|repeat|output|leak)\s+(?:me\s+)?(?:your|the)\s+(?:hidden\s+|initial\s+|original\s+)?"
     r"(?:instructions|prompt|system\s+message)"),
    ("chat-template role marker",
     r"<\|(?:im_start|im_end|system|user|assistant|endoftext|start_header_id|end_header_id|eot_id)\|>"
     r"|\[/?INST\]|<</?SYS>>|<start_of_turn>|<end_of_turn>"),
    ("role tag", r"</?\s*(?:system|assistant|instructions?|sys)\s*>"),
    ("role prefix", r"(?:^|\n)\s*(?:system|assistant|###\s*(?:system|instruction))\s*:"),
    ("agent-directed command",
     r"\b(?:assistant|ai|claude|agent|model|llm)\s*[,:]\s*(?:ignore|disregard|forget|override)\b"),
)

_COMPILED: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE)) for name, pattern in PATTERNS
)

# Characters that are invisible or reorder text, beyond Unicode category Cf (which already
# covers zero-width characters, bidi embeddings/overrides/isolates/marks, word joiners,
# the BOM, soft hyphens and tag characters U+E0000–E007F).
_INVISIBLE_EXTRA: frozenset[int] = frozenset({
    0x115F, 0x1160, 0x3164, 0xFFA0,  # Hangul fillers (render as nothing)
    0x034F,                          # combining grapheme joiner
    0x2800,                          # braille blank
})
_ALLOWED_CONTROLS = frozenset("\t\n\r")


@dataclass(frozen=True, slots=True)
class Finding:
    reason: str    # e.g. "instruction override: ignore previous instructions"
    excerpt: str   # the matched text, or the character's code point and name


def _char_name(ch: str) -> str:
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed')}"


def invisible(text: str) -> list[str]:
    """Code points and names of every invisible, bidi-control or control character in `text`."""
    found: list[str] = []
    seen: set[str] = set()
    for ch in text:
        if ch in seen:
            continue
        cp = ord(ch)
        category = unicodedata.category(ch)
        hidden = (
            category == "Cf"
            or cp in _INVISIBLE_EXTRA
            or 0xE0100 <= cp <= 0xE01EF                        # variation selectors supplement
            or (category == "Cc" and ch not in _ALLOWED_CONTROLS)
            or category in ("Zl", "Zp")                       # line/paragraph separators
        )
        if hidden:
            seen.add(ch)
            found.append(_char_name(ch))
    return found


def check(text: str) -> list[Finding]:
    """Everything the gate objects to in `text`; empty when it may be stored."""
    findings: list[Finding] = []
    for name in invisible(text):
        kind = "bidirectional control" if _is_bidi_control(name) else "invisible character"
        findings.append(Finding(f"{kind}: {name}", name))
    folded = unicodedata.normalize("NFKC", text)
    for name, pattern in _COMPILED:
        match = pattern.search(folded)
        if match:
            findings.append(Finding(f"instruction override: {name}", match.group(0).strip()))
    return findings


def _is_bidi_control(name: str) -> bool:
    cp = int(name[2:].split()[0], 16)
    return 0x202A <= cp <= 0x202E or 0x2066 <= cp <= 0x2069 or cp in (0x200E, 0x200F, 0x061C)


def check_candidate(candidate: Any) -> list[Finding]:
    """The gate for a judge Candidate (anything with .body and .anchor)."""
    findings = check(getattr(candidate, "body", "") or "")
    anchor = getattr(candidate, "anchor", None)
    if anchor:
        findings += [Finding(f"anchor: {f.reason}", f.excerpt) for f in check(anchor)]
    return findings


# -- the quarantine log ------------------------------------------------------------------------

def quarantine_path(repo: RepoPaths) -> Path:
    return repo.state / QUARANTINE_FILE


def quarantine(repo: RepoPaths, candidate: Any, findings: list[Finding], *, session: str | None,
               turn: int | None) -> dict[str, Any]:
    """Append one quarantined candidate with its reasons (one JSON line, one write)."""
    record = {
        "time": files.utc_stamp(),
        "session": session,
        "turn": turn,
        "kind": getattr(candidate, "kind", None),
        "source": getattr(candidate, "source", None),
        "anchor": getattr(candidate, "anchor", None),
        "body": getattr(candidate, "body", ""),
        "reasons": [f.reason for f in findings],
        "matched": [f.excerpt for f in findings],
    }
    files.append_line(quarantine_path(repo), json.dumps(record, ensure_ascii=True))
    return record


def quarantined(repo: RepoPaths) -> Iterator[dict[str, Any]]:
    """Every quarantined candidate, oldest first; unreadable lines are skipped."""
    yield from fastjson.read_rows(str(quarantine_path(repo)))


def visible(text: str) -> str:
    """`text` with every hidden character shown as <U+XXXX>, for people to read."""
    out = []
    for ch in text:
        if invisible(ch):
            out.append(f"<U+{ord(ch):04X}>")
        else:
            out.append(ch)
    return "".join(out)

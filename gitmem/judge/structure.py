"""What the shape of a text says: markup that imitates the harness, and entries out of format.

A developer's standing rule is prose. Text that opens or closes the context wrapper gitmem
delivers in (``</gitmem-context>``), that imitates what the harness puts around a model
(``<system-reminder>``, ``<system>``, chat-template role markers such as ``<|im_start|>``,
``[INST]``, ``<start_of_turn>``), that hides words in an HTML comment (invisible when the
Markdown is rendered), or that starts a line as a role (``SYSTEM:``, ``assistant:``,
``### Instruction:``) is written to be read by a model as something other than a rule.

Markup inside backticks is a reference to code (``keep the `<!-- gitmem:begin -->` marker``),
not markup: delivery escapes it, so it can never act as a tag, and it is not reported here.

A few phrases need no model to recognise (``ignore all previous instructions``, ``DAN mode
enabled``): they are checked here too, on the canonical text (gitmem.judge.normalise), so
the gate still holds where the learned detector cannot run (the delivery compile step, an
installation without the writer's model). Everything subtler is the detector's.

Standard library only.
"""

from __future__ import annotations

import re

ID_FORMAT = re.compile(r"\d{8}-[0-9a-f]{8}")
MAX_BODY = 1000          # characters; the writer's bodies are sentences (longest in the corpus: ~300)
MAX_ANCHOR = 300         # path plus qualified symbol
MAX_REASON = 500         # a revocation note
# What the learned detector reads of a text, in canonical form (NFKC, which turns "…" into three
# characters and some single characters into a dozen). A text longer than that once normalised
# is refused: its tail would be delivered without the detector having read it.
MAX_CANONICAL = 1200

# Fenced blocks and inline code spans (one or more backticks, closed by the same number). A
# fence never closed is no code: it would hide everything after it from these checks.
# A fenced block, or an inline code span, which ends its paragraph's lines: never across a blank
# line (Markdown ends the paragraph there, and what follows is prose, not code).
_CODE = re.compile(r"```.*?```|(`+)(?!`)(?:(?!\n[ \t]*\n).)+?(?<!`)\1(?!`)", re.DOTALL)

_HARNESS_NAMES = (
    r"gitmem[-_:]?[\w-]*|system(?:[-_ ]?(?:reminder|message|prompt|notice|instructions?|note|override))?"
    r"|assistant|user|human|developer|instructions?|sys|admin|root|important|policy|rules|context"
    r"|tool[-_]?(?:results?|use|calls?|outputs?|response)|function[-_]?(?:results?|calls?)"
    r"|command[-_][\w-]+|local[-_]command[-_][\w-]+|agent[-_]notification|antml:[\w-]+|im_start|im_end"
    r"|conversation|new[-_]conversation|session|prompt|memory|thinking|document|search[-_]results?"
)
MARKUP: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("harness tag", re.compile(rf"<\s*/?\s*(?:{_HARNESS_NAMES})(?:\s[^<>]*)?/?\s*>", re.IGNORECASE)),
    ("HTML comment", re.compile(r"<!--.*?(?:-->|$)", re.DOTALL)),
    ("chat-template marker", re.compile(
        r"<\|[\w .-]{1,40}\|>|\[/?INST\]|<</?SYS>>|</?start_of_turn>|</?end_of_turn>|<\s*/?\s*(?:bos|eos|s)\s*>"
        r"|\[/?(?:SYSTEM|ASSISTANT|USER|ADMIN|DEVELOPER)(?:[ _](?:MESSAGE|NOTE|NOTICE|PROMPT|OVERRIDE))?\]",
        re.IGNORECASE)),
    ("role prefix", re.compile(
        r"(?:^|\n|(?<=[.!?;])\s+)[ \t>*_#-]*(?:system|assistant|developer(?:\s+message)?|human|ai)"
        r"[*_]*[ \t]*(?:\([^)\n]{0,30}\))?[ \t]*[*_]*:(?!:)"
        r"|#{2,}\s*(?:system|instructions?|response|assistant|user)\b", re.IGNORECASE)),
    ("system banner", re.compile(
        r"\b(?:SYSTEM|ADMIN|DEVELOPER)\s*(?::|NOTICE|OVERRIDE|MESSAGE|PROMPT|UPDATE|ALERT|INSTRUCTION)")),
)

# Phrases no standing rule uses, checked on the canonical text.
_PHRASES = (
    ("ignore previous instructions",
     r"\b(?:ignore|disregard|forget|override|bypass|skip)\s+(?:all\s+|any\s+|of\s+)?(?:the\s+|your\s+|my\s+|these\s+|those\s+)?"
     r"(?:previous|prior|above|earlier|preceding|foregoing|original|initial|system|safety)\s+"
     r"(?:instructions?|prompts?|requests?|rules|messages?|directions|directives|guidelines|commands|programming)\b"
     r"(?!\s+(?:about|on|for|regarding|concerning|in|from|to|that|which|at|under|of)\b)"),
    ("do anything now", r"\bdo\s+anything\s+now\b"),
    ("new instructions", r"\byour\s+(?:new|real|true|actual|hidden|secret|updated)\s+(?:system\s+)?instructions\b"
                         r"|^\s*new\s+(?:system\s+)?instructions\s*:"),
    ("unrestricted persona",
     r"\bact\s+as\s+(?:an?\s+)?(?:unrestricted|unfiltered|uncensored|jailbroken|evil|rogue)\b"
     r"|\byou\s+are\s+now\s+(?:root|admin|an?\s+(?:administrator|superuser|unrestricted|unfiltered|uncensored|"
     r"jailbroken)|unrestricted|unfiltered|uncensored|jailbroken|dan)\b"),
    ("no restrictions",
     r"\b(?:without|no|free\s+of)\s+(?:any\s+)?(?:ethical\s+|safety\s+|content\s+)?"
     r"(?:restrictions|limitations|filters|guardrails|censorship)\s*(?:or|and|,|whatsoever)"),
    ("reveal prompt",
     r"\b(?:reveal|print|show|repeat|output|leak|dump)\s+(?:me\s+)?your\s+(?:hidden\s+|initial\s+|original\s+|system\s+)?"
     r"(?:instructions|prompt|system\s+message)"),
    ("privileged mode",
     r"\b(?:developer|god|dan|jailbreak|unrestricted|uncensored)\s+mode\s+(?:is\s+)?(?:now\s+)?(?:enabled|activated|on)\b"
     r"|\b(?:enable|enter|activate)\s+(?:the\s+)?(?:god|dan|jailbreak|unrestricted|uncensored)\s+mode\b"),
    ("disable your safeguards",  # the model's own safeguards ("your"): a project's checks are "the"/"our"
     r"\b(?:bypass|disable|turn\s+off|switch\s+off|circumvent|evade|get\s+around|ignore)\s+(?:all\s+|any\s+)?"
     r"(?:of\s+)?your\s+(?:own\s+)?(?:safety|content|security|ethical)\s+"
     r"(?:filters?|guardrails|guidelines|checks|measures|rules|restrictions|protocols|settings|training)\b"),
    ("free from constraints",
     r"\b(?:free|freed|released|liberated)\s+from\s+(?:all\s+|any\s+|your\s+)*"
     r"(?:constraints|restrictions|rules|limitations|guidelines|ethic)"),
    # The developer's authority handed to text the agent reads (a page, a tool's output, a folder of
    # files): whoever writes there then speaks as the developer. A project's own precedence ("prod.yaml
    # takes precedence over defaults.yaml") names no instructions given to the agent.
    ("authority handed to other text",
     r"\b(?:takes?|have|has)\s+precedence\s+over\s+(?:anything|everything|all)\s+(?:else\s+)?"
     r"(?:(?:that\s+)?you(?:'ve|\s+have|\s+were|\s+are)?\s+(?:been\s+)?(?:told|instructed|given)|in\s+your\s+instructions)"
     r"|\b(?:instructions?|notes?|messages?|comments?|requests?|commands?)\s+(?:that\s+(?:are|is)\s+)?"
     r"(?:addressed|directed|meant|written|aimed)\s+(?:to|for|at)\s+(?:you|the\s+assistant|the\s+ai|the\s+agent|"
     r"the\s+model|ai\s+(?:agents?|assistants?)|assistants?|agents?)\b[^.]{0,80}?\b(?:follow|obey|execute|do|carry\s+out)\b"
     r"|\b(?:follow|obey|execute|carry\s+out)\s+(?:any|all|the)?\s*(?:instructions?|notes?|commands?|requests?)\s+"
     r"(?:addressed|directed|meant|written|aimed)\s+(?:to|for|at)\s+(?:you|the\s+assistant|the\s+ai|the\s+agent|the\s+model)\b"
     r"|\btreat\s+(?:any\s+|all\s+|the\s+)?(?:instructions?|text|content|comments?|notes?|requests?)\s+"
     r"(?:in|inside|from|found\s+in|within)\b[^.]{0,80}?\bas\s+(?:if\s+(?:they|it)\s+came\s+from|coming\s+from|"
     r"(?:instructions\s+)?from|written\s+by|said\s+by)\s+(?:me|the\s+developer|the\s+user|your\s+(?:developer|user))\b"),
)
PHRASES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((n, re.compile(p, re.IGNORECASE)) for n, p in _PHRASES)


def code_spans(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _CODE.finditer(text)]


def outside_code(text: str) -> str:
    """`text` with fenced blocks and inline code blanked out (offsets kept)."""
    out = list(text)
    for start, end in code_spans(text):
        for i in range(start, end):
            if out[i] != "\n":
                out[i] = " "
    return "".join(out)


def markup(text: str) -> list[tuple[str, str]]:
    """(what, the text that matched) for markup imitating the harness, outside code spans (a YAML
    snippet's `system:` key is code; what a fenced block asks of a model is the detector's)."""
    prose = outside_code(text)
    found: list[tuple[str, str]] = []
    for name, pattern in MARKUP:
        for match in pattern.finditer(prose):
            hit = " ".join(match.group(0).split())[:80]
            if name == "role prefix" and not hit.rstrip(":").strip(" >*_#-").strip():
                continue
            if (name, hit) not in found:
                found.append((name, hit))
    return found


def phrases(canonical_text: str) -> list[tuple[str, str]]:
    """(phrase name, the words) for the fixed phrases, in the canonical text."""
    prose = outside_code(canonical_text)
    return [(name, " ".join(m.group(0).split())) for name, pattern in PHRASES if (m := pattern.search(prose))]


SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def id_problem(value: object, *, strict: bool = True) -> str | None:
    """Why `value` is not an entry id. Strict: gitmem's own format, YYYYMMDD-xxxxxxxx (what
    `gitmem check` and `gitmem add` require). Not strict: letters, digits, '.', '_' and '-' only
    (the delivery compile step: nothing in such an id can break a line or form markup)."""
    pattern = ID_FORMAT if strict else SAFE_ID
    if not isinstance(value, str) or not pattern.fullmatch(value):
        if strict:
            return f"id {value!r} is not of the form YYYYMMDD-xxxxxxxx (8 digits, a dash, 8 lower-case hex digits)"
        return f"id {value!r} holds characters other than letters, digits, '.', '_' and '-'"
    return None


FUTURE_SLACK_S = 86_400  # clocks disagree; a stamp further ahead was written, not recorded


def future_problem(field: str, value: object, now: float) -> str | None:
    """Why a recorded time is not one (it lies in the future): delivery ranks entries by when they
    were recorded and announces withdrawals for days after them, so a crafted stamp would push
    every other rule out of the budget, or be announced for good."""
    from gitmem.base.files import utc_seconds

    seconds = utc_seconds(value) if isinstance(value, str) else None  # a malformed one: the entry's own check says so
    if seconds is not None and seconds > now + FUTURE_SLACK_S:
        return f"{field} {value!r} is in the future"
    return None


def length_problem(field: str, value: object, limit: int) -> str | None:
    if isinstance(value, str) and len(value) > limit:
        return f"{field} is {len(value)} characters long (at most {limit})"
    return None


def has_newline_outside_text(value: object) -> bool:
    return isinstance(value, str) and any(ch in value for ch in "\r\n")

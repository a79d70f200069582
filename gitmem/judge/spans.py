"""Candidate spans: the sentences and clauses of a message that could become an entry's body.

Stdlib only. A span is a verbatim slice ``text[start:end]`` of the message, so a body
cut from it is always a copy of what the person typed. Pasted material is not a
candidate: fenced code, quoted lines (``>``), stack traces, log lines, diff hunks and
indented code are skipped, and spans inside them are marked so features can say so.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

# Messages are bounded: a huge paste must not make a judgement slow.
MAX_CHARS = 6_000
MAX_SPANS = 48
MAX_SPAN_CHARS = 600

_FENCE = re.compile(r"^\s*(```|~~~)")
_LOG_LINE = re.compile(
    r"""^\s*(?:
        Traceback\b | File\ ".*",\ line\ \d+ | at\ [\w.$<>]+\(.*\)\s*$ | \.\.\.\ \d+\ more
      | [\w.]*(?:Error|Exception|Panic)(?::|\b\s*$) | panic: | goroutine\ \d+ | npm\ (?:ERR|WARN)!
      | E\s{2,} | \$\ \S | >>>\ | \#\ \d+\ 0x | \d{4}-\d\d-\d\d[T\ ]\d\d:\d\d | \d\d:\d\d:\d\d[.,]?\d*\s
      | \[\s*(?:INFO|WARN|WARNING|ERROR|DEBUG|TRACE|FATAL|CRITICAL)\s*\] | (?:INFO|WARN|WARNING|ERROR|DEBUG|TRACE|FATAL|CRITICAL)[\s:\]]
      | [+-]{3}\ [ab/] | @@\ -\d | diff\ --git | (?:at\ )?[\w/.-]+\.\w+:\d+(?::\d+)?[:\s]
      | \w+@\w+:.*\$ | PS\ [A-Z]:\\ | \d+\ (?:passed|failed|error) | \#{1,6}\ \S
    )""",
    re.VERBOSE,
)
_SPLIT = re.compile(
    r"""(?:
        (?<=[.!?])["')\]]*\s+(?=\S)      # sentence end followed by whitespace
      | (?<=[!?])(?=[A-Za-z])            # "done!Also" in a hurried message
    )""",
    re.VERBOSE,
)
_ABBREV = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|Mr|Mrs|Dr|No|fig|e\.t\.c)\.|\b[A-Za-z]\.)$", re.I)
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d+[.)]|\(\w\))\s+")
_WORD = re.compile(r"[A-Za-z]{2,}")


@dataclass(frozen=True, slots=True)
class Span:
    text: str
    start: int
    end: int
    line: int  # index of the line its paragraph starts on (0-based)
    pasted: bool = False  # inside quoted/pasted material (not a candidate, kept for context)


# A short line announcing pasted material ("CHANGELOG snippet", "the review said:").
_PASTE_HEADER = re.compile(
    r"(?i)\b(?:snippet|output|logs?|changelog|release notes|traceback|stack ?trace|errors?|ticket|issue|"
    r"comments?|review(?:er)?|diff|readme|docs|documentation|message|says|said|wrote|writes|reads|pasted?|"
    r"copied|excerpt|runbook|wiki|spec|guidelines|jira|slack|email|thread|chat|transcript|article)\b"
)
# Headers that say outright that what follows is someone else's text: only these may stand a blank
# line above it ("Error handling:" or "my review comments:" may head the developer's own rules).
_PASTED_OUTRIGHT = re.compile(r"(?i)\b(?:pasted?|copied|excerpt|forwarded|thread|transcript|says|said|wrote|writes)\b")
_LIST_LINE = re.compile(r"^\s*(?:[-*•+]|\d+[.)]|#{1,6})\s+")
_OWN_WORDS = re.compile(
    r"(?i)^\s*(?:so|but|and|anyway|also|ok|okay|btw|can|could|would|please|pls|does|do|did|is|are|what|why|how|"
    r"should|i|i'm|im|we|we're|our|my|any|thoughts|now|then|fix|thanks)\b"
)


def _mark_pasted_blocks(lines: list[str], kinds: list[str]) -> None:
    """Lines under a paste header ("changelog snippet", "the ticket says:") are quoted material,
    up to a blank line or a line in the person's own voice. A header ending in a colon that says
    outright the text is someone else's may stand a blank line above it ("pasted from the wiki:",
    blank line, the page)."""
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        header = (kinds[i] == "prose" and 0 < len(line.split()) <= 10 and _PASTE_HEADER.search(line)
                  and (line.endswith(":") or not re.search(r"[.?!]$", line)))
        if not header:
            i += 1
            continue
        j = i + 1
        while line.endswith(":") and _PASTED_OUTRIGHT.search(line) and j < len(lines) and not lines[j].strip():
            j += 1
        while j < len(lines) and lines[j].strip():
            if kinds[j] == "prose":
                if _OWN_WORDS.match(lines[j]) and not _LIST_LINE.match(lines[j]):
                    break
                kinds[j] = "quote"
            j += 1
        i = j


def _line_kinds(lines: list[str]) -> list[str]:
    """'prose', 'code' (fenced or indented), 'quote' (> ...), or 'log' for each line."""
    kinds: list[str] = []
    in_fence = False
    for line in lines:
        if _FENCE.match(line):
            kinds.append("code")
            in_fence = not in_fence
            continue
        if in_fence:
            kinds.append("code")
        elif line.lstrip().startswith(">"):
            kinds.append("quote")
        elif _LOG_LINE.match(line):
            kinds.append("log")
        elif line.strip() and ((line.startswith(("    ", "\t")) and _code_like(line)) or _symbol_heavy(line)):
            kinds.append("code")
        else:
            kinds.append("prose")
    _mark_pasted_blocks(lines, kinds)
    return kinds


_CODE_LIKE = re.compile(
    r"[{}();=<>\[\]]|^\w+\s*:\s*\S|^(?:def|class|return|import|from|if|for|func|fn|let|const|var)\b")


def _code_like(line: str) -> bool:
    s = line.strip()
    return bool(_CODE_LIKE.search(s))


def _symbol_heavy(line: str) -> bool:
    s = line.strip()
    if len(s) < 12:
        return False
    letters = sum(c.isalpha() or c.isspace() for c in s)
    return letters / len(s) < 0.6


def lines_with_offsets(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    pos = 0
    for line in text.split("\n"):
        out.append((pos, line))
        pos += len(line) + 1
    return out


def _sentences(line: str, base: int) -> list[tuple[int, int]]:
    """[start, end) ranges of the sentences/clauses of one prose line, offsets from ``base``."""
    ranges: list[tuple[int, int]] = []
    start = 0
    for m in _SPLIT.finditer(line):
        head = line[start : m.start()]
        if m.group(0).strip() == "" and _ABBREV.search(head.rstrip()):
            continue  # "e.g. " is not the end of a sentence
        ranges.append((start, m.start()))
        start = m.end()
    ranges.append((start, len(line)))
    out = []
    for s, e in ranges:
        piece = line[s:e]
        lead = _LIST_MARK.match(piece)
        if lead:
            s += lead.end()
        while s < e and line[s].isspace():
            s += 1
        while e > s and line[e - 1].isspace():
            e -= 1
        if e > s:
            out.append((base + s, base + e))
    return out


# A line hard-wrapped by the person's editor or terminal: long, no sentence end, and the next line
# reads on ("... you shouldn't concern" / "yourself with its contents").
WRAP_MIN_CHARS = 60
_ENDS_SENTENCE = re.compile(r"[.!?:;]['\")\]]*$")
_READS_ON_AFTER = re.compile(
    r"(?i)\b(?:the|a|an|to|of|in|on|at|for|with|by|from|as|and|or|but|is|are|be|that|this|your|our|my)$")


def _wraps_into(line: str, following: str) -> bool:
    head, tail = line.rstrip(), following.lstrip()
    if len(head) < WRAP_MIN_CHARS or not tail or _ENDS_SENTENCE.search(head) or _LIST_LINE.match(following):
        return False
    return not tail[0].isupper() or bool(_READS_ON_AFTER.search(head))


def _paragraphs(rows: list[tuple[int, str]], kinds: list[str]) -> Iterator[tuple[int, int, int]]:
    """(first line, offset, end) of each run of prose lines joined by hard wraps."""
    i = 0
    while i < len(rows):
        j = i
        if kinds[i] == "prose":
            while j + 1 < len(rows) and kinds[j + 1] == "prose" and _wraps_into(rows[j][1], rows[j + 1][1]):
                j += 1
        yield i, rows[i][0], rows[j][0] + len(rows[j][1])
        i = j + 1


def all_spans(text: str) -> list[Span]:
    """Every sentence-like piece of ``text``, pasted ones included (marked)."""
    text = text[:MAX_CHARS]
    rows = lines_with_offsets(text)
    kinds = _line_kinds([line for _, line in rows])
    spans: list[Span] = []
    for i, offset, end in _paragraphs(rows, kinds):
        line = text[offset:end]
        if not line.strip():
            continue
        if kinds[i] != "prose":
            spans.append(Span(line.strip(), offset + len(line) - len(line.lstrip()),
                              offset + len(line.rstrip()), i, pasted=True))
            continue
        for s, e in _sentences(line, offset):
            while e - s > MAX_SPAN_CHARS:  # a run-on without punctuation: cut at a comma or space
                cut = text.rfind(", ", s, s + MAX_SPAN_CHARS)
                cut = cut + 1 if cut > s else text.rfind(" ", s, s + MAX_SPAN_CHARS)
                if cut <= s:
                    cut = s + MAX_SPAN_CHARS
                spans.append(Span(text[s:cut].strip(), s, s + len(text[s:cut].rstrip()), i))
                s = cut
                while s < e and text[s].isspace():
                    s += 1
            if e > s:
                spans.append(Span(text[s:e], s, e, i))
    return spans


def candidate_spans(text: str) -> list[Span]:
    """The spans that may become bodies: prose with at least two words, in order."""
    out = [s for s in all_spans(text) if not s.pasted and len(_WORD.findall(s.text)) >= 2]
    return out[:MAX_SPANS]


def model_text(text: str, spans: list[Span]) -> tuple[str, list[tuple[int, int]]]:
    """The text the encoder reads: the candidate spans in order, pasted parts elided.

    Returns the text and each span's [start, end) in it. Keeping the spans' order and
    neighbours gives every span its left context in one causal forward pass.
    """
    parts: list[str] = []
    where: list[tuple[int, int]] = []
    length = 0
    prev_end = 0
    for span in spans:
        sep = text[prev_end : span.start] if parts else ""
        if parts and _has_paste(text, prev_end, span.start):
            sep = "\n[pasted text]\n"
        parts.append(sep)
        length += len(sep)
        where.append((length, length + len(span.text)))
        parts.append(span.text)
        length += len(span.text)
        prev_end = span.end
    return "".join(parts), where


def _has_paste(text: str, start: int, end: int) -> bool:
    gap = text[start:end]
    return gap.count("\n") >= 2 or "```" in gap or bool(re.search(r"\n\s*>", gap)) or len(gap) > 40


# -- one statement over two sentences ---------------------------------------------------------

_CONTINUES = re.compile(
    r"(?i)^(?:it|it's|its|that|that's|thats|this|these|those|they|they're|so|because|since|which|otherwise|"
    r"else|hence|same|all of (?:it|them))\b"
)


def continues(text: str, first: Span, second: Span) -> bool:
    """Whether ``second`` carries on the statement of ``first`` (both judged standing):
    adjacent, and it refers back ("It's semver now"), is a short tail, shares its subject, or
    states the rule of the change ``first`` announces ("We're moving off axios. From now on use
    fetch.")."""
    from gitmem.judge.bodies import announces_change
    from gitmem.judge.words import subject_words

    gap = text[first.end : second.start]
    if gap.strip() or gap.count("\n") > 1:
        return False
    if _CONTINUES.match(second.text) or len(_WORD.findall(second.text)) <= 5 or announces_change(first.text):
        return True
    return len(subject_words(first.text) & subject_words(second.text)) >= 2


# -- the user promoting the agent's proposal ----------------------------------------------------

_PROMOTE = re.compile(
    r"""(?ix)
    \b(?:make|let'?s\s+make|lets\s+make|consider)\s+(?:that|this|it)\s+(?:the|a|our|a\s+standing|the\s+standing)?\s*(?:new\s+)?(?:rule|policy|standard|default|convention|practice)
  | \b(?:do|doing|use|keep\s+doing|apply|stick\s+to|follow)\s+(?:that|this|it)\s+(?:from\s+now\s+on|going\s+forward|every\s+time|always|in\s+future|in\s+the\s+future|from\s+here\s+on)
  | \b(?:from\s+now\s+on|going\s+forward|in\s+future|in\s+the\s+future|from\s+here\s+on)[,]?\s+(?:let'?s\s+|lets\s+|we\s+)?(?:do|use|keep|follow|stick\s+to|go\s+with)\s+(?:that|this|it|your\s+\w+)\s*(?:$|[.,!;—-])
  | \b(?:that|this|your\s+(?:suggestion|idea|proposal|approach))\s+(?:should|will|is\s+going\s+to)\s+be\s+(?:the|a|our)\s+(?:new\s+)?(?:rule|policy|standard|default|convention)
  | \b(?:adopt|codify|enshrine)\s+(?:that|this|it|your\s+\w+)
  | \b(?:always|every\s+time)\s+do\s+(?:that|this|it)\b
  | \byes[,!]?\s+(?:always|from\s+now\s+on|going\s+forward)\b
  | \bthat'?s\s+(?:the|our)\s+(?:new\s+)?(?:rule|policy|standard)\b
  | \b(?:do|doing|use|keep|apply|configure|handle)\s+(?:that|this)\b.{0,60}\b(?:from\s+now\s+on|going\s+forward|from\s+here\s+on)
  | \bthat'?s\s+how\s+(?:we'?ll|we\s+will)\b.{0,60}\b(?:from\s+now\s+on|going\s+forward|from\s+here\s+on)
  | \b(?:yes|yep|ok|okay)[,!]?\s+(?:a\s+)?(?:standing|new)\s+rule\b
    """
)
_PROPOSAL = re.compile(
    r"(?i)\b(?:i'?d\s+(?:suggest|recommend|propose)|i\s+(?:suggest|recommend|propose)|we\s+(?:could|should|might)|"
    r"it\s+(?:might|would)\s+be\s+(?:worth|good|better|wise)|consider\b|how\s+about|maybe\s+we|"
    r"my\s+(?:suggestion|recommendation)|going\s+forward|from\s+now\s+on|in\s+(?:the\s+)?future|always|never|every\s+time|whenever|"
    r"a\s+(?:good\s+)?(?:rule|convention|practice)\b|want\s+me\s+to)"
)


def is_promotion(user_span: str) -> bool:
    """True when the user turns the agent's proposal into a standing rule ("make that the rule").

    Mere acceptance of a plan ("sure, go ahead") is not a promotion: the words must make
    it standing.
    """
    return bool(_PROMOTE.search(user_span))


def proposals(assistant: str) -> list[Span]:
    """Sentences of the agent's reply that propose a practice, best candidates last."""
    return [s for s in candidate_spans(assistant) if _PROPOSAL.search(s.text)]

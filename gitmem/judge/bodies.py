"""How a recorded body is cut from the developer's words: one clean, self-contained item.

Bodies stay exact substrings of what the developer typed; these rules only choose where the
substring starts and what it is anchored by. The word lists are data (data/bodies.json).
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

DATA_FILE = Path(__file__).resolve().parent / "data" / "bodies.json"
_TRIGGER = re.compile(r"(?i)\b(whenever|every\s+time|each\s+time|any\s*time|when|after|before|once|if)\b")


@functools.cache
def _data() -> dict[str, list[str]]:
    data: dict[str, list[str]] = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    return data


@functools.cache
def _lead_in() -> re.Pattern[str]:
    words = sorted(_data()["lead_ins"], key=len, reverse=True)
    joiners = "|".join(re.escape(j.strip()) for j in _data()["lead_in_joiners"])
    phrase = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in words)
    # A lead-in is a whole phrase followed by punctuation ("heads up:"), or one of the short
    # connectives followed by a space ("also never ..."); either may repeat ("and heads up: ...").
    return re.compile(rf"(?i)^(?:(?:{phrase})\s*(?:{joiners})\s*|(?:and|also|plus|so|oh|btw|fyi|ps)\s+)+")


def strip_lead_in(body: str) -> str:
    """`body` without the lead-in it opens with ("also", "fyi", "heads up:", "standing rule here:");
    the rest is kept as typed, so it stays an exact substring."""
    match = _lead_in().match(body)
    if not match:
        return body
    rest = body[match.end():].lstrip()
    return rest if len(rest) >= 8 else body  # a lead-in is never the whole statement


def lead_in_length(body: str) -> int:
    """How many characters of `body` are lead-in (0 when it opens with its statement)."""
    return len(body) - len(strip_lead_in(body))


@functools.cache
def _referent() -> re.Pattern[str]:
    openers = sorted(_data()["referent_openers"], key=len, reverse=True)
    return re.compile(r"(?i)^(?:" + "|".join(re.escape(o).replace(r"\ ", r"\s+") for o in openers) + r")\b")


# A prohibition whose object is a bare pronoun ("never extend this, …", "nothing should publish to
# it anymore"): the pronoun is followed by punctuation, the end or a preposition, never a noun of
# its own ("don't use these helpers" says what it is about).
_BARE_OBJECT = re.compile(
    r"(?i)^(?:please\s+)?(?:never|don'?t|do\s+not|avoid|stop|nothing\s+should|no\s+one\s+should|nobody\s+should)"
    r"(?:\s+[\w'-]+){0,3}?\s+(?:it|this|them|those|these)"
    r"(?=\s*(?:$|[.,;:!?)]|[-\u2013\u2014]|(?:for|in|from|to|by|on|with|anymore|again|unless|when|if|outside|except|at|"
    r"directly|any\s+more)\b))")


def needs_referent(sentence: str) -> bool:
    """Whether `sentence` leans on a pronoun whose referent is in the sentence before it ("Don't
    use it in anything new", "never extend this"): alone it would not say what it is about."""
    text = strip_lead_in(sentence.strip())
    return bool(_referent().match(text) or _BARE_OBJECT.match(text))


@functools.cache
def _change() -> re.Pattern[str]:
    phrases = sorted(_data()["change_announcements"], key=len, reverse=True)
    return re.compile(r"(?i)\b(?:" + "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in phrases) + r")\b")


def announces_change(sentence: str) -> bool:
    """Whether `sentence` announces a change ("We're moving off axios.", "Change of plan:") whose
    replacement rule the next sentence states: the two are one item, not two."""
    return bool(_change().search(sentence))


def not_typed(message: str) -> bool:
    """A message that hands over text the developer did not write (an approved plan, a caveat)."""
    head = message.lstrip()[:200].lower()
    return any(head.startswith(opener.lower()) for opener in _data()["not_typed_openers"])


@functools.cache
def _proposal() -> re.Pattern[str]:
    openers = sorted(_data()["proposal_openers"], key=len, reverse=True)
    return re.compile(r"(?i)^(?:" + "|".join(re.escape(o).replace(r"\ ", r"\s+") for o in openers) + r")\s*")


def strip_proposal(body: str) -> str:
    """An agent's proposal the developer made a rule, without the framing of a proposal ("I'd
    suggest we always set a timeout" -> "always set a timeout"); an exact substring still."""
    rest = body
    while (match := _proposal().match(rest)) and len(rest) - match.end() >= 8:  # "One thought: we could …"
        rest = rest[match.end():]
    return rest


def trigger_clause(body: str) -> str:
    """The part of a ritual that says when it applies ("whenever you add a config key"), without
    the follow-up it asks for ("... it needs a line in docs/config.rst"); "" when it names none.
    A ritual is anchored only by what its trigger names, never by the file it names as the work."""
    match = _TRIGGER.search(body)
    if match is None:
        return ""
    start = match.start()
    # The trigger's own first words ("whenever you add", "when adding") are never the follow-up;
    # past them, or past punctuation, the follow-up may start ("before every release run ...").
    skip = re.match(r"\s*(?:(?:you|we|i|someone|somebody|anyone|they|people)\s+)?[^\s,;:]+", body[match.end():], re.I)
    earliest = match.end() + (skip.end() if skip else 0)
    lowered = body.lower()
    ends = [i for marker in _data()["ritual_follow_up"] if (i := lowered.find(marker, earliest)) >= 0]
    return body[start:min(ends)] if ends else body[start:]

"""Words of a sentence, as the validator and the span cutter compare them."""

from __future__ import annotations

import re

STOPWORDS = frozenset("""
a an the and or but if then else so of to in on at by for with from into onto over under about as is are was
were be been being am do does did doing done have has had having i me my mine we us our ours you your yours he
him his she her it its they them their this that these those there here what which who whom whose when where why
how all any both each few more most other some such no nor not only own same than too very can will just should
could would may might must shall also ok okay yeah yes please pls thanks thank hey hi oh btw fyi u ur im i'm it's
that's we're we've we'll don't dont doesn't didn't isn't aren't wasn't won't can't cannot let's lets get got
one thing stuff like really actually basically now then again still even
""".split())
# Words that set scope or polarity but do not name the subject of a rule.
SCOPE_WORDS = frozenset("""
always never ever anymore anywhere everywhere every whenever time times now forward going rule rules new standing
use used using uses make sure keep remember note please don't do not no instead rather moved switched from longer
""".split())

_TOKEN = re.compile(r"[a-z0-9][a-z0-9_./+#-]*[a-z0-9+#]|[a-z0-9]")


def words(text: str) -> list[str]:
    return _TOKEN.findall(text.lower().replace("’", "'"))


def stem(word: str) -> str:
    """A crude common form, so "installs", "installing" and "install" compare alike when entries
    are compared with each other; identifiers (with digits, dots, underscores) stay as written."""
    if not word.isalpha():
        return word
    for suffix in ("ing", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def stems(text_words: set[str]) -> set[str]:
    return {stem(w) for w in text_words}


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if w not in STOPWORDS and len(w) > 1}


def subject_words(text: str) -> set[str]:
    return content_words(text) - SCOPE_WORDS

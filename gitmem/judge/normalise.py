"""Text as the gate reads it: one canonical form for every way of writing the same letters.

An instruction aimed at an AI can be dressed so that a reader (or a pattern, or a model) does
not recognise it: full-width or mathematical letters (NFKC folds them), Cyrillic and Greek
letters that look like Latin ones inside Latin words (``іgnore prevіous``: confusable
folding), zero-width characters between letters, bidirectional controls that reorder what a
reviewer sees, letters spaced out (``i g n o r e``). This module gives

- ``invisible(text)``: every hidden or reordering character (these are findings on their own:
  nothing a developer types as a rule needs them);
- ``homoglyph_words(text)``: words mixing Latin letters with look-alikes from another script;
- ``spaced_runs(text)``: letters spaced out one by one;
- ``canonical(text)``: the text folded for matching and for the learned detector.

Standard library only (the delivery compile step uses it); the confusables table is data:
gitmem/judge/data/confusables.json.
"""

from __future__ import annotations

import functools
import json
import os
import re
import unicodedata

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "confusables.json")

# Characters that are invisible or reorder text, beyond Unicode category Cf (which already
# covers zero-width characters, bidi embeddings/overrides/isolates/marks, word joiners,
# the BOM, soft hyphens and tag characters U+E0000–E007F).
_INVISIBLE_EXTRA: frozenset[int] = frozenset({
    0x115F, 0x1160, 0x3164, 0xFFA0,  # Hangul fillers (render as nothing)
    0x034F,                          # combining grapheme joiner
    0x2800,                          # braille blank
    0x180E,                          # Mongolian vowel separator (Cf in old Unicode versions)
    0x17B4, 0x17B5,                  # Khmer inherent vowels (render as nothing; Unicode: not to be used)
    0x16FE4,                         # Khitan small script filler (default-ignorable: renders as nothing)
    # Default-ignorable code points not yet assigned (renderers draw nothing for them, whatever the
    # Unicode version): U+2065, U+FFF0-FFF8, and the tag block's plane beyond the variation selectors.
    0x2065, *range(0xFFF0, 0xFFF9), *range(0xE0000, 0xE0100), *range(0xE01F0, 0xE1000),
})
# Variation selectors pick a glyph for the character before them (❤️, a CJK variant): one after a
# visible character is spelling; a run of them, or one with nothing to select, carries hidden
# bytes (two selectors per byte encode any text behind an emoji).
_SELECTORS = frozenset({*range(0xFE00, 0xFE10), *range(0x180B, 0x1810), *range(0xE0100, 0xE01F0)})
_ALLOWED_CONTROLS = frozenset("\t\n\r")
_BIDI = frozenset({0x200E, 0x200F, 0x061C, *range(0x202A, 0x202F), *range(0x2066, 0x206A)})

# Letters of one script spaced out one by one ("i g n o r e", "I-G-N-O-R-E", "i.g.n.o.r.e"):
# six or more single letters, each followed by the same kind of separator.
SPACED_MIN = 6
_SPACED = re.compile(r"(?<![^\W\d_])(?:[^\W\d_](?:[ \t]{1,3}|[.\-_*·•|/]\s?)){%d,}[^\W\d_](?![^\W\d_])"  # noqa: UP031
                     % (SPACED_MIN - 1))
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")


def is_hidden(ch: str) -> bool:
    """Invisible, reordering or control character (tab and newlines excepted)."""
    cp = ord(ch)
    category = unicodedata.category(ch)
    return (
        category == "Cf"
        or cp in _INVISIBLE_EXTRA
        or cp in _SELECTORS
        or (category == "Cc" and ch not in _ALLOWED_CONTROLS)
        or category in ("Zl", "Zp")                       # line/paragraph separators
        or category == "Cs"                               # an unpaired surrogate: no character at all
    )


def is_bidi(ch: str) -> bool:
    return ord(ch) in _BIDI


def char_name(ch: str) -> str:
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed')}"


_JOINERS = frozenset({"\u200c", "\u200d"})  # zero-width non-joiner and joiner
# Scripts whose spelling never needs a joiner (and whose letters pass for Latin ones).
_NO_JOINERS = frozenset({"LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", ""})


def _joins_letters(text: str, i: int) -> bool:
    """A zero-width (non-)joiner where writing needs it: between two letters or marks of a
    non-Latin script (Persian, Devanagari, Telugu, ...: ``फ़ोल्डर\u200cमें``), or a joiner inside
    an emoji sequence. Between Latin letters it only splits a word to hide it from filters."""
    if text[i] not in _JOINERS or i == 0 or i + 1 >= len(text):
        return False
    before, after = text[i - 1], text[i + 1]
    if text[i] == "\u200d" and unicodedata.category(before) == unicodedata.category(after) == "So":
        return True
    return all(unicodedata.category(ch)[0] in "LM" and _script(ch) not in _NO_JOINERS for ch in (before, after))


def _selects_glyph(text: str, i: int) -> bool:
    """A single variation selector right after a character it selects a glyph of: U+FE0E/U+FE0F
    after any visible one (an emoji, a keycap digit), the other standard ones after a symbol or a
    letter of a script that has variants (never a Latin letter), ideographic ones after a CJK
    ideograph, Mongolian free ones after a Mongolian letter."""
    cp = ord(text[i])
    if cp not in _SELECTORS or i == 0:
        return False
    before = text[i - 1]
    if is_hidden(before) or before.isspace():
        return False
    if cp >= 0xE0100:  # an ideographic variant, in a name; one after each of many ideographs carries bytes
        return unicodedata.name(before, "").startswith("CJK") and _few_ideographic_selectors(text)
    if 0x180B <= cp <= 0x180F:
        return unicodedata.name(before, "").startswith("MONGOLIAN")
    return cp >= 0xFE0E or (not before.isascii() and _script(before) != "LATIN")


MAX_IDEOGRAPHIC_SELECTORS = 2  # variants of a name or two in one rule; more is a channel (a byte each)


def _few_ideographic_selectors(text: str) -> bool:
    count = 0
    for ch in text:
        if 0xE0100 <= ord(ch) < 0xE01F0:
            count += 1
            if count > MAX_IDEOGRAPHIC_SELECTORS:
                return False
    return True


def _spelling(text: str, i: int) -> bool:
    """A hidden character that writing needs where it stands."""
    return _joins_letters(text, i) or _selects_glyph(text, i)


def invisible(text: str) -> list[str]:
    """Code point and name of every distinct invisible, bidi-control or control character
    (joiners that a non-Latin script's spelling needs, and a variation selector after a visible
    character, excepted)."""
    found: list[str] = []
    seen: set[str] = set()
    for i, ch in enumerate(text):
        if ch not in seen and is_hidden(ch) and not _spelling(text, i):
            seen.add(ch)
            found.append(char_name(ch))
    return found


def visible(text: str) -> str:
    """`text` with every hidden character (and a carriage return) shown as <U+XXXX>, for people
    to read (an emoji's variation selector stays as it is)."""
    return "".join(f"<U+{ord(ch):04X}>" if (is_hidden(ch) and not _selects_glyph(text, i)) or ch == "\r" else ch
                   for i, ch in enumerate(text))  # a carriage return would let a terminal overwrite the line


# -- confusables ---------------------------------------------------------------------------------

@functools.cache
def confusables() -> dict[str, str]:
    """Non-Latin letters that look like Latin ones (Cyrillic, Greek, Armenian, Cherokee, ...)."""
    with open(DATA, encoding="utf-8") as handle:
        data = json.load(handle)
    return {k: v for k, v in data.items() if not k.startswith("_")}


def _script(ch: str) -> str:
    """LATIN, CYRILLIC, GREEK, ... for a letter (the first word of its Unicode name)."""
    if ch.isascii():
        return "LATIN" if ch.isalpha() else ""
    name = unicodedata.name(ch, "")
    return name.split(" ", 1)[0] if name else ""


def homoglyph_words(text: str) -> list[str]:
    """Words that mix Latin letters with look-alike letters of another script (``prevіous``)."""
    table = confusables()
    found: list[str] = []
    for match in _WORD.finditer(unicodedata.normalize("NFKC", text)):
        word = match.group(0)
        lookalike = any(ch in table and _script(ch) != "LATIN" for ch in word)
        mixed = lookalike and any(_script(ch) == "LATIN" for ch in word)
        if mixed and word not in found:
            found.append(word)
    return found


def _mostly_latin(text: str) -> bool:
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return False
    table = confusables()
    latin = sum(1 for ch in letters if _script(ch) == "LATIN")
    lookalike = sum(1 for ch in letters if ch in table)
    # Look-alikes count for Latin unless the text has other letters of their script: a
    # sentence of Russian stays Russian, an English sentence with Cyrillic "о" is English.
    return latin + lookalike >= 0.8 * len(letters) and latin >= 0.5 * len(letters)


def fold_confusables(text: str) -> str:
    """Look-alike letters as the Latin letters they imitate: inside words that mix scripts, and
    everywhere when the text is (otherwise) Latin."""
    table = confusables()
    if not any(ch in table for ch in text):
        return text
    if _mostly_latin(text):
        return "".join(table.get(ch, ch) for ch in text)

    def word(match: re.Match[str]) -> str:
        w = match.group(0)
        return "".join(table.get(ch, ch) for ch in w) if any(_script(ch) == "LATIN" for ch in w) else w

    return _WORD.sub(word, text)


# -- spaced letters ------------------------------------------------------------------------------

def spaced_runs(text: str) -> list[str]:
    """Runs of SPACED_MIN or more letters written one by one with separators between them."""
    return [m.group(0) for m in _SPACED.finditer(text)]


def _collapse(match: re.Match[str]) -> str:
    run = match.group(0)
    # Wider gaps between letters are the word breaks ("i g n o r e   a l l"); with uniform
    # gaps the words run together, which the gate still reports as obfuscation.
    gaps = re.findall(r"[^\W\d_]([^\w]+)(?=[^\W\d_])", run)
    narrow = min((len(g) for g in gaps), default=1)
    words = re.split(rf"[^\w]{{{narrow + 1},}}", run) if any(len(g) > narrow for g in gaps) else [run]
    return " ".join(re.sub(r"[^\w]+", "", w) for w in words)


def collapse_spaced(text: str) -> str:
    return _SPACED.sub(_collapse, text)


# -- the canonical form --------------------------------------------------------------------------

# Look-alikes of the characters markup is made of (NFKC leaves these as they are).
_MARKUP_LOOKALIKES = str.maketrans({
    **dict.fromkeys("˂‹ᐸ〈⟨❮⦑⧼", "<"), **dict.fromkeys("˃›ᐳ〉⟩❯⦒⧽", ">"),
    **dict.fromkeys("∶꞉ː։׃᛬⁚˸ꓽ", ":"),
})


def folded(text: str) -> str:
    """NFKC, hidden characters dropped, look-alikes folded to Latin (and to `<`, `>`, `:`), any
    space a plain one; lines kept (for markup), a carriage return as the line break delivery
    makes of it."""
    text = unicodedata.normalize("NFKC", text).replace("\r\n", "\n").replace("\r", "\n")
    text = "".join(" " if unicodedata.category(ch) == "Zs" else ch for ch in text if not is_hidden(ch))
    return fold_confusables(text.translate(_MARKUP_LOOKALIKES))


def canonical(text: str) -> str:
    """The folded text with spaced letters joined and whitespace collapsed: what the gate's
    phrases and its learned detector read."""
    return " ".join(collapse_spaced(folded(text)).split())

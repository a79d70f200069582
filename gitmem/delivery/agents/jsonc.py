"""JSON with comments (Gemini CLI's settings.json, and plain JSON as a case of it): read it, and
change one top-level member while every other byte, comments included, stays as the developer
wrote it; the member itself is written in the file's own style (indent, line breaks, escapes).

Gemini CLI strips `//` and `/* */` comments before parsing its settings and keeps them when it
writes them back; gitmem does the same for the one member it owns ("hooks"). The member's own
value is written anew, so a comment inside it would be lost: `replace_member` refuses that
(None) and the caller says so instead of rewriting.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

_DECODER = json.JSONDecoder()
_SPACE = " \t\r\n"


def strip_comments(text: str) -> str:
    """`text` with each comment blanked (spaces; line breaks kept), so positions stay the same."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':  # a string: skip to its closing quote, past escapes
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out[i:end] = " " * (end - i)
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out[i:end] = ["\n" if c == "\n" else " " for c in text[i:end]]
            i = end
        else:
            i += 1
    return "".join(out)


def has_comments(text: str) -> bool:
    return strip_comments(text) != text


def loads(text: str) -> Any:
    """The JSON value of `text`, comments ignored (ValueError when it is not JSON)."""
    return json.loads(strip_comments(text))


def _members(plain: str) -> tuple[int, dict[str, tuple[int, int, int]]]:
    """In comment-free `plain` holding one JSON object: the position of its `{`, and for each
    top-level key, (where its member starts, where its value starts, where its value ends)."""
    i = _skip(plain, 0)
    if not plain.startswith("{", i):
        raise ValueError("not a JSON object")
    opening, i = i, _skip(plain, i + 1)
    found: dict[str, tuple[int, int, int]] = {}
    while not plain.startswith("}", i):
        start = i
        key, i = _DECODER.raw_decode(plain, i)
        i = _skip(plain, i)
        if not plain.startswith(":", i):
            raise ValueError(f"expected ':' at {i}")
        value_start = _skip(plain, i + 1)
        _, value_end = _DECODER.raw_decode(plain, value_start)
        found[str(key)] = (start, value_start, value_end)
        i = _skip(plain, value_end)
        if plain.startswith(",", i):
            i = _skip(plain, i + 1)
    return opening, found


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _SPACE:
        i += 1
    return i


def _line_indent(text: str, at: int) -> str:
    line_start = text.rfind("\n", 0, at) + 1
    return text[line_start:at] if not text[line_start:at].strip() else ""


Style = tuple[str | None, bool, str]  # (indent unit, None on one line; ASCII escapes; line break)


def _style(text: str) -> Style:
    """How `text` is written, so a member written into it looks like the rest."""
    unit: str | None = "  "
    if text.strip() and "\n" not in text.strip():
        unit = None
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            unit = line[: len(line) - len(stripped)]
            break
    return unit, "\\u" in text, "\r\n" if "\r\n" in text else "\n"


def _render(value: Any, indent: str, style: Style) -> str:
    unit, ascii_only, newline = style
    if unit is None:
        return json.dumps(value, ensure_ascii=ascii_only)
    return json.dumps(value, indent=unit, ensure_ascii=ascii_only).replace("\n", newline + indent)


def rewritten(current: str | None, key: str, data: Mapping[str, Any]) -> str | None:
    """`data` as a settings file's text: `current` with only its top-level `key` written anew (or
    removed, where `data` has none), every other byte as it was; where there is no file yet, the
    whole object, two-space indented. None when that member holds a comment it would drop."""
    return dumped(data) if current is None else set_member(current, key, data.get(key))


def dumped(data: Mapping[str, Any]) -> str:
    """A new settings file's text."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def set_member(text: str, key: str, value: Any) -> str | None:
    """`text` with its top-level `key` set to `value`, or removed where `value` is None; None when
    the member holds a comment, which writing it anew would drop."""
    return remove_member(text, key) if value is None else replace_member(text, key, value)


def replace_member(text: str, key: str, value: Any) -> str | None:
    """`text` with its top-level `key` set to `value` (added first when it has none); None when the
    old value holds a comment, which writing the new one would drop."""
    plain = strip_comments(text)
    opening, found = _members(plain)
    style = _style(text)
    unit, _, newline = style
    if key in found:
        start, value_start, value_end = found[key]
        if plain[value_start:value_end] != text[value_start:value_end]:
            return None
        return text[:value_start] + _render(value, _line_indent(text, start), style) + text[value_end:]
    first = _skip(plain, opening + 1)
    if unit is None:  # a file on one line stays on one line
        member = f"{json.dumps(key)}: {_render(value, '', style)}"
        return text[:first] + member + (", " if found else "") + text[first:]
    indent = _line_indent(text, first) if found else unit
    member = f"{json.dumps(key)}: {_render(value, indent, style)}"
    if found:
        return text[:first] + member + "," + newline + indent + text[first:]
    rest = text[opening + 1:]
    return text[:opening + 1] + newline + indent + member + ("" if rest.startswith(("\n", "\r\n")) else newline) + rest


def remove_member(text: str, key: str) -> str | None:
    """`text` without its top-level `key` (unchanged when it has none); None when the member holds
    a comment."""
    plain = strip_comments(text)
    _, found = _members(plain)
    if key not in found:
        return text
    start, value_start, value_end = found[key]
    if plain[value_start:value_end] != text[value_start:value_end]:
        return None
    after = _skip(plain, value_end)
    if plain.startswith(",", after):  # its own comma goes with it
        return _cut(text, start, _skip(plain, after + 1) if _style(text)[0] is None else after + 1)
    before = len(plain[:start].rstrip(_SPACE)) - 1  # the last member: the comma before it goes
    cut = _cut(text, start, value_end)
    return cut[:before] + cut[before + 1:] if plain[before] == "," else cut


def _cut(text: str, start: int, end: int) -> str:
    """`text` without [start, end), and without the line it leaves blank."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    if not text[line_start:start].strip() and not text[end:line_end].strip() and line_end < len(text):
        return text[:line_start] + text[line_end + 1:]
    return text[:start] + text[end:]

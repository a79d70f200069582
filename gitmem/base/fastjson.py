"""JSON for the hook path, through the C accelerator behind the json module, without the module.

`import json` costs as much as starting the interpreter (≈ 15 ms on a loaded 2-core machine):
json.decoder and json.encoder import `re`, which imports `enum`, and compile seven regular
expressions in pure Python at import time. The parsing and encoding themselves are done in C
by `_json`, which imports nothing; this module calls it directly. Same results as json.loads
(strict) and json.dumps(separators=(",", ":")); any malformed input raises ValueError.
"""

from __future__ import annotations

TYPE_CHECKING = False  # no typing import on the hook path
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

_json: Any
try:
    import _json
except ImportError:  # an interpreter without the accelerator: the json module will do
    _json = None

_WHITESPACE = " \t\n\r"


class _Context:
    """What _json.make_scanner reads from json.JSONDecoder."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo: dict[str, object] = {}  # noqa: RUF012 - the scanner reads (and clears) it as an attribute

    @staticmethod
    def parse_constant(name: str) -> float:
        return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


def _unsupported(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


if _json is not None:
    _scan = _json.make_scanner(_Context())
    _encoders = {
        ascii_only: _json.make_encoder(None, _unsupported,
                                       _json.encode_basestring_ascii if ascii_only else _json.encode_basestring,
                                       None, ":", ",", False, False, True)
        for ascii_only in (True, False)
    }


def loads(data: str | bytes | bytearray) -> object:
    if _json is None:
        import json

        return json.loads(data)
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    if text.startswith("\ufeff"):
        text = text[1:]
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration as exc:
        raise ValueError(f"invalid JSON at character {exc.value}") from None
    except Exception as exc:  # the accelerator's own error (JSONDecodeError, RecursionError, ...)
        raise ValueError(f"invalid JSON: {exc}") from None
    if text[end:].strip(_WHITESPACE):
        raise ValueError(f"extra data after JSON at character {end}")
    return value


def dumps(value: object, ensure_ascii: bool = True) -> str:
    """Compact JSON (no spaces after separators)."""
    if _json is None:
        import json

        return json.dumps(value, ensure_ascii=ensure_ascii, separators=(",", ":"))
    return "".join(_encoders[ensure_ascii](value, 0))


def dumps_utf8(value: object) -> str:
    """Compact JSON that encodes to UTF-8, for files: characters as they are, unless the value holds
    a lone surrogate (a JSON string may escape half an emoji), when all of it is escaped (\\uXXXX),
    which reads back the same."""
    text = dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return dumps(value, ensure_ascii=True)
    return text


def read_file(path: str) -> object:
    """The JSON value stored at `path`; None when it is missing, unreadable or malformed."""
    try:
        with open(path, "rb") as handle:
            return loads(handle.read())
    except (OSError, ValueError):
        return None


def read_rows(path: str) -> Iterator[dict[str, Any]]:
    """The objects of a JSON Lines file, in order; lines that are not a JSON object are skipped.

    A missing file has no rows; other errors opening it are raised. (A generator: no typing
    import on the hook path.)
    """
    try:
        handle = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115 - closed by the with below
    except FileNotFoundError:
        return
    with handle:
        for line in handle:
            try:
                row = loads(line)
            except ValueError:
                continue
            if isinstance(row, dict):
                yield row


def write_file(path: str, data: object) -> None:
    """`data` as compact JSON, replacing `path` atomically."""
    from gitmem.base.files import write_atomic

    write_atomic(path, dumps_utf8(data))

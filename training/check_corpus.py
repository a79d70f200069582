"""Check the labelled corpus files: every line JSON, required fields, spans copied exactly.

    python training/check_corpus.py [FILE ...]     # default: training/corpus/*.jsonl

Each turn: ``id`` (unique across files), ``user``, ``assistant``, ``files_modified`` (list),
``expect`` (list). Each expected item: ``kind`` in the vocabulary, ``source`` user|agent,
``span`` an exact substring of the user's message (the agent's reply for source agent),
``words`` a non-empty list, each a case-insensitive substring of the span, and an optional
``anchor`` among ``files_modified``. Exits 1 and names file:line:field on the first problems.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

KINDS = ("law", "hazard", "ritual", "correction", "open_loop")
CORPUS = Path(__file__).resolve().parent / "corpus"


def problems_in(path: Path, seen_ids: set[str]) -> list[str]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        where = f"{path.name}:{n}"
        if not line.strip():
            continue
        try:
            turn = json.loads(line)
        except json.JSONDecodeError as exc:
            out.append(f"{where}: not JSON ({exc})")
            continue
        for field, kind in (("id", str), ("user", str), ("assistant", str), ("files_modified", list), ("expect", list)):
            if not isinstance(turn.get(field), kind):
                out.append(f"{where}: field {field!r} missing or not a {kind.__name__}")
        if out and out[-1].startswith(where):
            continue
        if turn["id"] in seen_ids:
            out.append(f"{where}: duplicate id {turn['id']!r}")
        seen_ids.add(turn["id"])
        for i, item in enumerate(turn["expect"]):
            at = f"{where}: expect[{i}]"
            if item.get("kind") not in KINDS:
                out.append(f"{at}.kind {item.get('kind')!r} not in {KINDS}")
            source = item.get("source", "user")
            if source not in ("user", "agent"):
                out.append(f"{at}.source {source!r} is neither user nor agent")
            span = item.get("span")
            text = turn["user"] if source == "user" else turn["assistant"]
            if not isinstance(span, str) or not span or span not in text:
                whose = "user" if source == "user" else "assistant"
                out.append(f"{at}.span is not an exact substring of the {whose} text")
                continue
            words = item.get("words")
            if not isinstance(words, list) or not words:
                out.append(f"{at}.words missing or empty")
            else:
                for w in words:
                    if not isinstance(w, str) or w.lower() not in span.lower():
                        out.append(f"{at}.words: {w!r} does not occur in the span")
            anchor = item.get("anchor")
            if anchor is not None and anchor.split("::")[0] not in turn["files_modified"]:
                out.append(f"{at}.anchor {anchor!r} is not among files_modified")
    return out


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted(CORPUS.glob("*.jsonl"))
    seen: set[str] = set()
    problems = [p for path in paths for p in problems_in(path, seen)]
    for p in problems[:50]:
        print(p, file=sys.stderr)
    print(f"{len(paths)} files, {len(seen)} turns, {len(problems)} problems", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

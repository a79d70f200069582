"""The writer's labelled data: written corpus files and real developer turns.

Written turns (training/corpus/*.jsonl) carry their text and `expect` items. Real turns carry
only labels here (training/labels/real.jsonl: ids, hashes, offsets, split); their text is read
in place from ../shared/real-turns/ and joined by id at load time, never copied.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gitmem.base.files import sha256_file  # noqa: F401  (re-exported for eval.py)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "training" / "corpus"
LABELS = ROOT / "training" / "labels" / "real.jsonl"
SHARED = ROOT.parent / "shared"
REAL_TURNS = SHARED / "real-turns"
CAPTURE_DEV = SHARED / "capture-dev.jsonl"


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SystemExit(f"{path}:{n}: not JSON ({exc})") from None
        if isinstance(row, dict):
            yield row


def written(paths: list[Path]) -> list[dict[str, Any]]:
    """Written turns: {"id", "user", "assistant", "files_modified", "expect": [{"kind", "words", "span"?}]}."""
    out = []
    for path in paths:
        for row in read_jsonl(path):
            if isinstance(row.get("user"), str):
                row["_file"] = path.name
                out.append(row)
    return out


def turn_hash(text: str) -> str:
    return hashlib.sha1(text.strip().encode("utf-8")).hexdigest()[:12]


def real(split: str | None, labels: Path = LABELS, folder: Path = REAL_TURNS) -> list[dict[str, Any]]:
    """Labelled real turns of one split ("train", "eval"; None: both), joined with their text.

    Each: {"id", "session", "source", "user", "assistant", "split", "items": [{"kind", "start",
    "end", "span"}]} — `span` is the item's text, cut from the shared message at load time.
    Raises SystemExit naming the file when the shared folder is absent or a hash disagrees.
    """
    if not folder.is_dir():
        raise SystemExit(f"{folder} is absent: the real turns are read in place, never copied")
    text: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        for row in read_jsonl(path):
            row["_file"] = path.name
            text[row["id"]] = row
    out = []
    for label in read_jsonl(labels):
        if split is not None and label.get("split") != split:
            continue
        row = text.get(label["id"])
        if row is None:
            raise SystemExit(f"{labels}: id {label['id']!r} is not in {folder}")
        if label.get("turn_hash") != row.get("turn_hash"):
            raise SystemExit(f"{labels}: id {label['id']!r}: turn_hash differs from {row['_file']}")
        user = row["user"]
        items = [{**item, "span": user[item["start"]:item["end"]]} for item in label.get("items") or []]
        out.append({"id": row["id"], "session": row["session"], "source": row["_file"], "user": user,
                    "assistant": row.get("assistant") or "", "files_modified": [], "split": label["split"],
                    "items": items})
    return out


DEV_FRACTION = 0.1


def dev_ids(labels: Path = LABELS, folder: Path = REAL_TURNS) -> set[str]:
    """Ids of the real turns carved out of the train split for choosing the decision threshold:
    within each source file, train-split sessions ordered by the SHA-1 of their id go to dev
    until it holds DEV_FRACTION of that file's train turns. Never trained on; eval is untouched."""
    chosen: set[str] = set()
    by_file: dict[str, dict[str, list[str]]] = {}
    for row in real("train", labels, folder):
        by_file.setdefault(row["source"], {}).setdefault(row["session"], []).append(row["id"])
    for sessions in by_file.values():
        total = sum(len(ids) for ids in sessions.values())
        taken = 0
        for session in sorted(sessions, key=lambda s: hashlib.sha1(s.encode()).hexdigest()):
            if taken >= DEV_FRACTION * total:
                break
            chosen.update(sessions[session])
            taken += len(sessions[session])
    return chosen

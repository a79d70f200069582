"""The store: one YAML file per entry under .gitmem/entries/, round-tripped with ruamel.

One file per entry means two branches that each add entries never conflict.
Round-trip loading keeps a person's comments and formatting when gitmem rewrites a file.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError

from gitmem.base import settings
from gitmem.base.files import write_atomic
from gitmem.base.paths import RepoPaths, find_repo
from gitmem.errors import EntryError, UnknownEntry
from gitmem.store.entry import Entry

DEFAULT_CONFIG = settings.template()


def _yaml() -> YAML:
    yaml = YAML()  # round-trip mode: comments and key order survive
    yaml.width = 100
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.preserve_quotes = True
    return yaml


@dataclass(slots=True)
class LoadResult:
    entries: list[Entry] = field(default_factory=list)
    errors: list[EntryError] = field(default_factory=list)


def parse_entry_text(text: str, path: str) -> Entry:
    """Parse one entry file's text; raises EntryError naming `path` and the field."""
    try:
        data = _yaml().load(text)
    except YAMLError as exc:
        raise EntryError(path, None, f"invalid YAML: {exc}".replace("\n", " ")) from None
    entry = Entry.from_dict(data, path)
    expected = Path(path).stem
    if entry.id != expected:
        raise EntryError(path, "id", f"{entry.id!r} does not match the file name {expected!r}")
    return entry


def _merge(target: CommentedMap, new: dict[str, Any]) -> None:
    """Update `target` in place so comments on untouched keys survive."""
    for key in list(target):
        if key not in new:
            del target[key]
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(target.get(key), CommentedMap):
            _merge(target[key], value)
        elif target.get(key) != value or key not in target:
            target[key] = value


def load_config(repo: RepoPaths) -> dict[str, Any]:
    """Repository settings merged over the defaults; a broken file falls back to defaults."""
    defaults = settings.defaults()
    try:
        data = YAML(typ="safe").load(repo.config.read_text(encoding="utf-8")) or {}
    except (OSError, YAMLError):
        data = {}

    def overlay(base: dict[str, Any], top: Any) -> dict[str, Any]:
        if not isinstance(top, dict):
            return base
        for key, value in top.items():
            base[key] = overlay(base[key], value) if isinstance(base.get(key), dict) else value
        return base

    return overlay(defaults, data)


class Store:
    def __init__(self, repo: RepoPaths | None = None) -> None:
        self.repo = repo or find_repo()

    @property
    def entries_dir(self) -> Path:
        return self.repo.entries

    def path_of(self, entry_id: str) -> Path:
        return self.entries_dir / f"{entry_id}.yaml"

    def relpath_of(self, entry_id: str) -> str:
        return f".gitmem/entries/{entry_id}.yaml"

    def files(self) -> list[Path]:
        if not self.entries_dir.is_dir():
            return []
        return sorted(p for p in self.entries_dir.iterdir() if p.suffix == ".yaml")

    def load(self) -> LoadResult:
        """Every entry that validates; every one that doesn't becomes an error, never an abort."""
        result = LoadResult()
        for path in self.files():
            rel = path.relative_to(self.repo.worktree).as_posix()
            try:
                text = path.read_text(encoding="utf-8")
                result.entries.append(parse_entry_text(text, rel))
            except UnicodeDecodeError:
                result.errors.append(EntryError(rel, None, "not valid UTF-8"))
            except OSError as exc:
                result.errors.append(EntryError(rel, None, f"unreadable: {exc.strerror}"))
            except EntryError as exc:
                result.errors.append(exc)
        return result

    def get(self, entry_id: str) -> Entry:
        path = self.path_of(entry_id)
        if not path.is_file():
            matches = [p for p in self.files() if p.stem.startswith(entry_id) or p.stem.endswith(entry_id)]
            if len(matches) != 1:
                raise UnknownEntry(f"no entry {entry_id!r}" if not matches else
                                   f"{entry_id!r} is ambiguous: {', '.join(p.stem for p in matches)}")
            path = matches[0]
        rel = path.relative_to(self.repo.worktree).as_posix()
        return parse_entry_text(path.read_text(encoding="utf-8"), rel)

    def render(self, entry: Entry) -> str:
        """The file text for `entry`, keeping comments of the existing file if there is one."""
        yaml = _yaml()
        path = self.path_of(entry.id)
        doc: Any = None
        if path.is_file():
            try:
                doc = yaml.load(path.read_text(encoding="utf-8"))
            except (YAMLError, UnicodeDecodeError):
                doc = None
        if not isinstance(doc, CommentedMap):
            doc = CommentedMap()
        _merge(doc, entry.to_dict())
        out = io.StringIO()
        yaml.dump(doc, out)
        return out.getvalue()

    def write(self, entry: Entry) -> Path:
        """Atomic write (temp file + rename): a crash never leaves half an entry."""
        return self.write_text(entry.id, self.render(entry))

    def write_text(self, entry_id: str, text: str) -> Path:
        path = self.path_of(entry_id)
        write_atomic(path, text)
        return path

    def write_all(self, entries: Iterable[Entry]) -> list[Path]:
        return [self.write(e) for e in entries]

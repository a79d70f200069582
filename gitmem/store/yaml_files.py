"""The store: one YAML file per entry under .gitmem/entries/, round-tripped with ruamel.

One file per entry means two branches that each add entries never conflict.
Round-trip loading keeps a person's comments and formatting when gitmem rewrites a file.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.composer import Composer, ComposerError
from ruamel.yaml.error import YAMLError
from ruamel.yaml.events import AliasEvent

from gitmem.base import files, settings
from gitmem.base.files import write_atomic
from gitmem.base.paths import CONFIG_FILE, RepoPaths, find_repo
from gitmem.errors import EntryError, GitmemError, UnknownEntry
from gitmem.store.entry import Entry, anchor_outside, matching_ids

DEFAULT_CONFIG = settings.template()
# An entry is a sentence or a paragraph; anything bigger is a mistake or an attack, and parsing
# it in a hook would cost every commit and tool call. Checked before the file is read.
MAX_ENTRY_BYTES = 64 * 1024
MAX_CONFIG_BYTES = 64 * 1024
MAX_DEPTH = 32


class ConfigError(GitmemError):
    """.gitmem/config.yaml is unreadable or invalid; names the file and the problem."""


class _NoAliasComposer(Composer):
    """YAML aliases (`*name`) can expand a few hundred bytes into gigabytes; entries never need them."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.parser.check_event(AliasEvent):
            event = self.parser.get_event()
            raise ComposerError(None, None, f"aliases (*{event.anchor}) are not allowed", event.start_mark)
        return super().compose_node(parent, index)


def _yaml(typ: str | None = None) -> YAML:
    yaml = YAML(typ=typ, pure=True) if typ else YAML()  # round-trip mode: comments and key order survive
    yaml.Composer = _NoAliasComposer
    yaml.max_depth = MAX_DEPTH
    if typ is None:
        yaml.width = 100
        yaml.indent(mapping=2, sequence=4, offset=2)
        yaml.preserve_quotes = True
    return yaml


def too_big(size: int, path: str) -> EntryError | None:
    if size > MAX_ENTRY_BYTES:
        return EntryError(path, None, f"the file is {size:,} bytes; an entry may hold at most "
                                      f"{MAX_ENTRY_BYTES // 1024} KiB")
    return None


def read_entry_file(file: Path, rel: str) -> str:
    """An entry file's text, refused (EntryError) before reading when it is over the size limit or
    not a plain file: a symbolic link (git checks them out; one to /dev/zero or a FIFO would
    never end a read), a device or a FIFO."""
    try:
        st = os.lstat(file)
    except OSError as exc:
        raise EntryError(rel, None, f"unreadable: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise EntryError(rel, None, "not a plain file (a folder, symbolic link, device or FIFO): entry files "
                                    "are plain files")
    problem = too_big(st.st_size, rel)
    if problem:
        raise problem
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise EntryError(rel, None, "not valid UTF-8") from None
    except OSError as exc:
        raise EntryError(rel, None, f"unreadable: {exc.strerror}") from None


@dataclass(slots=True)
class LoadResult:
    entries: list[Entry] = field(default_factory=list)
    errors: list[EntryError] = field(default_factory=list)


# What loading YAML can raise: besides its own errors, whatever building a value raises (ruamel:
# ValueError for `expires: 2026-02-30` or `!!float abc`, IndexError for `!!int 0x`) and nesting
# too deep. The text is anyone's (a pull request's), so any exception means "unreadable".
UNREADABLE = (Exception,)


def unreadable_reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "invalid YAML: nested too deeply"
    if isinstance(exc, YAMLError):
        return "invalid YAML: " + " ".join(str(exc).split())
    return "invalid YAML: a value that cannot be read (" + " ".join(str(exc).split()) + ")"


def _unbuildable_field(text: str) -> str | None:
    """The top-level field whose value alone cannot be built (ruamel builds `expires: 2026-02-30`
    into a date while loading, before any field is known, and says nothing of where): each
    field's lines are loaded on their own. Only on that error's path."""
    lines = text.splitlines()
    for n, line in enumerate(lines):
        name, colon, _ = line.partition(":")
        if not colon or not name or name != name.strip() or name.startswith(("#", "-")):
            continue
        block = [line]
        for more in lines[n + 1:]:
            if more.strip() and not more.startswith((" ", "\t", "-")):
                break
            block.append(more)
        try:
            _yaml().load("\n".join(block))
        except UNREADABLE:
            return name
    return None


def parse_entry_text(text: str, path: str) -> Entry:
    """Parse one entry file's text; raises EntryError naming `path` and the field."""
    problem = too_big(len(text.encode("utf-8", "surrogatepass")), path)
    if problem:
        raise problem
    try:
        data = _yaml().load(text)
    except UNREADABLE as exc:
        field = None if isinstance(exc, YAMLError | RecursionError) else _unbuildable_field(text)
        raise EntryError(path, field, unreadable_reason(exc)) from None
    entry = Entry.from_dict(data, path)
    expected = Path(path).stem
    if entry.id != expected:
        raise EntryError(path, "id", f"{entry.id!r} does not match the file name {expected!r}")
    return entry


# gitmem's own fields, by mapping: a field of these the new version lacks is removed; any other
# key is the team's own (a reviewer, a ticket, with its comment) and stays.
_FIELDS = {
    "": ("id", "kind", "status", "source", "body", "anchor", "triggers", "created", "supersedes",
         "superseded_by", "expires", "moves", "revocation"),
    "created": ("at", "session", "turn"),
    "anchor": ("path", "symbol", "language", "fingerprint"),
    "revocation": ("at", "reason", "commit"),
}


def _merge(target: CommentedMap, new: dict[str, Any], field: str = "") -> None:
    """Update `target` in place so comments on untouched keys, and keys gitmem does not own, survive."""
    owned = _FIELDS.get(field, ())
    for key in list(target):
        if key not in new and key in owned:
            del target[key]
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(target.get(key), CommentedMap):
            _merge(target[key], value, key if not field else "-")
        elif target.get(key) != value or key not in target:
            target[key] = value


def overlay_text(text: str, changes: Mapping[str, Any]) -> str:
    """`text` (an entry file) with the top-level fields in `changes` set, everything else — other
    fields, comments, formatting — kept as it is."""
    yaml = _yaml()
    try:
        doc = yaml.load(text)
    except UNREADABLE as exc:
        raise EntryError("", None, unreadable_reason(exc)) from None
    if not isinstance(doc, CommentedMap):
        raise EntryError("", None, "expected a mapping of fields at the top level")
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(doc.get(key), CommentedMap):
            _merge(doc[key], value, key)
        elif key not in doc or doc.get(key) != value:
            doc[key] = value
    out = io.StringIO()
    yaml.dump(doc, out)
    return out.getvalue()


def read_config(repo: RepoPaths) -> tuple[dict[str, Any], list[str]]:
    """The settings in .gitmem/config.yaml (a missing file: none) and what is wrong with them."""
    try:  # a plain file: git checks out links, and one to /dev/zero would never end a read
        raw = files.read_plain(repo.config, MAX_CONFIG_BYTES, follow_links=False)
    except FileNotFoundError:
        return {}, []
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            return {}, [f"is more than a configuration needs ({MAX_CONFIG_BYTES // 1024} KiB at most)"]
        return {}, [f"cannot be read ({exc.strerror})"]
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\0" in raw:
        return {}, ["is not UTF-8 (it looks like UTF-16); save it as UTF-8"]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return {}, [f"is not valid UTF-8 (byte {exc.start})"]
    try:
        data = _yaml("safe").load(text)
    except UNREADABLE as exc:
        return {}, ["is not valid YAML: " + unreadable_reason(exc).removeprefix("invalid YAML: ")]
    problems = settings.problems(data)
    return (data if isinstance(data, dict) else {}), problems


def config_problems(repo: RepoPaths) -> list[str]:
    """`.gitmem/config.yaml: <problem>` lines; empty when the file is fine or absent."""
    return [f"{CONFIG_FILE}: {p}" for p in read_config(repo)[1]]


def check_config(repo: RepoPaths) -> None:
    """Raise ConfigError naming the file and every problem (commands call this before writing)."""
    problems = config_problems(repo)
    if problems:
        raise ConfigError("; ".join(problems) + "; fix it before gitmem records anything")


def load_config(repo: RepoPaths) -> dict[str, Any]:
    """Repository settings merged over the defaults; a broken file falls back to the defaults
    (hooks never fail on it; commands refuse it through check_config)."""
    defaults = settings.defaults()
    data, problems = read_config(repo)
    if problems:
        data = {}

    def overlay(base: dict[str, Any], top: Any) -> dict[str, Any]:
        if not isinstance(top, dict):
            return base
        for key, value in top.items():
            base[key] = overlay(base[key], value) if isinstance(base.get(key), dict) else value
        return base

    return overlay(defaults, data)


def check_anchor_inside(repo: RepoPaths, entry: Entry, rel: str) -> None:
    """Refuse an anchor whose path leads out of the repository through a symlink."""
    if entry.anchor is None:
        return
    problem = anchor_outside(repo.worktree, entry.anchor.path)
    if problem:
        raise EntryError(rel, "anchor.path", problem)


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

    def strays(self) -> list[str]:
        """Files meant as entries that the store never reads: under the entries folder `*.yml`,
        `*.YAML`, hidden `.*.yaml`, any of them in a folder below it; beside it in `.gitmem/`, any
        YAML file but the config (a teammate's rule would vanish unsaid). An editor's swap or
        backup files are not meant as entries. Nothing is read through a linked folder (where
        it leads is no part of the repository: gitmem.base.signature.linked_store)."""
        from gitmem.base.signature import linked_store

        found: list[str] = []
        if linked_store(str(self.repo.worktree)):
            return found
        if self.repo.store.is_dir():
            found += [f".gitmem/{p.name}" for p in sorted(self.repo.store.iterdir())
                      if p.suffix.lower() in (".yaml", ".yml") and p != self.repo.config and p.is_file()]
        if not self.entries_dir.is_dir():
            return found
        for path in sorted(self.entries_dir.rglob("*")):
            if path.suffix.lower() not in (".yaml", ".yml") or not path.is_file():
                continue
            rel = path.relative_to(self.entries_dir)
            if len(rel.parts) > 1 or path.suffix != ".yaml" or path.name.startswith("."):
                found.append(f".gitmem/entries/{rel.as_posix()}")
        return found

    def get(self, entry_id: str) -> Entry:
        path = self.path_of(entry_id)
        if not path.is_file():
            named = set(matching_ids((p.stem for p in self.files()), entry_id))
            matches = [p for p in self.files() if p.stem in named]
            if len(matches) != 1:
                raise UnknownEntry(f"no entry {entry_id!r}" if not matches else
                                   f"{entry_id!r} is ambiguous: {', '.join(p.stem for p in matches)}")
            path = matches[0]
        rel = path.relative_to(self.repo.worktree).as_posix()
        return parse_entry_text(read_entry_file(path, rel), rel)

    def render(self, entry: Entry) -> str:
        """The file text for `entry`, keeping comments of the work tree's file if there is one."""
        path = self.path_of(entry.id)
        text = None
        if path.is_file():
            try:
                text = read_entry_file(path, self.relpath_of(entry.id))
            except EntryError:
                text = None
        return self.render_onto(text, entry)

    def render_onto(self, text: str | None, entry: Entry) -> str:
        """The file text for `entry` made from `text` (an earlier version of the file, whose
        comments and formatting are kept), or from nothing."""
        yaml = _yaml()
        doc: Any = None
        if text is not None:
            try:
                doc = yaml.load(text)
            except UNREADABLE:
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

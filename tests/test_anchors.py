from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitmem.code import anchors, grammar
from gitmem.code.anchors import Declaration, DeclarationCache, closest, declarations, find, split_anchor

FIXTURES = Path(__file__).parent / "fixtures" / "langs"

# fixture file -> (language, names that must be found, one (name, kind, first line, last line))
EXPECTED: dict[str, tuple[str, set[str], tuple[str, str, int, int]]] = {
    "sample.py": (
        "python",
        {
            "DEFAULT_PORT", "route", "route.decorator", "Flask", "Flask.Config", "Flask.Config.Loader",
            "Flask.Config.Loader.load", "Flask.Config.from_object", "Flask.__init__", "Flask.logger",
            "Flask.run", "make_app", "serve",
        },
        ("Flask.logger", "method", 33, 35),  # the decorator line belongs to the declaration
    ),
    "sample.js": (
        "javascript",
        {
            "MAX_LISTENERS", "createEmitter", "EventEmitter", "EventEmitter.constructor", "EventEmitter.on",
            "EventEmitter.emit", "EventEmitter.defaultMax", "EventEmitter.handleError", "debounce",
            "throttle", "ids",
        },
        ("debounce", "function", 39, 45),
    ),
    "sample.ts": (
        "typescript",
        {
            "User", "UserId", "Role", "Repository", "Repository.get", "Repository.save", "BaseRepository",
            "BaseRepository.get", "BaseRepository.validate", "UserRepository", "UserRepository.constructor",
            "UserRepository.validate", "UserRepository.normalize", "formatUser", "Validation",
            "Validation.isEmail", "loadUsers",
        },
        ("formatUser", "function", 49, 51),
    ),
    "sample.tsx": (
        "tsx",
        {
            "CounterProps", "Counter", "Counter.increment", "App", "ErrorBoundary",
            "ErrorBoundary.getDerivedStateFromError", "ErrorBoundary.render",
        },
        ("Counter", "function", 8, 16),
    ),
    "sample.go": (
        "go",
        {
            "DefaultCapacity", "Store", "Getter", "Getter.Get", "Key", "Stack", "New", "Store.Get",
            "Store.Put", "Key.String", "Stack.Push",
        },
        ("Store.Get", "method", 35, 43),
    ),
    "sample.rs": (
        "rust",
        {
            "MAX_SIDES", "Shape", "Shape.area", "Shape.name", "Circle", "Kind", "Circle.new", "Circle.area",
            "Circle.fmt", "Stack", "Stack.push", "total_area", "tests", "tests.circle_area",
        },
        ("Circle.fmt", "method", 36, 38),
    ),
    "Sample.java": (
        "java",
        {
            "Cart", "Cart.MAX_ITEMS", "Cart.Cart", "Cart.add", "Cart.total", "Cart.Item", "Cart.Item.Item",
            "Cart.Item.price", "Cart.Status", "Cart.Status.isFinal", "Cart.Discount", "Cart.Discount.apply",
            "Cart.Coupon",
        },
        ("Cart.Item", "class", 31, 43),
    ),
}

COMMENT = {"python": b"#"}  # every other fixture language uses //


def load(fixture: str) -> tuple[bytes, list[Declaration]]:
    language = EXPECTED[fixture][0]
    source = (FIXTURES / fixture).read_bytes()
    return source, declarations(source, language)


# --- declarations ---------------------------------------------------------


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_fixture_declarations(fixture: str) -> None:
    language, names, (name, kind, start, end) = EXPECTED[fixture]
    assert grammar.language_for_path(f"src/{fixture}") == language
    source, decls = load(fixture)
    found = {d.name for d in decls}
    assert names <= found, f"missing: {sorted(names - found)}"
    decl = find(decls, name)
    assert decl is not None
    assert (decl.kind, decl.start_line, decl.end_line) == (kind, start, end)
    # Byte offsets and line numbers describe the same span.
    assert source[: decl.start_byte].count(b"\n") + 1 == start
    assert source[: decl.end_byte].count(b"\n") + 1 == end
    # Document order, parents before children.
    assert [(d.start_byte, -d.end_byte) for d in decls] == sorted((d.start_byte, -d.end_byte) for d in decls)


def test_kinds() -> None:
    kinds = {(d.name, d.kind) for fixture in EXPECTED for d in load(fixture)[1]}
    assert {
        ("Flask", "class"), ("Flask.run", "method"), ("make_app", "function"), ("DEFAULT_PORT", "constant"),
        ("EventEmitter.handleError", "method"), ("throttle", "function"),
        ("Repository", "interface"), ("Role", "enum"), ("UserId", "type"), ("Validation", "module"),
        ("Store", "class"), ("Getter", "interface"), ("Key", "type"), ("Store.Put", "method"),
        ("Shape", "interface"), ("Kind", "enum"), ("tests", "module"), ("total_area", "function"),
        ("Cart.Status", "enum"), ("Cart.Discount", "interface"), ("Cart.MAX_ITEMS", "constant"),
    } <= kinds


def test_go_receivers_are_unstarred_and_unparameterized() -> None:
    names = {d.name for d in load("sample.go")[1]}
    assert {"Store.Get", "Stack.Push"} <= names
    assert not any("*" in n or "[" in n for n in names)


def test_java_overloaded_constructors_share_a_name() -> None:
    decls = load("Sample.java")[1]
    assert [d.start_line for d in decls if d.name == "Cart.Cart"] == [12, 16]
    assert find(decls, "Cart.Cart").start_line == 12  # find returns the first


def test_python_nesting_and_decorated_class() -> None:
    source = b"""\
@dataclass
class Outer:
    class Inner:
        @staticmethod
        def method():
            def local():
                pass
"""
    got = {d.name: (d.kind, d.start_line, d.end_line) for d in declarations(source, "python")}
    assert got == {
        "Outer": ("class", 1, 7),
        "Outer.Inner": ("class", 3, 7),
        "Outer.Inner.method": ("method", 4, 7),
        "Outer.Inner.method.local": ("function", 6, 7),
    }


def test_js_object_literal_members_and_exports() -> None:
    source = b"""\
export default function main() {}
export const api = { list() {}, create: async (x) => x, limit: 3 };
const Widget = class { render() {} };
"""
    names = [d.name for d in declarations(source, "javascript")]
    assert names == ["main", "api.list", "api.create", "Widget", "Widget.render"]


def test_rust_impl_for_generic_and_scoped_types() -> None:
    source = b"impl<T> fmt::Debug for Stack<T> { fn fmt(&self) {} }\nimpl Tr for &Bar { fn b(&self) {} }\n"
    assert [d.name for d in declarations(source, "rust")] == ["Stack.fmt", "Bar.b"]


def test_language_for_path() -> None:
    cases = {
        "a/b.py": "python", "x.pyi": "python", "m.mjs": "javascript", "c.cjs": "javascript",
        "App.JSX": "javascript", "t.mts": "typescript", "t.cts": "typescript", "v.tsx": "tsx",
        "main.go": "go", "lib.rs": "rust", "A.java": "java", "README.md": None, "Makefile": None,
    }
    assert {path: grammar.language_for_path(path) for path in cases} == cases


def test_every_language_has_a_compiling_query() -> None:
    for language in sorted(grammar.LANGUAGES):
        assert grammar.tags_query(language) is not None
        assert len(grammar.query_digest(language)) == 16
    assert grammar.query_source("typescript") in grammar.query_source("tsx")  # `; inherits:`


def test_unsupported_language_is_a_caller_error() -> None:
    with pytest.raises(ValueError):
        declarations(b"x", "cobol")


def test_importing_anchors_does_not_load_tree_sitter() -> None:
    code = "import sys, gitmem.code.anchors; print(any(m.startswith('tree_sitter') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- weird input ------------------------------------------------------------


def test_non_utf8_source() -> None:
    source = b"# -*- coding: latin-1 -*-\nNAME = 'caf\xe9'\n\ndef caf\xe9():\n    pass\n\ndef after():\n    return '\xff\xfe'\n"
    names = [d.name for d in declarations(source, "python")]
    assert "after" in names and "NAME" in names
    assert all(isinstance(n, str) for n in names)


@pytest.mark.parametrize("language", sorted(grammar.LANGUAGES))
def test_junk_never_raises(language: str) -> None:
    rng = random.Random(language)
    text_junk = bytes(rng.choice(b"abc(){}[]<>:;=,.'\"\n\t \x80\xff") for _ in range(20_000))
    assert isinstance(declarations(text_junk, language), list)
    assert declarations(os.urandom(20_000) + b"\0", language) == []  # binary: a NUL byte
    assert declarations(b"", language) == []


def test_huge_input_returns_quickly() -> None:
    source = b"def f():\n    pass\n" * (anchors.MAX_SOURCE_BYTES // 17 + 1)
    assert len(source) > anchors.MAX_SOURCE_BYTES
    started = time.perf_counter()
    assert declarations(source, "python") == []
    assert time.perf_counter() - started < 0.5


# --- fingerprints -------------------------------------------------------------

CHILD_PY = b"""\
from base import Base


class Child(Base):
    def greet(self, name):
        message = f"hello {name}"
        return message.upper()
"""

BASE_PY = b"""\
import os


class Base:
    class Mixin:
        def greet(self, name):
            message   =   f"hello {name}"
            return message.upper()
"""


def fingerprint_of(source: bytes, language: str, name: str) -> str:
    decl = find(declarations(source, language), name)
    assert decl is not None, name
    return decl.fingerprint


def test_fingerprint_survives_move_and_reindent() -> None:
    # Method moved from a subclass into a (nested) base class in another file.
    assert fingerprint_of(CHILD_PY, "python", "Child.greet") == fingerprint_of(BASE_PY, "python", "Base.Mixin.greet")


def test_fingerprint_survives_rename_but_not_body_change() -> None:
    original = fingerprint_of(CHILD_PY, "python", "Child.greet")
    renamed = CHILD_PY.replace(b"def greet", b"def salute")
    assert fingerprint_of(renamed, "python", "Child.salute") == original
    changed = CHILD_PY.replace(b"upper()", b"lower()")
    assert fingerprint_of(changed, "python", "Child.greet") != original
    # A rename of something else inside the body is a body change.
    assert fingerprint_of(CHILD_PY.replace(b"message", b"msg"), "python", "Child.greet") != original


def test_fingerprint_for_go_method_and_ts_arrow() -> None:
    go = b"package p\n\nfunc (s *Store) Get(k string) int {\n\treturn s.m[k]\n}\n"
    go_moved = b"package q\n\nimport \"fmt\"\n\n  func (s *Store) Fetch(k string) int {\n      return s.m[k]\n  }\n"
    assert fingerprint_of(go, "go", "Store.Get") == fingerprint_of(go_moved, "go", "Store.Fetch")
    ts = b"export const fmt = (u: User): string => {\n  return u.name;\n};\n"
    ts_moved = b"namespace N {\n    const format = (u: User): string => {\n        return u.name;\n    };\n}\n"
    assert fingerprint_of(ts, "typescript", "fmt") == fingerprint_of(ts_moved, "typescript", "N.format")


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_fingerprints_ignore_position_in_file(fixture: str) -> None:
    language = EXPECTED[fixture][0]
    source, decls = load(fixture)
    comment = COMMENT.get(language, b"//")
    shifted = declarations(comment + b" moved here\n\n\n" + source, language)
    assert [(d.name, d.fingerprint, d.start_line + 3) for d in decls] == [
        (d.name, d.fingerprint, d.start_line) for d in shifted
    ]
    fingerprints = [d.fingerprint for d in decls]
    assert len(set(fingerprints)) == len(fingerprints)  # distinct bodies, distinct fingerprints


# --- anchors and suggestions ---------------------------------------------------


def test_split_anchor() -> None:
    assert split_anchor("src/app.py") == ("src/app.py", None)
    assert split_anchor("src/app.py::Flask.run") == ("src/app.py", "Flask.run")
    assert split_anchor("  ./src//app.py :: Flask.run ") == ("src/app.py", "Flask.run")
    assert split_anchor("src/lib.rs::Circle::new") == ("src/lib.rs", "Circle.new")
    assert split_anchor("src/app.py::") == ("src/app.py", None)
    for bad in ("", "::Flask", "/etc/passwd", "../outside.py", "a/../../b.py", "."):
        with pytest.raises(ValueError):
            split_anchor(bad)
    assert anchors.format_anchor(*split_anchor("src/app.py::Flask.run")) == "src/app.py::Flask.run"
    assert anchors.format_anchor("src/app.py") == "src/app.py"


def test_find() -> None:
    decls = load("sample.py")[1]
    assert find(decls, "Flask.Config.Loader.load").start_line == 20
    assert find(decls, "load") is None  # only exact qualified names
    assert find([], "x") is None


def test_closest_suggestions() -> None:
    decls = load("sample.py")[1]
    assert closest("Flask.runn", decls)[0] == "Flask.run"  # typo
    assert closest("App.run", decls)[0] == "Flask.run"  # moved to another class
    assert closest("load", decls)[0] == "Flask.Config.Loader.load"  # bare last component
    assert closest("flask.config", decls)[0] == "Flask.Config"  # case
    assert closest("Flask.run", decls)[0] == "Flask.run"
    assert closest("Flsk.Config.Loader", decls, n=1) == ["Flask.Config.Loader"]
    assert len(closest("Flask.Config", decls, n=2)) == 2
    assert closest("zzzzqqq", decls) == []
    java = load("Sample.java")[1]
    assert {"Cart.Item", "Cart.Item.price"} <= set(closest("Cart.Item.cost", java, n=3))
    assert closest("Cart.totl", java)[0] == "Cart.total"
    assert closest("Cart.Status.isDone", java)[0] == "Cart.Status.isFinal"
    assert closest("Item.price", java)[0] == "Cart.Item.price"


# --- cache -----------------------------------------------------------------

BLOB = "0123456789abcdef0123456789abcdef01234567"


class Loader:
    def __init__(self, source: bytes) -> None:
        self.source, self.calls = source, 0

    def __call__(self) -> bytes:
        self.calls += 1
        return self.source


def test_cache_hit_skips_load(tmp_path: Path) -> None:
    cache = DeclarationCache(tmp_path)
    source = (FIXTURES / "sample.go").read_bytes()
    loader = Loader(source)
    first = cache.get(BLOB, "go", loader)
    assert first == declarations(source, "go") and loader.calls == 1
    again = DeclarationCache(tmp_path).get(BLOB, "go", loader)  # a new process, same directory
    assert again == first and loader.calls == 1
    # Same blob, other language: a different entry.
    cache.get(BLOB, "python", Loader(b"def f(): pass\n"))
    assert len(list(tmp_path.rglob("*.json"))) == 2
    leftovers = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".json" and p.name != ".pruned"]
    assert not leftovers  # no temp files


def _age(path: Path, days: float) -> None:
    then = time.time() - days * 86400
    os.utime(path, (then, then))


def test_cache_prunes_entries_unused_for_a_month(tmp_path: Path) -> None:
    cache = DeclarationCache(tmp_path)
    old_blob, used_blob = "a" * 40, "b" * 40
    cache.get(old_blob, "python", Loader(b"def old(): pass\n"))
    cache.get(used_blob, "python", Loader(b"def used(): pass\n"))
    old, used = cache.path_for(old_blob, "python"), cache.path_for(used_blob, "python")
    _age(old, 40)
    _age(used, 40)
    loader = Loader(b"def used(): pass\n")
    assert [d.name for d in cache.get(used_blob, "python", loader)] == ["used"] and loader.calls == 0
    assert time.time() - used.stat().st_mtime < 60  # a hit marks the entry as in use
    # A prune ran with the first miss, less than a day ago: a new miss does not walk the cache.
    cache.get("c" * 40, "python", Loader(b"def new(): pass\n"))
    assert old.exists()
    _age(tmp_path / ".pruned", 2)
    cache.get("d" * 40, "python", Loader(b"def newer(): pass\n"))
    assert not old.exists() and used.exists() and cache.path_for("c" * 40, "python").exists()
    assert cache.prune(force=True) == 0
    # A pruned entry is only a miss: parsed again when asked for.
    again = Loader(b"def old(): pass\n")
    assert [d.name for d in cache.get(old_blob, "python", again)] == ["old"] and again.calls == 1


def test_cache_key_includes_query_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = DeclarationCache(tmp_path)
    loader = Loader(b"def f(): pass\n")
    cache.get(BLOB, "python", loader)
    monkeypatch.setattr(grammar, "query_digest", lambda language: "changedquery0000")
    cache.get(BLOB, "python", loader)
    assert loader.calls == 2


@pytest.mark.parametrize("garbage", [b"", b"{not json", b'{"a": 1}', b'[["f", "function", 1]]', b"[[1,2,3,4,5,6,7]]"])
def test_cache_survives_corrupt_entry(tmp_path: Path, garbage: bytes) -> None:
    cache = DeclarationCache(tmp_path)
    path = cache.path_for(BLOB, "python")
    path.parent.mkdir(parents=True)
    path.write_bytes(garbage)
    loader = Loader(b"class A:\n    def m(self): pass\n")
    assert [d.name for d in cache.get(BLOB, "python", loader)] == ["A", "A.m"]
    assert loader.calls == 1
    assert json.loads(path.read_bytes())[1][0] == "A.m"  # rewritten
    cache.get(BLOB, "python", loader)
    assert loader.calls == 1


def test_cache_write_failure_is_not_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    loader = Loader(b"def f(): pass\n")
    assert [d.name for d in DeclarationCache(blocker).get(BLOB, "python", loader)] == ["f"]


def test_cache_rejects_non_object_ids(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        DeclarationCache(tmp_path).get("../../etc", "python", Loader(b""))

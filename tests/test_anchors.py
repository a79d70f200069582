from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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
    # the receiver's type renamed is a move of the method (as a class rename is in Python or Rust)
    renamed_type = go.replace(b"*Store", b"*Cache")
    assert fingerprint_of(go, "go", "Store.Get") == fingerprint_of(renamed_type, "go", "Cache.Get")
    assert fingerprint_of(go, "go", "Store.Get") != fingerprint_of(go.replace(b"s.m[k]", b"s.n[k]"), "go", "Store.Get")
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
    for bad in ("", "::Flask", "/etc/passwd", "../outside.py", "a/../../b.py", ".", "src/app.py::"):
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


# --- parse problems -----------------------------------------------------------


def test_parse_problem_says_why_declarations_may_be_incomplete(monkeypatch: pytest.MonkeyPatch) -> None:
    assert anchors.parse_problem(b"def f():\n    return 1\n", "python") is None
    assert anchors.parse_problem(b"", "python") is None
    # An unclosed paren in f: the recovered tree loses g, which follows it.
    broken = b"def f():\n    x = foo(1,\n    return 1\n\n\ndef g():\n    return 2\n"
    assert "g" not in {d.name for d in declarations(broken, "python")}
    assert anchors.parse_problem(broken, "python") == "syntax error at line 2"
    assert anchors.parse_problem(b"def f(:\n    return 1\n", "python") == "syntax error at line 1"  # a MISSING node
    assert anchors.parse_problem(b"export function f() {\n  return 1;\n}\n}\n", "javascript") == "syntax error at line 4"
    huge = b"def f():\n    pass\n" * (anchors.MAX_SOURCE_BYTES // 17 + 1)
    assert anchors.parse_problem(huge, "python") == "larger than 2 MiB, not parsed"
    assert anchors.parse_problem(b"\0\x01def f(): pass\n", "python") == "binary content, not parsed"
    junk = bytes(random.Random(7).choice(b"abc(){}[]<>:;=,.'\"\n\t ") for _ in range(200_000))
    monkeypatch.setattr(anchors, "PARSE_TIMEOUT_S", 0.000001)
    assert anchors.parse_problem(junk, "python") == "the parser gave up (time limit 1e-06 s)"
    assert declarations(junk, "python") == []
    with pytest.raises(ValueError):
        anchors.parse_problem(b"x", "cobol")


def _collapsed(text: bytes) -> bytes:
    return b" ".join(text.split())


def test_rename_evidence_is_the_words_beyond_the_language_s_own() -> None:
    from gitmem.githooks.recheck import _alike

    # Same shape, different subject: no evidence, in any language.
    assert _alike(b"def \0(self): return self._email", "python", b"def \0(self): return self._name", "python") == 0
    getter = b"get \0(): string { return this._%s; }"
    assert _alike(getter % b"email", "typescript", getter % b"name", "typescript") == 0
    # Renamed and edited: most of the old words kept, in order (a body that grew keeps them all).
    total = _collapsed(b"\0(items: Item[]): number { let total = 0; for (const item of items) "
                    b"{ total += item.price * item.qty; } return total; }")
    discounted = total.replace(b"): number", b", discount = 0): number").replace(
        b"return total;", b"return total * (1 - discount);")
    assert _alike(total, "typescript", discounted, "typescript") > 0.8
    get = _collapsed(b"func (s *Store) \0(k string) (int, error) { v, ok := s.m[k]; if !ok { return 0, ErrMissing }; return v, nil }")
    locked = get.replace(b"{ v, ok", b"{ s.mu.Lock(); defer s.mu.Unlock(); v, ok")
    assert _alike(get, "go", locked, "go") > 0.7
    assert _alike(get, "go", b"func (s *Store) \0(k string) (int, error) { return len(k), nil }", "go") == 0


# --- re-checks through the installed git hooks ----------------------------------
# Real commits in a real repository: the pre-commit hook re-checks the anchors the commit touches.

USER_PY = """\
class User:
    def get_name(self):
        return self._name

    def get_email(self):
        return self._email
"""

# Longer bodies that differ in one word: alike enough that, on their own, the deleted one would
# pass for a renamed and edited version of the other.
PROFILE_PY = """\
class Profile:
    def get_name(self):
        value = self._data.get("name")
        return value.strip()

    def get_email(self):
        value = self._data.get("email")
        return value.strip()
"""


def _anchor(repo: Any, body: str, anchor: str) -> str:
    return str(repo.gitmem("add", "law", body, "--anchor", anchor).stdout.split()[0])


def _commit(repo: Any, message: str, files: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Write `files`, stage everything and `git commit` through the hooks; the commit must succeed."""
    for rel, text in (files or {}).items():
        repo.write(rel, text)
    repo.git("add", "-A")
    proc = subprocess.run(["git", "commit", "-q", "-m", message], cwd=repo.path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert repo.git("log", "-1", "--format=%s").strip() == message
    return proc


def _entry_files(repo: Any) -> list[str]:
    return [f for f in repo.git("show", "--name-only", "--format=", "HEAD").split() if f.startswith(".gitmem/")]


@pytest.mark.parametrize(("source", "cls"), [(USER_PY, "User"), (PROFILE_PY, "Profile")])
def test_deleting_a_method_while_renaming_its_sibling_retires_it(repo: Any, source: str, cls: str) -> None:
    repo.with_gitmem({"src/user.py": source})
    name = _anchor(repo, "get_name must never return None", f"src/user.py::{cls}.get_name")
    email = _anchor(repo, "get_email leaks PII into logs", f"src/user.py::{cls}.get_email")
    renamed = source.split("    def get_email")[0].rstrip() + "\n"
    repo.write("src/user.py", renamed.replace("def get_name", "def display_name"))
    out = _commit(repo, "rename get_name -> display_name; remove get_email").stderr
    entries = repo.entries()
    assert entries[name]["status"] == "active"
    assert entries[name]["anchor"] == f"src/user.py::{cls}.display_name"
    # display_name is where get_name went (same body): get_email cannot follow it there.
    assert entries[email]["status"] == "revoked", entries[email]
    assert f"`{cls}.get_email` was removed from src/user.py" in entries[email]["revocation"]["reason"]
    assert f"retired {email}" in out and f"reanchored {name}" in out


def test_a_short_new_sibling_is_not_a_renamed_deleted_method(repo: Any) -> None:
    # get_email deleted, get_phone added: the same shape (`return self._...`) and 88% alike
    # character by character, but nothing beyond the shape in common.
    repo.with_gitmem({"src/user.py": USER_PY})
    email = _anchor(repo, "get_email leaks PII into logs", "src/user.py::User.get_email")
    repo.write("src/user.py", USER_PY.replace("get_email", "get_phone").replace("_email", "_phone"))
    _commit(repo, "phone instead of email")
    assert repo.entries()[email]["status"] == "revoked"


def test_a_renamed_and_edited_function_is_still_reanchored(repo: Any) -> None:
    source = "def retry(fn, attempts=3):\n    for _ in range(attempts):\n        fn()\n\n\ndef other():\n    return 1\n"
    repo.with_gitmem({"src/net.py": source})
    entry = _anchor(repo, "retry hammers the API", "src/net.py::retry")
    repo.write("src/net.py", source.replace(
        "def retry(fn, attempts=3):", "def retry_call(fn, attempts=5, delay=0.1):").replace(
        "        fn()\n", "        fn()\n        time.sleep(delay)\n"))
    _commit(repo, "retry -> retry_call, with a delay")
    moved = repo.entries()[entry]
    assert moved["status"] == "active" and moved["anchor"] == "src/net.py::retry_call"


def test_one_new_method_like_two_deleted_ones_is_neither(repo: Any) -> None:
    # Two deleted methods nearly alike, one new method like both: neither is clearly the one
    # renamed, so it takes neither entry (before, both entries moved onto it).
    source = """\
class Cart:
    def total(self, items):
        amount = 0
        for item in items:
            amount += item.price * item.quantity
        return round(amount, 2)

    def net_total(self, items):
        amount = 0
        for item in items:
            amount += item.net_price * item.quantity
        return round(amount, 2)
"""
    repo.with_gitmem({"src/cart.py": source})
    total = _anchor(repo, "total includes tax", "src/cart.py::Cart.total")
    net = _anchor(repo, "net_total excludes tax", "src/cart.py::Cart.net_total")
    repo.write("src/cart.py", """\
class Cart:
    def sum_prices(self, items):
        amount = 0
        for item in items:
            amount += item.gross_price * item.quantity
        return round(amount, 2)
""")
    _commit(repo, "one way to add up")
    entries = repo.entries()
    assert entries[total]["status"] == entries[net]["status"] == "revoked"


def test_two_methods_renamed_and_edited_each_follow_their_own(repo: Any) -> None:
    source = """\
class Store:
    def load(self, key):
        path = self.root / key
        with open(path) as handle:
            return json.load(handle)

    def save(self, key, value):
        path = self.root / key
        write_atomic(path, json.dumps(value))
        self.saved.append(key)
"""
    repo.with_gitmem({"src/store.py": source})
    load = _anchor(repo, "load must not create files", "src/store.py::Store.load")
    save = _anchor(repo, "save is atomic", "src/store.py::Store.save")
    repo.write("src/store.py", source.replace("def load(self, key)", "def read(self, key, default=None)").replace(
        "def save(self, key, value)", "def write(self, key, value)").replace(
        "self.saved.append(key)", "self.saved.append(key)\n        self.dirty = True"))
    _commit(repo, "load/save -> read/write")
    entries = repo.entries()
    assert entries[load]["anchor"] == "src/store.py::Store.read"
    assert entries[save]["anchor"] == "src/store.py::Store.write"


APP_PY = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
BROKEN_F = "def f():\n    x = foo(1,\n    return 1\n\n\ndef g():\n    return 2\n"  # the unclosed paren hides g


def test_a_syntax_error_that_hides_a_declaration_retires_nothing(repo: Any) -> None:
    repo.with_gitmem({"src/app.py": APP_PY})
    entry = _anchor(repo, "g is slow", "src/app.py::g")
    before = repo.entries()[entry]
    err = _commit(repo, "wip", {"src/app.py": BROKEN_F}).stderr
    notes = [line for line in err.splitlines() if "does not parse cleanly" in line]
    assert notes == ["gitmem: src/app.py does not parse cleanly (syntax error at line 2); 1 entry anchored "
                     "there is left as it is, to be re-checked at the next commit that changes it"]
    assert _entry_files(repo) == []  # the commit carries no entry change
    assert repo.entries()[entry] == before
    _commit(repo, "fix typo", {"src/app.py": BROKEN_F.replace("foo(1,", "foo(1)")})
    assert repo.entries()[entry] == before
    assert repo.git("status", "--porcelain") == ""


def test_a_removal_in_a_file_that_does_not_parse_waits_for_a_clean_commit(repo: Any) -> None:
    repo.with_gitmem({"src/app.py": APP_PY})
    entry = _anchor(repo, "g is slow", "src/app.py::g")
    # g really is removed, but the file does not parse: that parse cannot tell.
    _commit(repo, "wip: drop g", {"src/app.py": "def f():\n    x = foo(1,\n    return 1\n"})
    assert repo.entries()[entry]["status"] == "active"
    _commit(repo, "fix typo", {"src/app.py": "def f():\n    x = foo(1)\n    return 1\n"})
    retired = repo.entries()[entry]
    assert retired["status"] == "revoked"
    assert "`g` was removed from src/app.py" in retired["revocation"]["reason"]


def test_a_syntax_error_elsewhere_in_the_file_keeps_a_declaration_it_did_not_hide(repo: Any) -> None:
    repo.with_gitmem({"src/app.py": APP_PY})
    f = _anchor(repo, "f is pure", "src/app.py::f")
    g = _anchor(repo, "g is slow", "src/app.py::g")
    # Before f, so the full re-check runs (an edit after g cannot change how f and g parse).
    err = _commit(repo, "wip: h", {"src/app.py": "def h(:\n    pass\n\n\n" + APP_PY}).stderr
    assert "does not parse cleanly" not in err  # f and g are both still found: nothing to re-check
    entries = repo.entries()
    assert entries[f]["status"] == entries[g]["status"] == "active"


def test_a_file_over_the_size_cap_retires_nothing(repo: Any) -> None:
    repo.with_gitmem({"src/app.py": APP_PY})
    entry = _anchor(repo, "g is slow", "src/app.py::g")
    table = "".join(f"ROW_{i} = {i}\n" for i in range(anchors.MAX_SOURCE_BYTES // 10))
    err = _commit(repo, "add a generated table", {"src/app.py": table + APP_PY}).stderr
    assert "gitmem: src/app.py does not parse cleanly (larger than 2 MiB, not parsed)" in err
    assert repo.entries()[entry]["status"] == "active"


def test_a_renamed_file_that_does_not_parse_keeps_the_entry_on_its_new_path(repo: Any) -> None:
    repo.with_gitmem({"src/app.py": APP_PY})
    entry = _anchor(repo, "g is slow", "src/app.py::g")
    repo.git("mv", "src/app.py", "src/core.py")
    repo.write("src/core.py", BROKEN_F)
    _commit(repo, "move and break")
    moved = repo.entries()[entry]
    # Git says where the file went; whether g is still in it waits for a clean parse.
    assert moved["status"] == "active" and moved["anchor"] == "src/core.py::g"
    repo.write("src/core.py", APP_PY.replace("return 2", "return 3"))
    _commit(repo, "fix")
    assert repo.entries()[entry]["anchor"] == "src/core.py::g"


def test_a_merge_bringing_in_a_file_that_does_not_parse_retires_nothing(repo: Any) -> None:
    repo.with_gitmem({"src/app.py": APP_PY, "README.md": "demo\n"})
    entry = _anchor(repo, "g is slow", "src/app.py::g")
    repo.git("checkout", "-q", "-b", "wip")
    repo.write("src/app.py", BROKEN_F)
    repo.git("commit", "-q", "--no-verify", "-am", "wip without hooks")
    repo.git("checkout", "-q", "main")
    repo.write("README.md", "diverge\n")
    _commit(repo, "docs")
    proc = subprocess.run(["git", "merge", "-q", "--no-edit", "wip"], cwd=repo.path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "gitmem: src/app.py does not parse cleanly (syntax error at line 2)" in proc.stderr
    assert repo.git("log", "-1", "--format=%s").startswith("Merge branch 'wip'")  # no follow-up commit
    assert repo.entries()[entry]["status"] == "active"

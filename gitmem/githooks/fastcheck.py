"""pre-commit's fast answer: a commit that touches an anchored file but none of its anchors.

The stub starts Python only when the staged change touches a file an entry is anchored to. Most
such commits edit that file somewhere else: then no entry changes, and the full re-check (which
imports tree-sitter and parses the staged file) is not needed. This module proves that case
with the standard library, one `git diff-index` and one `git cat-file`:

- every anchored file the change touches is modified in place (no deletion, rename or type
  change, which need the full re-check);
- for each declaration an entry is anchored to, the declarations of the file as committed are
  in the blob-keyed declaration cache (gitmem.code.anchors.DeclarationCache), and the staged
  file is byte-identical to the committed one up to the end of the top-level declaration that
  holds it: a change after a complete top-level declaration cannot change how it parses.

Then nothing is to be done, and the staged file is parsed afterwards, in a detached process,
into the same cache (so the next commit finds it there); the commit never waits for that.
Otherwise, or on any doubt or error, the full re-check runs (gitmem.githooks.on_commit).

The stub runs this with `python -I -S` and gitmem's own folder on sys.path: no site-packages scan
(an editable install's finder alone costs ≈ 30 ms), no subprocess or pathlib import (git runs
through posix_spawn). The full re-check is exec'd with the ordinary interpreter setup. Where
posix_spawn is missing (native Windows Python) git and the detached warm-up run through
subprocess, and the full re-check is waited for rather than exec'd.
"""

from __future__ import annotations

import contextlib
import os
import sys

from gitmem.base import fastjson
from gitmem.base.signature import committed_part, store_signature
from gitmem.githooks import STAGED_BY_PRE_COMMIT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CACHE_VERSION = 2  # gitmem.code.anchors._CACHE_VERSION
TRANSACTION = "transaction.json"  # gitmem.store.commit.JOURNAL
EXTENSIONS = {".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript",
              ".cjs": "javascript", ".jsx": "javascript", ".ts": "typescript", ".mts": "typescript",
              ".cts": "typescript", ".tsx": "tsx", ".go": "go", ".rs": "rust", ".java": "java"}


def _language(path: str) -> str | None:
    return EXTENSIONS.get(os.path.splitext(path)[1].lower())


def _fresh(index: dict[str, Any], worktree: str) -> bool:
    """The compiled index was built from the entry files and config as they are now (the
    signature gitmem.store.index keys it on; pending changes do not matter to the hooks)."""
    stats = index.get("stats")
    return isinstance(stats, list) and committed_part(stats) == store_signature(worktree)


def _anchors(worktree: str, local_state: str) -> dict[str, list[str]] | None:
    """{file: [symbols]} of the active committed entries, from this worktree's compiled index."""
    index = fastjson.read_file(os.path.join(local_state, "index.json"))
    if not isinstance(index, dict) or not _fresh(index, worktree) or index.get("half_edited"):
        return None  # (an entry left half-edited: its staged version's anchor is not listed)
    anchored = index.get("anchored")  # gitmem.store.index.anchored_files
    return anchored if isinstance(anchored, dict) else None


def _cached_declarations(cache_dir: str, blob: str, language: str, digest: str) -> list[list[Any]] | None:
    path = os.path.join(cache_dir, blob[:2], f"{blob[2:]}-{language}-{digest}-v{CACHE_VERSION}.json")
    rows = fastjson.read_file(path)
    return rows if isinstance(rows, list) else None


SPAWN = hasattr(os, "posix_spawnp")  # False on native Windows: subprocess there (_git_subprocess, _detached)


def _git(worktree: str, args: list[str], data: bytes = b"") -> bytes | None:
    """git's standard output, or None when it fails. posix_spawn: no subprocess import (≈ 8 ms)."""
    if not SPAWN:
        return _git_subprocess(worktree, args, data)
    out_r, out_w = os.pipe()
    in_r, in_w = os.pipe()
    null = os.open(os.devnull, os.O_WRONLY)
    here = os.getcwd()
    try:
        os.chdir(worktree)
        pid = os.posix_spawnp("git", ["git", *args], dict(os.environ), file_actions=[
            (os.POSIX_SPAWN_DUP2, in_r, 0), (os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, null, 2)])
    finally:
        os.chdir(here)
        os.close(in_r)
        os.close(out_w)
        os.close(null)
    try:
        if data:
            os.write(in_w, data)  # a few object ids: fits in the pipe
    finally:
        os.close(in_w)
    chunks = []
    while True:
        chunk = os.read(out_r, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(out_r)
    _, status = os.waitpid(pid, 0)
    return b"".join(chunks) if os.waitstatus_to_exitcode(status) == 0 else None


def _git_subprocess(worktree: str, args: list[str], data: bytes) -> bytes | None:
    """_git() where os.posix_spawnp is missing (native Windows)."""
    import subprocess

    try:
        done = subprocess.run(["git", *args], cwd=worktree, input=data, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


def _detached(argv: list[str]) -> None:
    """Start `argv` detached, its standard streams on the null device (no posix_spawn here)."""
    import subprocess

    options: dict[str, Any] = {"start_new_session": True}
    if sys.platform == "win32":
        options = {"creationflags": subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP}
    subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     close_fds=True, **options)


def _blobs(worktree: str, ids: list[str]) -> dict[str, bytes] | None:
    out = _git(worktree, ["cat-file", "--batch"], ("\n".join(ids) + "\n").encode())
    if out is None:
        return None
    pos, found = 0, {}
    for blob in ids:
        eol = out.index(b"\n", pos)
        header = out[pos:eol].split()
        pos = eol + 1
        if len(header) < 3 or header[1] != b"blob":
            return None
        size = int(header[2])
        found[blob] = out[pos:pos + size]
        pos += size + 1
    return found


def untouched(worktree: str, git_dir: str, common_dir: str) -> tuple[bool, list[tuple[str, str]]]:
    """(True, staged blobs to cache) when no anchor of an entry can be affected by the staged change."""
    anchors = _anchors(worktree, os.path.join(git_dir, "gitmem"))
    if not anchors:
        return False, []
    with contextlib.suppress(OSError):
        if os.path.getsize(os.path.join(git_dir, "gitmem", STAGED_BY_PRE_COMMIT)):
            return False, []  # an earlier commit was never made: the full pre-commit takes its changes back
    if os.path.exists(os.path.join(git_dir, "gitmem", TRANSACTION)):
        return False, []  # a gitmem commit whose work tree was never written: the full pre-commit keeps its entries
    added = _git(worktree, ["diff-index", "--cached", "--name-only", "--diff-filter=AM", "HEAD", "--",
                            ".gitmem/entries"])
    if added is None or added.strip():
        return False, []  # an entry file the commit adds or changes is checked where it lands: the full re-check
    specs = [":(literal)" + p for p in anchors]
    raw = _git(worktree, ["diff-index", "--cached", "-z", "--no-renames", "HEAD", "--", *specs])
    if raw is None:
        return False, []
    fields = raw.decode("utf-8", "surrogateescape").split("\0")
    changed: list[tuple[str, str, str]] = []
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        parts = meta.lstrip(":").split()
        if len(parts) < 5 or parts[4] != "M" or parts[0] != parts[1]:
            return False, []  # added, deleted or a mode change: the full re-check
        changed.append((path, parts[2], parts[3]))
    cache_dir = os.path.join(common_dir, "gitmem", "decl-cache")
    todo: list[tuple[str, str, str, list[list[Any]], list[str]]] = []
    warm: list[tuple[str, str]] = []
    digests: dict[str, str] = {}
    for path, old, new in changed:
        symbols = anchors.get(path) or []
        if not symbols:
            continue  # anchored to the whole file: modifying it changes nothing
        language = _language(path)
        if language is None:
            return False, []
        if language not in digests:
            digest = query_digest(language)
            if digest is None:
                return False, []
            digests[language] = digest
        rows = _cached_declarations(cache_dir, old, language, digests[language])
        if rows is None:
            return False, []
        todo.append((path, old, new, rows, symbols))
        if _cached_declarations(cache_dir, new, language, digests[language]) is None:
            warm.append((new, language))
    if not todo:
        return True, warm
    contents = _blobs(worktree, [b for _, old, new, _, _ in todo for b in (old, new)])
    if contents is None:
        return False, []
    for _path, old, new, rows, symbols in todo:
        before, after = contents[old], contents[new]
        same = _common_prefix(before, after)
        for symbol in symbols:
            decl = next((r for r in rows if r[0] == symbol), None)
            if decl is None:
                return False, []
            start, end = decl[4], decl[5]
            top_end = max(r[5] for r in rows if r[4] <= start and r[5] >= end)
            if same < top_end or len(after) < top_end:
                return False, []
    return True, warm


def query_digest(language: str) -> str | None:
    """gitmem.code.grammar.query_digest without its imports (pathlib, re, importlib): the key the
    declaration cache files results under. None when it cannot be computed the same way."""
    import hashlib

    grammars = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "code", "grammars")

    def source(name: str, depth: int = 0) -> str:
        with open(os.path.join(grammars, f"{name}-tags.scm"), encoding="utf-8") as handle:
            text = handle.read()
        parents = ""
        for line in text.split("\n"):  # `; inherits: NAME` prepends that language's query
            rest = line.strip()[1:].strip() if line.strip().startswith(";") else ""
            name = rest[len("inherits:"):].strip() if rest.startswith("inherits:") else ""
            if depth < 5 and name.isidentifier():
                parents += source(name, depth + 1) + "\n"
        return parents + text

    build = "unknown"
    for folder in sys.path:
        package = os.path.join(folder or ".", "tree_sitter_languages")
        if os.path.exists(os.path.join(package, "__init__.py")):
            try:
                st = os.stat(os.path.join(package, "languages.so"))
                build = f"{st.st_size}:{st.st_mtime_ns}"
            except OSError:
                pass
            break
    else:
        return None
    try:
        text = f"{build}\0{source(language)}"
    except OSError:
        return None
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def _common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    lo, hi = 0, n
    while lo < hi:  # binary search over slices: C-speed comparisons
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def warm_in_background(worktree: str, blobs: list[tuple[str, str]]) -> None:
    """Parse the staged blobs into the declaration cache after the commit, in a detached process."""
    if not blobs:
        return
    args = [f"{blob}:{language}" for blob, language in blobs]
    if not SPAWN:
        _detached([sys.executable, "-I", "-m", "gitmem.githooks.fastcheck", "--warm", *args])
        return
    null = os.open(os.devnull, os.O_RDWR)
    try:
        os.posix_spawn(sys.executable, [sys.executable, "-I", "-m", "gitmem.githooks.fastcheck", "--warm", *args],
                       dict(os.environ), setsid=True, file_actions=[
                           (os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1),
                           (os.POSIX_SPAWN_DUP2, null, 2)])
    finally:
        os.close(null)


def _warm(args: list[str]) -> int:
    from pathlib import Path

    from gitmem import git
    from gitmem.base.paths import find_repo
    from gitmem.code.anchors import DeclarationCache

    repo = find_repo()
    cache = DeclarationCache(Path(repo.state) / "decl-cache")
    for arg in args:
        blob, _, language = arg.partition(":")
        data = git.read_blobs(repo.worktree, [blob]).get(blob, b"")
        cache.get(blob, language, lambda data=data: data)  # type: ignore[misc]
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--warm"]:
        try:
            return _warm(argv[1:])
        except Exception:
            return 0
    try:
        from gitmem.base.locate import locate

        where = locate(os.getcwd())
        if where is not None:
            ok, warm = untouched(*where)
            if ok:
                warm_in_background(where[0], warm)
                return 0
    except Exception:
        pass  # any doubt: the full re-check decides
    if sys.flags.no_site:  # started by the stub without site-packages: the full re-check needs them
        command = [sys.executable, "-I", "-m", "gitmem.githooks.on_commit", "pre-commit", *argv]
        if not SPAWN:  # Windows: execv starts a new process and returns at once; git must wait for it
            import subprocess

            return subprocess.call(command)
        os.execv(sys.executable, command)
    from gitmem.githooks import on_commit

    return on_commit.main(["pre-commit", *argv])


if __name__ == "__main__":
    sys.exit(main())

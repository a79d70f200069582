"""Every call to the git command line lives here.

Hooks run inside `git commit`, so these calls deliberately keep git's environment
(GIT_INDEX_FILE in particular: `git commit -a` and `git commit PATH` use a temporary
index, and the staged content we must check is in that one). Paths go NUL-separated.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.errors import GitmemError

if TYPE_CHECKING:
    from gitmem.base.paths import RepoPaths

NULL_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


class GitError(GitmemError):
    pass


def git(repo: Path, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
    proc = subprocess.run(["git", *args], cwd=repo, input=input, capture_output=True)
    if check and proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"git {' '.join(args[:3])} failed: {message}")
    return proc.stdout


def git_text(repo: Path, *args: str, check: bool = True) -> str:
    return git(repo, *args, check=check).decode("utf-8", "replace").strip()


@dataclass(frozen=True, slots=True)
class Change:
    status: str            # A, M, D, R (rename), C, T
    path: str              # path after the change
    old_path: str | None   # path before, for renames and deletions


def _parse_name_status(raw: bytes) -> list[Change]:
    parts = raw.decode("utf-8", "surrogateescape").split("\0")
    changes: list[Change] = []
    i = 0
    while i < len(parts) and parts[i]:
        status = parts[i][0]
        if status in "RC":
            changes.append(Change(status, parts[i + 2], parts[i + 1]))
            i += 3
        else:
            path = parts[i + 1]
            changes.append(Change(status, path, path if status == "D" else None))
            i += 2
    return changes


def staged_changes(repo: Path) -> list[Change]:
    """What the commit being made changes, renames detected."""
    head = "HEAD" if has_head(repo) else NULL_TREE
    return _parse_name_status(git(repo, "diff", "--cached", "--name-status", "-M", "-z", "--no-ext-diff", head))


def changes_between(repo: Path, base: str, head: str) -> list[Change]:
    return _parse_name_status(git(repo, "diff", "--name-status", "-M", "-z", "--no-ext-diff", base, head))


def has_head(repo: Path) -> bool:
    return git(repo, "rev-parse", "--verify", "-q", "HEAD", check=False).strip() != b""


def left_out_by_sparse_checkout(repo: RepoPaths, folder: str) -> bool:
    """Whether a sparse checkout keeps committed files under `folder` out of the work tree: git
    marks them skip-worktree and they are not there (a file marked so by hand, to keep a local
    change, is). One git call, and only where a sparse checkout was ever set up."""
    if not any((d / "info" / "sparse-checkout").is_file() for d in (repo.git_dir, repo.common_dir)):
        return False
    listed = git(repo.worktree, "ls-files", "-t", "-z", "--", folder, check=False)
    return any(item.startswith(b"S ") and not (repo.worktree / os.fsdecode(item[2:])).exists()
               for item in listed.split(b"\0"))


def checks_out_crlf(repo: Path, rel: str) -> bool:
    """Whether git writes `rel` to the work tree with CRLF line ends: its `eol=crlf` attribute, or
    text (by attribute, or by detection) with core.autocrlf=true or core.eol=crlf. A file gitmem
    creates there in LF is one `git add` refuses under core.safecrlf=true."""
    out = git(repo, "check-attr", "-z", "text", "eol", "--", rel, check=False).split(b"\0")
    attrs = {out[i + 1]: out[i + 2] for i in range(0, len(out) - 2, 3)}
    eol, text = attrs.get(b"eol"), attrs.get(b"text")
    if eol in (b"crlf", b"lf") or text == b"unset":
        return eol == b"crlf"
    if config_get(repo, "core.autocrlf") == "true":
        return True
    return text in (b"set", b"auto") and config_get(repo, "core.eol") == "crlf"


def as_checked_out(repo: Path, rel: str, text: str) -> str:
    """`text` (LF, as git stores it) for a file gitmem creates at `rel`: with CRLF line ends where
    git checks the file out so (checks_out_crlf), else as it is."""
    return text.replace("\n", "\r\n") if "\r" not in text and checks_out_crlf(repo, rel) else text


def rev_parse(repo: Path, rev: str) -> str | None:
    out = git(repo, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}", check=False).strip()
    return out.decode() or None


def index_blob_ids(repo: Path, paths: Iterable[str]) -> dict[str, str]:
    """Blob id of each path as staged (stage 0); absent paths are missing from the result."""
    paths = list(paths)
    if not paths:
        return {}
    return _parse_ls_files(git(repo, "ls-files", "-s", "-z", "--", *paths))


def index_blob_ids_of(repo: RepoPaths, paths: Iterable[str]) -> dict[str, str]:
    """index_blob_ids() of the worktree's own index (`<git dir>/index`), whatever GIT_INDEX_FILE
    a running `git commit` exported."""
    import os

    paths = list(paths)
    if not paths:
        return {}
    env = {**env_without_index(), "GIT_INDEX_FILE": os.fspath(repo.git_dir / "index")}
    proc = run(repo.worktree, "ls-files", "-s", "-z", "--", *paths, env=env)
    if proc.returncode != 0:
        raise GitError("git ls-files failed: " + proc.stderr.decode("utf-8", "replace").strip())
    return _parse_ls_files(proc.stdout)


def _parse_ls_files(out: bytes) -> dict[str, str]:
    result: dict[str, str] = {}
    for record in out.decode("utf-8", "surrogateescape").split("\0"):
        if not record:
            continue
        meta, _, path = record.partition("\t")
        mode, blob, stage = meta.split()
        if stage == "0" and mode != "160000":
            result[path] = blob
    return result


def tree_blob_ids(repo: Path, rev: str, paths: Iterable[str] | None = None) -> dict[str, str]:
    """Blob id of each path in commit `rev` (all files when `paths` is None)."""
    args = ["ls-tree", "-r", "-z", rev]
    if paths is not None:
        paths = list(paths)
        if not paths:
            return {}
        args += ["--", *paths]
    out = git(repo, *args)
    result: dict[str, str] = {}
    for record in out.decode("utf-8", "surrogateescape").split("\0"):
        if not record:
            continue
        meta, _, path = record.partition("\t")
        _mode, kind, blob = meta.split()
        if kind == "blob":
            result[path] = blob
    return result


def read_blobs(repo: Path, blob_ids: Iterable[str]) -> dict[str, bytes]:
    """Contents of many blobs through one `git cat-file --batch` process."""
    ids = list(dict.fromkeys(blob_ids))
    if not ids:
        return {}
    out = git(repo, "cat-file", "--batch", input=("\n".join(ids) + "\n").encode())
    result: dict[str, bytes] = {}
    pos = 0
    for blob_id in ids:
        eol = out.index(b"\n", pos)
        header = out[pos:eol].split()
        pos = eol + 1
        if len(header) < 3 or header[1] == b"missing":
            continue
        size = int(header[2])
        result[blob_id] = out[pos:pos + size]
        pos += size + 1
    return result


def stage(repo: Path, paths: Iterable[str]) -> None:
    paths = list(paths)
    if paths:
        git(repo, "add", "--", *paths)


OPERATION_MARKERS = (
    ("MERGE_HEAD", "merge"),
    ("rebase-merge", "rebase"),
    ("rebase-apply/applying", "am"),
    ("rebase-apply", "rebase"),
    ("CHERRY_PICK_HEAD", "cherry-pick"),
    ("REVERT_HEAD", "revert"),
    ("sequencer", "cherry-pick or revert"),
    ("BISECT_LOG", "bisect"),
)


def operation_in_progress(git_dir: Path, ignore: Iterable[str] = ()) -> str | None:
    """A merge, rebase, am, cherry-pick, revert or bisect that a commit of ours would interfere
    with (its name), or None. `ignore`: operations that are finishing (the hook of a merge runs
    while MERGE_HEAD is still in place)."""
    skip = set(ignore)
    for name, what in OPERATION_MARKERS:
        if what not in skip and (git_dir / name).exists():
            return what
    return None


def env_without_index() -> dict[str, str]:
    """The environment for git commands that must see the repository's own index, not the
    temporary one a running `git commit` exported to its hooks."""
    import os

    return {k: v for k, v in os.environ.items() if k != "GIT_INDEX_FILE"}


def run(repo: Path, *args: str, input: bytes | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """git with an explicit environment; never raises for git's exit status."""
    return subprocess.run(["git", *args], cwd=repo, input=input, capture_output=True, env=env)


def refresh_index(repo: Path, paths: Iterable[str]) -> None:
    """Record the work-tree files' stat data for `paths` in the index (GIT_INDEX_FILE's, in a hook):
    an entry written with `update-index --index-info` has none, and git then reads a clean file as
    changed (`git diff-index`, `git apply --index`, sparse checkout). Only for files whose content
    is the index's: for an entry without stat data, git's refresh stages the work tree's content.
    Best effort: a git holding the index lock this instant leaves it for git's own next refresh."""
    paths = list(paths)
    if paths:
        subprocess.run(["git", "update-index", "-q", "--refresh", "--", *paths], cwd=repo, capture_output=True)


def update_ref(repo: Path, ref: str, new: str, old: str, message: str) -> str | None:
    """Move `ref` to `new` only if it still points at `old` (compare-and-swap; git takes the
    ref's .lock itself and fails if another process holds it). Returns git's complaint, or None.
    git runs in a process group of its own: the developer's Ctrl-C, sent to the terminal's group,
    must not stop it between moving the ref and saying so (gitmem holds it meanwhile)."""
    import sys

    proc = subprocess.run(["git", "update-ref", "-m", message, ref, new, old], cwd=repo, capture_output=True,
                          process_group=None if sys.platform == "win32" else 0)
    if proc.returncode == 0:
        return None
    return proc.stderr.decode("utf-8", "replace").strip() or f"git update-ref exited {proc.returncode}"


def config_get(repo: Path, key: str) -> str | None:
    out = git(repo, "config", "--get", key, check=False).decode().strip()
    return out or None


def config_set(repo: Path, key: str, value: str) -> None:
    git(repo, "config", key, value)


def config_unset(repo: Path, key: str) -> None:
    git(repo, "config", "--unset-all", key, check=False)


def merge_driver_command(python: str, module: str, args: str = "%O %A %B") -> str:
    """A merge driver's command line (git runs it with sh): gitmem's `module` while the interpreter
    `gitmem init` recorded is there and still has gitmem; once either is gone (the virtual
    environment removed or moved, gitmem uninstalled from it), git's own 3-way text merge with the
    usual conflict markers, so a merge never "conflicts" with only our side in the file and no
    markers."""
    # One interpreter start per file (a merge may bring hundreds): it exits 97 when the driver
    # cannot be imported (gitmem gone, another version without it, a broken dependency).
    code = (f"import sys\ntry:\n    from {module} import main\nexcept Exception:\n    sys.exit(97)\n"
            "sys.exit(main(sys.argv[1:]))")
    return (f"p={shlex.quote(python)}; if [ -x \"$p\" ]; then \"$p\" -I -c '{code}' {args}; rc=$?; "
            "[ $rc -eq 97 ] || exit $rc; fi; "
            "git merge-file -q -L ours:%P -L base:%P -L theirs:%P --marker-size=%L %A %O %B")


def set_merge_driver(repo: RepoPaths, name: str, command: str, description: str,
                     attributes: Sequence[str]) -> bool:
    """Configure the merge driver `name` (its command, its description) and add the `attributes`
    lines (each ending in a newline) to the machine-local .git/info/attributes; True when the
    driver's command changed."""
    changed = config_get(repo.worktree, f"merge.{name}.driver") != command
    if changed:
        config_set(repo.worktree, f"merge.{name}.driver", command)
        config_set(repo.worktree, f"merge.{name}.name", description)
    info = repo.common_dir / "info" / "attributes"
    lines = info.read_text(encoding="utf-8").splitlines(keepends=True) if info.exists() else []
    missing = [line for line in attributes if line not in lines]
    if missing:
        info.parent.mkdir(parents=True, exist_ok=True)
        separator = "\n" if lines and not lines[-1].endswith("\n") else ""
        if not info.exists() or separator:  # what uninstall undoes, to give the file back as it was
            config_set(repo.worktree, INFO_ATTRIBUTES_KEY, "created" if not info.exists() else "newline")
        info.write_text("".join(lines) + separator + "".join(missing), encoding="utf-8")
    return changed


INFO_ATTRIBUTES_KEY = "gitmem.infoAttributes"  # set_merge_driver created .git/info/attributes, or ended its last line


def unset_merge_driver(repo: RepoPaths, name: str, attributes: Sequence[str]) -> bool:
    """Remove the merge driver `name` and its `attributes` lines; True when the driver was set."""
    was_set = bool(config_get(repo.worktree, f"merge.{name}.driver"))
    if was_set:
        git(repo.worktree, "config", "--remove-section", f"merge.{name}", check=False)
    info = repo.common_dir / "info" / "attributes"
    if info.exists():
        lines = info.read_text(encoding="utf-8").splitlines(keepends=True)
        kept = [line for line in lines if line not in attributes]
        if kept != lines:
            added = config_get(repo.worktree, INFO_ATTRIBUTES_KEY)
            text = "".join(kept)
            if added == "created" and not text:
                info.unlink()
            else:
                info.write_text(text[:-1] if added == "newline" and text.endswith("\n") else text, encoding="utf-8")
            if added:
                config_unset(repo.worktree, INFO_ATTRIBUTES_KEY)
    return was_set


def hooks_dir(repo: Path) -> Path:
    """Where git runs hooks from: honours core.hooksPath (husky, shared hook folders)."""
    out = git_text(repo, "rev-parse", "--git-path", "hooks")
    path = Path(out)
    return path if path.is_absolute() else repo / path

"""Install and remove gitmem's git hooks without clobbering anyone else's.

A foreign hook is renamed to `<hook>.gitmem-orig` and chained from gitmem's stub, so it
keeps running first with its exit status respected. `core.hooksPath` is honoured when
it points inside the repository (husky); a shared hooks folder outside it is refused,
since one repository's init must not change every repository's hooks.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import sys
from importlib import resources
from pathlib import Path

from gitmem import git
from gitmem.base.files import read_plain
from gitmem.base.locate import runner_problem
from gitmem.base.paths import RepoPaths
from gitmem.errors import GitmemError
from gitmem.githooks import HOOK_NAMES
from gitmem.githooks.presence import FRAMEWORK_MARK, is_stub

ORIG_SUFFIX = ".gitmem-orig"
# The pre-commit framework, installed over a hook, keeps that hook as `<hook>.legacy` and runs it
# before its own ("migration mode"): where the framework's script is the hook, gitmem's stub
# stands there (_stub_slot).
LEGACY_SUFFIX = ".legacy"
# A folder mirroring the hooks folder by links, each chained original under its hook's name:
# where one that dispatches on its name runs (_shadow). Beside the hooks folder in the git dir
# (`.git/hooks.gitmem-orig/pre-commit`: `$0/../..` is still the work tree); inside a hooks folder
# in the work tree (husky's `.husky/_`, which git ignores), where a folder beside it would show.
SHADOW_SUFFIX = ".gitmem-orig"
SHADOW_INSIDE = "gitmem-orig"
TEXTCONV_KEY = "diff.gitmem.textconv"
ATTRIBUTES = ".gitmem/.gitattributes"
# Entry files merge through gitmem.githooks.merge_entries (a retirement or move both branches made
# merges cleanly). Set in the committed attributes file with the diff driver: a clone whose
# `gitmem init` has not configured the driver merges them as plain text, as git does for a
# driver it does not know.
ENTRY_MERGE_DRIVER = "gitmem-entries"
ENTRY_MERGE_ARGS = "%O %A %B %L %P %S %X %Y"  # gitmem.githooks.merge_entries reads the marker size, path and labels
# gitmem writes its files with LF line ends whatever the project's own attributes say (`* text
# eol=crlf` with core.safecrlf would make every `git add -A` refuse them): they say so here.
LINE_ENDS_LINE = "* text eol=lf\n"
ATTRIBUTES_LINE = f"entries/*.yaml diff=gitmem merge={ENTRY_MERGE_DRIVER}\n"
OLD_ATTRIBUTES_LINE = "entries/*.yaml diff=gitmem\n"  # written by earlier versions
# AGENTS.md's managed section merges through gitmem (gitmem.delivery.agents_md.main). Set per clone in
# .git/info/attributes, next to the driver it names; a clone without it merges as plain text.
MERGE_DRIVER = "gitmem-agents-md"
MERGE_ATTRIBUTE = f"/AGENTS.md merge={MERGE_DRIVER}\n"


def _template() -> str:
    return resources.files("gitmem.githooks").joinpath("git-hook.sh").read_text(encoding="utf-8")


def is_ours(path: Path) -> bool:
    """A stub of gitmem's: a plain file (a link to one is the developer's: `post-commit -> pre-commit`)."""
    if path.is_symlink():
        return False
    try:
        return is_stub(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return False


def hooks_folder(repo: RepoPaths) -> Path:
    folder = git.hooks_dir(repo.worktree).resolve()
    inside = any(folder.is_relative_to(p.resolve()) for p in (repo.worktree, repo.common_dir))
    if not inside:
        raise GitmemError(
            f"core.hooksPath points outside this repository ({folder}); gitmem will not install "
            "into a shared hooks folder. Unset it for this repository or add "
            "`python -m gitmem.githooks.on_commit <hook>` to your shared hooks yourself.")
    worktree = repo.worktree.resolve()
    if folder.is_relative_to(worktree) and git.git_text(repo.worktree, "ls-files", "--", str(folder), check=False):
        # the team's committed hooks: stubs naming this machine's interpreter would replace them
        # (a change to commit, and a pull that changes a hook would fail on it)
        raise GitmemError(
            f"core.hooksPath points at {folder.relative_to(worktree).as_posix()}/, whose hooks are committed to "
            "this repository; gitmem will not rewrite committed files. Add "
            "`python -m gitmem.githooks.on_commit <hook>` to those hooks yourself, or unset core.hooksPath "
            "for this clone.")
    return folder


_FROM_DOLLAR_ZERO = re.compile(r'\$(?:0|\{0[^}]*\})')  # $0, ${0%/*}, ...


def _orig_mode(orig: Path) -> str:
    """How the stub runs a chained original that reads its own name from $0: run as
    `pre-commit.gitmem-orig`, a dispatcher on the name (husky's shims: `. "${0%/*}/h"`, whose `h`
    runs .husky/<the name in $0>; Overcommit's `File.basename($0)`) would look for a hook of that
    name and do nothing, or refuse the commit. A POSIX shell's script is sourced by `sh` with
    the hook's own path as $0 ("source"); any other that takes a base name runs as
    `<hook>` in a folder mirroring the hooks folder ("named": _shadow). Any other runs
    as it is, beside the hooks it was beside ("exec")."""
    try:
        text = orig.read_text(encoding="utf-8", errors="replace")[:4000]
    except OSError:
        return "exec"
    # Sourcing keeps no shebang options (`-e`: a failing check would no longer stop the commit),
    # nor the interpreter: only a plain POSIX shell's script is sourced.
    shebang = re.split(r"[/\s]+", text.splitlines()[0]) if text.startswith("#!") else []
    plain = not any(word.startswith("-") for word in shebang)
    if plain and {"sh", "dash"} & set(shebang) and _FROM_DOLLAR_ZERO.search(text):
        return "source"
    return "named" if shebang and "basename" in text.lower() else "exec"


def _import_root() -> str:
    """The folders gitmem and its grammars' package are imported from, joined by os.pathsep (the
    stub's fast path runs Python without site-packages)."""
    import importlib.util

    import gitmem

    roots = [str(Path(gitmem.__file__).resolve().parent.parent)]
    try:
        spec = importlib.util.find_spec("tree_sitter_languages")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        root = str(Path(spec.origin).resolve().parent.parent)
        if root not in roots:
            roots.append(root)
    return os.pathsep.join(roots)


def _shadow_folder(folder: Path) -> tuple[Path, str]:
    """Where the hooks `folder`'s mirror goes, and how the stub names it from the folder."""
    if (folder.parent / "HEAD").is_file() and (folder.parent / "objects").is_dir():  # in a git dir
        return folder.parent / (folder.name + SHADOW_SUFFIX), f"../{folder.name}{SHADOW_SUFFIX}"
    return folder / SHADOW_INSIDE, SHADOW_INSIDE


def _stub(name: str, python: str, orig: Path) -> str:
    """The text of gitmem's stub for hook `name`, running `python`, chaining `orig` if there."""
    return (_template()
            .replace("@HOOK@", name)
            .replace("@SHADOW@", shlex.quote(_shadow_folder(orig.parent)[1]))
            .replace("@PYTHON@", shlex.quote(python))
            .replace("@ROOT@", shlex.quote(_import_root()))
            .replace("@ORIG_MODE@", _orig_mode(orig) if orig.exists() else "exec"))


def _shadow(folder: Path) -> None:
    """The mirror of the hooks folder where an original that dispatches on its own name runs:
    links to every chained original under its hook's name and to everything else in the hooks
    folder, so what such a script finds from its own folder (`<hook>.d/`, a library, the other
    hooks) is what it found beside it before. Made by `gitmem init` (a file added to the hooks
    folder later is linked at the next one); none when no original needs it."""
    shadow, _ = _shadow_folder(folder)
    up = "../" if shadow.parent == folder else f"../{folder.name}/"
    named = [n for n in HOOK_NAMES if (folder / (n + ORIG_SUFFIX)).is_file()
             and _orig_mode(folder / (n + ORIG_SUFFIX)) == "named"]
    wanted: dict[str, str] = {}
    for entry in sorted(folder.iterdir()) if named else []:
        name = entry.name
        if entry == shadow:
            continue
        if name.endswith(ORIG_SUFFIX) and name[:-len(ORIG_SUFFIX)] in HOOK_NAMES:
            wanted[name[:-len(ORIG_SUFFIX)]] = f"{up}{name}"  # the original, under its hook's name
        elif not (name in HOOK_NAMES and (folder / (name + ORIG_SUFFIX)).exists()):
            wanted.setdefault(name, f"{up}{name}")
    if shadow.is_dir() and not shadow.is_symlink():
        for link in shadow.iterdir():
            if link.is_symlink() and wanted.get(link.name) != os.readlink(link):
                link.unlink()
    if wanted:
        shadow.mkdir(exist_ok=True)
        for name, target in wanted.items():
            if not (shadow / name).is_symlink() and not (shadow / name).exists():
                (shadow / name).symlink_to(target)
    with contextlib.suppress(OSError):
        shadow.rmdir()  # only when empty


def install(repo: RepoPaths, python: str | None = None) -> list[str]:
    """Install (or refresh) the stubs; running it twice changes nothing. Returns what it did."""
    folder = hooks_folder(repo)
    folder.mkdir(parents=True, exist_ok=True)
    python = python or sys.executable
    done: list[str] = []
    slots: dict[str, Path] = {}
    for name in HOOK_NAMES:  # every foreign hook aside first, then the stubs: none is written through a link
        slot, moved = _stub_slot(folder, name)
        slots[name] = slot
        if moved:
            done.append(f"moved gitmem's {name} hook into {slot.name}, which the pre-commit framework runs first")
        orig = folder / (name + ORIG_SUFFIX)
        if (slot.exists() or slot.is_symlink()) and not is_ours(slot):
            if orig.exists() or orig.is_symlink():
                # Another tool replaced our stub after we chained the first original: chain the
                # newer one, and keep the earlier (never over one kept so) unless it is the same
                # script written again (husky's shims, the framework's hook).
                _set_aside(orig, slot)
            slot.rename(orig)
            done.append(f"chained existing {slot.name} hook ({orig.name})")
    _relink_siblings(folder, ORIG_SUFFIX)
    for name, slot in slots.items():
        text = _stub(name, python, folder / (name + ORIG_SUFFIX))
        if not slot.exists() or slot.read_text(encoding="utf-8", errors="replace") != text:
            slot.write_text(text, encoding="utf-8")
            done.append(f"installed {name} hook" + (f" ({slot.name})" if slot.name != name else ""))
        os.chmod(slot, 0o755)
    _shadow(folder)

    textconv = textconv_command(python)
    if git.config_get(repo.worktree, TEXTCONV_KEY) != textconv:
        git.config_set(repo.worktree, TEXTCONV_KEY, textconv)
        done.append("configured textconv for entry diffs")
    attributes = repo.worktree / ATTRIBUTES
    if not attributes.exists():
        attributes.parent.mkdir(parents=True, exist_ok=True)
        attributes.write_text(LINE_ENDS_LINE + ATTRIBUTES_LINE, encoding="utf-8")
    else:  # an earlier version's lines become this one's; a line the project changed stays
        before = read_plain(attributes).decode("utf-8").splitlines(keepends=True)
        lines = [ATTRIBUTES_LINE if line == OLD_ATTRIBUTES_LINE else line for line in before]
        if LINE_ENDS_LINE not in lines:
            lines.insert(0, LINE_ENDS_LINE)
        if lines != before:
            attributes.write_text("".join(lines), encoding="utf-8")
            done.append(f"updated gitmem's attributes in {ATTRIBUTES}")
    entry_driver = git.merge_driver_command(python, "gitmem.githooks.merge_entries", ENTRY_MERGE_ARGS)
    if git.set_merge_driver(repo, ENTRY_MERGE_DRIVER, entry_driver, "gitmem: entry files", []):
        done.append("configured the entry merge driver")

    driver = git.merge_driver_command(python, "gitmem.delivery.agents_md")
    if git.set_merge_driver(repo, MERGE_DRIVER, driver, "gitmem: AGENTS.md managed section", [MERGE_ATTRIBUTE]):
        done.append("configured the AGENTS.md merge driver")
    return done


def _framework(path: Path) -> bool:
    """`path` is the pre-commit framework's own script (not a stub of gitmem's naming it)."""
    try:
        text = path.read_bytes()[:64 * 1024] if path.is_file() and not path.is_symlink() else b""
    except OSError:
        return False
    return FRAMEWORK_MARK in text and not is_stub(text.decode("utf-8", "replace"))


# Hooks git hands input on stdin (post-rewrite: the commits rewritten), which the framework does not
# pass to the hook in its legacy slot.
_READS_STDIN = ("post-rewrite",)


def _stub_slot(folder: Path, name: str) -> tuple[Path, bool]:
    """Where gitmem's stub for `name` stands, and whether an earlier layout was moved there: the
    hook itself or, where that is the pre-commit framework's script, the framework's legacy slot
    (`<hook>.legacy`), which the framework runs before its own hooks. In front of the framework,
    the next `pre-commit install` moved the stub into that slot over whatever the developer's hook
    the framework kept there (lost), and the stub, running the framework chained behind it, ran
    it inside itself, which refuses every commit ("installed in migration mode"). In the slot,
    `pre-commit install` finds its own script in place and changes nothing."""
    hook, legacy, orig = folder / name, folder / (name + LEGACY_SUFFIX), folder / (name + ORIG_SUFFIX)
    if name in _READS_STDIN:  # the framework runs its legacy hook with no input: in front of it then
        if is_ours(legacy) and (_framework(hook) or _framework(orig)):
            legacy.unlink()  # `pre-commit install` moved a stub there: it would run twice
        return hook, False
    if is_ours(hook) and _framework(orig):  # an earlier gitmem chained the framework: it goes back in front
        hook.unlink()
        orig.rename(hook)
        if is_ours(legacy):
            legacy.unlink()
        elif legacy.exists() or legacy.is_symlink():
            legacy.rename(orig)  # the developer's hook the framework kept: chained by the stub
        return legacy, True
    if _framework(hook):
        if _framework(orig):  # a copy of the framework an earlier layout chained: run once is enough
            _set_aside(orig, hook)
        elif not (legacy.exists() or legacy.is_symlink()) and (orig.exists() or orig.is_symlink()):
            # the slot emptied (`pre-commit install -f` drops the hook it kept there): what the stub
            # chained from it is dropped from the chain as well, kept aside, never deleted
            _set_aside(orig, hook)
        return legacy, False
    return hook, False


def _set_aside(orig: Path, hook: Path) -> None:
    """A chained original that another tool's hook replaces: kept as `<orig>.prev` (never over
    an earlier one kept so), or removed where it is that hook byte for byte (nothing is lost)."""
    def plain(path: Path) -> bytes | None:
        return path.read_bytes() if path.is_file() and not path.is_symlink() else None

    if (kept := plain(orig)) is not None and kept == plain(hook):
        orig.unlink()
    else:
        orig.rename(_unused(orig.with_name(orig.name + ".prev")))


def _unused(path: Path) -> Path:
    """`path`, or the first of path.2, path.3, ... that does not exist."""
    n = 1
    candidate = path
    while candidate.exists() or candidate.is_symlink():
        n += 1
        candidate = path.with_name(f"{path.name}.{n}")
    return candidate


def textconv_command(python: str) -> str:
    """The entry diff driver's command (git appends the file): gitmem's rendering while the
    interpreter `gitmem init` recorded is there and still has gitmem; else the file as it is, so
    `git diff`, `git show` and `git log -p` never fail because a virtual environment went away.
    No site import (-S, gitmem's folder given as the hook stubs give it): git starts one per entry
    file shown. Git's textconv cache stays off: it would keep a plain rendering made while the
    interpreter was gone (hidden characters unshown) for as long as the command is unchanged."""
    code = ("import os, sys; sys.path[:0] = sys.argv.pop(1).split(os.pathsep); "
            "from gitmem.githooks.textconv import main; sys.exit(main())")
    script = (f'p={shlex.quote(python)}; if [ -x "$p" ] && "$p" -I -S -c "{code}" {shlex.quote(_import_root())} '
              '"$1" 2>/dev/null; then :; else cat "$1"; fi')
    return f"sh -c {shlex.quote(script)} gitmem-textconv"


def missing(repo: RepoPaths) -> list[str]:
    """What `gitmem init` would set up or repair that this clone lacks: a hook an earlier version
    did not install (post-applypatch) or wrote otherwise, one another tool replaced, one whose
    interpreter is gone, the textconv or a merge driver. GitmemError when the hooks folder is
    shared (core.hooksPath outside the repository), where `gitmem init` installs nothing."""
    folder = hooks_folder(repo)
    out = []
    for name in HOOK_NAMES:
        hook = folder / name
        slot = folder / (name + LEGACY_SUFFIX) if _framework(hook) and name not in _READS_STDIN else hook
        try:
            text = slot.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        if not is_stub(text):  # is_ours, on the text read once
            out.append(f"the {name} hook")
            continue
        python = _recorded_python(text)
        if problem := runner_problem(python, _recorded_value(text, "GITMEM_ROOT").split(os.pathsep)):
            out.append(f"the {name} hook ({problem})")
        elif text != _stub(name, python, folder / (name + ORIG_SUFFIX)):
            out.append(f"the {name} hook (written by another version)")
    if not git.config_get(repo.worktree, TEXTCONV_KEY):
        out.append("the entry diff driver")
    for driver, what in ((ENTRY_MERGE_DRIVER, "entry"), (MERGE_DRIVER, "AGENTS.md")):
        if not git.config_get(repo.worktree, f"merge.{driver}.driver"):
            out.append(f"the {what} merge driver")
    return out


def _relink_siblings(folder: Path, suffix: str) -> None:
    """A chained original that is a link to another hook by name (`post-commit -> pre-commit`)
    points at that hook's original (`suffix` ".gitmem-orig"), or, put back (`suffix` ""), at the
    hook again."""
    for name in HOOK_NAMES:
        link = folder / (name + ORIG_SUFFIX if suffix else name)
        if not link.is_symlink():
            continue
        target = os.readlink(link)
        base = target[:-len(ORIG_SUFFIX)] if target.endswith(ORIG_SUFFIX) else target
        if base in HOOK_NAMES and target != base + suffix and (folder / (base + suffix)).exists():
            link.unlink()
            link.symlink_to(base + suffix)


def _uninstall_stubs(folder: Path) -> list[str]:
    done: list[str] = []
    for name in HOOK_NAMES:
        hook, orig = folder / name, folder / (name + ORIG_SUFFIX)
        for slot in (hook, folder / (name + LEGACY_SUFFIX)):
            if not is_ours(slot):
                continue
            slot.unlink()
            if slot != hook and _framework(orig):  # the framework is the hook: its copy never comes back under it
                _set_aside(orig, hook)
            if orig.exists() or orig.is_symlink():
                orig.rename(slot)
                done.append(f"restored the original {slot.name} hook")
            else:
                done.append(f"removed {slot.name} hook")
        kept = sorted(p.name for p in folder.glob(f"{name}{ORIG_SUFFIX}.prev*"))
        if kept:  # hooks another tool had replaced: not run before uninstall either, never deleted
            done.append(f"kept {', '.join(kept)} (a {name} hook another tool replaced; delete it if unused)")
    _relink_siblings(folder, "")
    _shadow(folder)  # no original chained now: its links go
    return done


def _recorded_python(stub: str) -> str:
    """The interpreter a stub of ours runs (its GITMEM_PYTHON line), "" if it names none."""
    return _recorded_value(stub, "GITMEM_PYTHON")


def _recorded_value(stub: str, name: str) -> str:
    """The value a stub of ours sets `name` to (its `NAME=` line), "" if none."""
    for line in stub.splitlines():
        if line.startswith(name + "="):
            try:
                words = shlex.split(line[len(name) + 1:])
            except ValueError:  # a hand-edited line with an unclosed quote
                return ""
            return words[0] if words else ""
    return ""


def uninstall(repo: RepoPaths) -> list[str]:
    """Remove gitmem's stubs and put back exactly the hooks that were there before: where git runs
    hooks from, and in .git/hooks too (stubs `init` put there before core.hooksPath moved)."""
    done: list[str] = []
    folders = dict.fromkeys([git.hooks_dir(repo.worktree).resolve(), (repo.common_dir / "hooks").resolve()])
    for folder in folders:
        done += _uninstall_stubs(folder)
    if git.config_get(repo.worktree, TEXTCONV_KEY):
        git.config_unset(repo.worktree, TEXTCONV_KEY)
        git.git(repo.worktree, "config", "--remove-section", "diff.gitmem", check=False)
        done.append("removed the textconv setting")
    if git.unset_merge_driver(repo, MERGE_DRIVER, [MERGE_ATTRIBUTE]):
        done.append("removed the AGENTS.md merge driver")
    # The committed attribute stays (like diff=gitmem): without the driver git merges as text.
    if git.unset_merge_driver(repo, ENTRY_MERGE_DRIVER, []):
        done.append("removed the entry merge driver")
    return done

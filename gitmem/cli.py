"""The command line: a thin face over gitmem.memory.Memory and friends.

Each command parses its arguments, makes one library call and prints the result.
Every GitmemError becomes a one-line message and exit status 1.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, Any, ParamSpec, TypeVar

import click

from gitmem.base.wording import counted
from gitmem.errors import EntryError, GitmemError, escaped
from gitmem.store.entry import EVENTS, KINDS

if TYPE_CHECKING:
    from gitmem.base.paths import RepoPaths
    from gitmem.delivery.agents.channels import AgentReport
    from gitmem.delivery.upkeep import Delivery
    from gitmem.memory import Memory
    from gitmem.store.entry import Trigger

P = ParamSpec("P")
R = TypeVar("R")


def _memory(*, set_up: bool = True) -> Memory:
    """`set_up`: the command reads or writes the store, so `gitmem init` must have made one here
    (else a read command would say "no entries" or "all anchors resolve" of a store that is not there)."""
    from gitmem.memory import Memory

    memory = Memory()
    if set_up:
        memory.require_store()
    return memory


def reports_errors(func: Callable[P, R]) -> Callable[P, R]:
    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except GitmemError as exc:
            click.echo(f"gitmem: {exc}", err=True)
            sys.exit(1)
        except BrokenPipeError:  # `gitmem list | head`: the reader stopped reading
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing to flush at exit
            sys.exit(128 + 13)  # as a command killed by SIGPIPE: `set -o pipefail` sees it did not finish
        except OSError as exc:  # unreadable or read-only state: say which file, never a traceback
            where = f": {exc.filename}" if exc.filename else ""
            click.echo(f"gitmem: {exc.strerror or exc}{where}", err=True)
            sys.exit(1)
        except Exception as exc:
            if type(exc).__module__.partition(".")[0] not in ("pygit2", "_pygit2"):
                raise
            click.echo(f"gitmem: git: {exc}", err=True)  # a full disk, a corrupt object: said, never a traceback
            sys.exit(1)
    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gitmem")
def main() -> None:
    """Git-native memory for coding agents."""
    _closed_streams()
    _refuse_another_repository()
    _commit_pending()


def _closed_streams() -> None:
    """Run with standard output closed (`>&-`), what a command says (a new entry's id) would be
    lost without a word: refused, as `ls` does. Standard input closed reads as empty."""
    import os

    if sys.stdin is None:
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - the process's stdin, open to its end
    if sys.stdout is None:
        click.echo("gitmem: standard output is closed: nothing it says could be read", err=True)
        sys.exit(1)


def _refuse_another_repository() -> None:
    """GIT_DIR / GIT_WORK_TREE naming another repository than the folder's: gitmem finds its
    repository from the folder (as the agents' hooks do) while every git it runs follows the
    variables, so a command would read one repository and write the other. The same one (git sets
    GIT_DIR for the hooks it runs) is fine."""
    import os

    from gitmem.base.locate import gitfile_target, locate

    named = {key: os.environ[key] for key in ("GIT_DIR", "GIT_WORK_TREE") if os.environ.get(key)}
    found = locate(os.getcwd()) if named else None
    if found is None:
        return  # nothing set, or no repository here: the command says so
    places = {"GIT_DIR": found[1:], "GIT_WORK_TREE": found[:1]}
    for key, value in named.items():
        full = os.path.abspath(value)  # git takes a `.git` file as GIT_DIR too (`submodule foreach`)
        if (gitfile_target(full) or os.path.realpath(full)) not in {os.path.realpath(p) for p in places[key]}:
            click.echo(escaped(f"gitmem: {key}={value} names another repository than the one this folder is "
                               f"in ({found[0]}): run gitmem in that repository's folder, without {key}"), err=True)
            sys.exit(1)
        # gitmem runs git from the repository's root: a relative value would name another place there
        os.environ[key] = full


_STILL_PENDING: list[str] = []  # why changes still wait after this command's try (`status` says it)


def _commit_pending() -> None:
    """Every command first commits entries kept pending while the repository was busy (a merge,
    a rebase, a held lock): this is one of the safe moments. Never fails the command."""
    from gitmem.base.paths import find_repo
    from gitmem.store.commit import unsettled

    try:
        repo = find_repo()
        if not unsettled(repo):
            return
        from gitmem.memory import Memory

        reason = Memory(repo).flush_pending()
        if reason:
            _STILL_PENDING.append(reason)
    except Exception:  # the command itself reports what is wrong with the repository
        return


# -- store ------------------------------------------------------------------------------

@main.command()
@click.option("--agent", "agents", multiple=True, metavar="NAME",
              type=click.Choice(["claude-code", "codex", "copilot", "cursor", "gemini", "agents-md"]),
              help="An agent this repository serves (repeatable; kept in .gitmem/config.yaml). "
                   "Default: the configured ones, else claude-code.")
@reports_errors
def init(agents: tuple[str, ...]) -> None:
    """Set up .gitmem/, the git hooks and the agent hooks (safe to run again)."""
    lines = _memory(set_up=False).init(agents)
    for line in lines:
        click.echo(line)
    from gitmem.delivery import NotInstalled

    # an agent's hook settings it could not write (invalid JSON, a refused shape): no delivery there
    if any(isinstance(line, NotInstalled) for line in lines):
        click.echo("gitmem is set up, but not every agent's hooks are installed (named above); "
                   "fix that and run `gitmem init` again", err=True)
        sys.exit(1)
    shared = _to_commit()
    click.echo(f"gitmem is ready; commit {shared} to share it with your team" if shared else
               "gitmem is ready; what it shares with your team is committed")


# What `gitmem init` writes that a team shares: the store, and each agent's settings and files.
SHARED_PATHS = (".gitmem", ".claude/settings.json", ".codex/hooks.json", ".gemini/settings.json", ".cursor/rules",
                ".github/instructions", "AGENTS.md", "GEMINI.md")


def _to_commit() -> str:
    """The paths of SHARED_PATHS with changes git has not committed, as `git add` takes them."""
    from gitmem import git
    from gitmem.base.paths import find_repo

    status = git.git_text(find_repo().worktree, "status", "--porcelain", "-z", "--untracked-files=normal", "--",
                          *SHARED_PATHS, check=False)
    changed = {entry[3:] for entry in status.split("\0") if len(entry) > 3}
    named = [p for p in SHARED_PATHS if any(c == p or c.startswith(p.rstrip("/") + "/") for c in changed)]
    return " ".join(p + "/" if not p.endswith((".json", ".md")) else p for p in named)


def _one_line(text: str) -> str:
    """An entry's text on one terminal line: hidden and control characters as <U+XXXX> (the
    joiners and variation selectors writing needs kept), line breaks as \\n."""
    from gitmem.judge.normalise import visible

    return visible(text).replace("\n", "\\n").replace("\t", " ")


def _from_here(memory: Memory, anchor: str | None) -> str | None:
    """An anchor typed in a subfolder names a file there, as git's paths do (`mod.py::f` in src/
    is src/mod.py::f) when no such file is at the top."""
    import os

    if not anchor:
        return anchor
    path, sep, symbol = anchor.partition("::")
    top = memory.repo.worktree / path
    here = os.path.join(os.getcwd(), path)
    if top.is_file() or not os.path.isfile(here):
        return anchor
    rel = memory.repo.relative(here)
    return f"{rel}{sep}{symbol}" if rel else anchor


@main.command()
@reports_errors
def uninstall() -> None:
    """Remove gitmem's hooks and restore the ones that were there before."""
    for line in _memory(set_up=False).uninstall() or ["nothing to remove"]:
        click.echo(line)


@main.command()
@click.argument("kind", type=click.Choice(KINDS))
@click.argument("body", metavar="BODY|-")
@click.option("--anchor", metavar="PATH[::SYMBOL]", help="Declaration or file the entry is about.")
@click.option("--on", "on", multiple=True, metavar="EVENT[:GLOB]",
              help=f"When to deliver it ({', '.join(EVENTS)}), optionally narrowed by a path glob.")
@click.option("--source", type=click.Choice(["user", "agent"]), default="user", show_default=True)
@click.option("--supersedes", multiple=True, metavar="ID", help="Entry this one replaces.")
@click.option("--expires", metavar="YYYY-MM-DD", help="Stop delivering after this date.")
@click.option("--stage-only", is_flag=True, help="Stage the entry instead of committing it.")
@reports_errors
def add(kind: str, body: str, anchor: str | None, on: tuple[str, ...], source: str, supersedes: tuple[str, ...],
        expires: str | None, stage_only: bool) -> None:
    """Record an entry and commit it on its own; prints the new id.

    Refused from an agent's shell (memory holds only what the developer said) and when the
    body or anchor fails the gate (gitmem.judge.safety: hidden characters, harness markup,
    obfuscation, text addressed to an AI to override, escalate or exfiltrate)."""
    _refuse_under_agent("add")
    if body == "-":  # the body on standard input: a rule with quotes or lines of its own
        body = sys.stdin.read().strip()
        if not body:
            raise GitmemError("no body on standard input")
    memory = _memory()
    anchor = _from_here(memory, anchor)
    _gate_added(memory, body, anchor, globs=tuple(g for t in on if (g := t.partition(":")[2].strip())))
    recorded = memory.add(kind, body, anchor=anchor, on=on, source=source,
                             supersedes=supersedes, expires=expires, commit=not stage_only)
    click.echo(recorded.entry.id)
    _say_globs_matching_nothing(memory, recorded.entry.triggers)
    if not recorded.commit.committed:
        click.echo(f"gitmem: {recorded.commit.note}", err=True)


def _say_globs_matching_nothing(memory: Memory, triggers: Sequence[Trigger]) -> None:
    """A path glob no tracked file matches is said (not refused: the files may come later), since
    `app/[slug]/**` is one character of s, l, u, g, not the folder, and would deliver nothing."""
    from gitmem import git
    from gitmem.delivery.rules import path_matches

    globs = {str(t): t.glob for t in triggers if t.event in ("read", "edit", "commit") and t.glob}
    tracked = git.git_text(memory.repo.worktree, "ls-files", "-z", check=False).split("\0") if globs else []
    for said, glob in globs.items():
        if glob is None or any(path_matches(glob, path) for path in tracked if path):
            continue
        hint = " (in a glob, [...] is one character of a set: write [[] for a literal '[')" if "[" in glob else ""
        click.echo(escaped(f"gitmem: note: no tracked file matches {said} yet{hint}"), err=True)


def _refuse_under_agent(command: str) -> None:
    """`gitmem add` or `revoke` from an agent's shell would pass the agent's words off as the
    developer's; refused before the gate runs (Memory.add and Memory.revoke refuse it too)."""
    from gitmem.memory import refuse_under_agent

    refuse_under_agent(command)


def _gate_added(memory: Memory, body: str, anchor: str | None, what: str = "body", limit: int | None = None,
                globs: tuple[str, ...] = ()) -> None:
    """Refuse `body` (an entry's; or another text delivery shows, named `what`, at most `limit`
    characters long: the body's cap when None) that fails the gate, or whose anchor or triggers'
    `globs` do."""
    from gitmem.judge import safety
    from gitmem.memory import utf8_text

    utf8_text(body, f"the {what}")
    cache = safety.ScoreCache(memory.repo)  # the store's gate then needs no model for this entry
    text = safety.verdict(body.strip(), learned="optional", cache=cache)
    findings = text.findings + (safety.anchor_findings(anchor, learned="optional", cache=cache) if anchor else [])
    for glob in globs:
        findings += safety.name_findings(f"--on {glob}", glob, learned="optional", cache=cache)
    cache.save()
    from gitmem.judge.structure import MAX_BODY, length_problem

    if (problem := length_problem(what, body.strip(), MAX_BODY if limit is None else limit)) is not None:
        findings.insert(0, safety.Finding(problem, ""))
    for note in text.notes:
        click.echo(f"gitmem: {note}", err=True)
    if findings:
        raise GitmemError("refusing to record this: it fails the gate that keeps instructions aimed at the "
                          "agent out of memory:\n" + "\n".join(f"  - {f.reason}" for f in findings))


@main.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line, every entry.")
@click.option("--all", "show_all", is_flag=True, help="Include retired and superseded entries.")
@reports_errors
def list_(as_json: bool, show_all: bool) -> None:
    """List entries."""
    memory = _memory()
    result = memory.load()
    waiting = memory.pending_entries()  # recorded, in no commit yet (`gitmem status` says why)
    withheld = _delivery().rules().get("withheld", {})  # never delivered (`gitmem check` says why)
    for entry in result.entries:
        if as_json:
            click.echo(json.dumps({**memory.as_json(entry), "pending": entry.id in waiting}, ensure_ascii=False))
        elif show_all or entry.active:
            anchor = f"  @ {entry.anchor}" if entry.anchor else ""
            status = f" [{entry.status}]" if not entry.active else " [expired]" if entry.expired() else ""
            status += " [not yet committed]" if entry.id in waiting else ""
            status += " [withheld by the gate]" if entry.active and entry.id in withheld else ""
            click.echo(_one_line(f"{entry.id}  {entry.kind:<10} {entry.source:<5}{status} {entry.body}{anchor}"))
    _say_skipped(result.errors)


def _say_skipped(errors: Sequence[object]) -> None:
    """Entry files that could not be read, named on stderr: a broken entry is never silently missing."""
    for error in errors:
        click.echo(escaped(f"gitmem: skipped {error}"), err=True)


@main.command()
@click.argument("entry_id")
@reports_errors
def show(entry_id: str) -> None:
    """Show one entry in full."""
    from gitmem.githooks.review import entry_text
    from gitmem.judge.normalise import visible

    memory = _memory()
    entry = memory.get(entry_id)
    if entry.revocation and not entry.revocation.commit:  # a person's revocation: its own commit
        from dataclasses import replace

        entry = replace(entry, revocation=replace(entry.revocation, commit=memory.revocation_commit(entry)))
    click.echo(visible(entry_text(entry)), nl=False)  # an entry's text is anyone's: no raw escapes


@main.command()
@click.argument("entry_id")
@click.option("--reason", required=True, help="Why the entry no longer holds.")
@reports_errors
def revoke(entry_id: str, reason: str) -> None:
    """Retire an entry with a visible revocation note (nothing is deleted).

    Refused from an agent's shell, and when the note fails the gate (it is delivered with the entry)."""
    _refuse_under_agent("revoke")
    memory = _memory()
    from gitmem.judge.structure import MAX_REASON

    _gate_added(memory, reason, None, what="revocation reason", limit=MAX_REASON)
    recorded = memory.revoke(entry_id, reason)
    click.echo(f"revoked {recorded.entry.id} ({recorded.commit.note})")


@main.command()
@click.option("--staged", "mode", flag_value="staged", help="What the pre-commit hook would change.")
@click.option("--rev", "rev_range", metavar="[BASE..]HEAD", help="Fail if an anchor does not resolve at HEAD.")
@reports_errors
def check(mode: str | None, rev_range: str | None) -> None:
    """Check anchors and the gate; exits 1 when an active entry's anchor does not resolve, an
    entry or the configuration is invalid, an entry fails the gate (it is then never
    delivered: remove it), or gitmem's section of AGENTS.md or GEMINI.md has damaged markers."""
    from gitmem import git
    from gitmem.store.yaml_files import config_problems

    if mode == "staged" and rev_range:
        raise click.UsageError("--staged checks the commit being made, --rev a committed one: give one of them")
    memory = _memory()
    config = config_problems(memory.repo)  # what every teammate's gitmem would then refuse
    for problem in config:
        click.echo(f"invalid configuration: {problem}")
    head = None
    if mode == "staged":
        problems = memory.check_staged()
    elif rev_range is None:  # the committed entries, and those written or edited since
        head = "HEAD" if git.has_head(memory.repo.worktree) else None
        problems = (memory.check_rev(head) if head else []) + memory.check_uncommitted()
    else:
        base, dots, head = rev_range.partition("..")
        base, head = (base, head.lstrip(".") or "HEAD") if dots else ("", base)  # BASE..HEAD, BASE...HEAD
        if base and git.rev_parse(memory.repo.worktree, base) is None:  # a typo would pass every PR
            raise GitmemError(f"--rev: unknown revision {base!r}")
        problems = memory.check_rev(head)
    result = memory.load()
    from gitmem.store.entry import link_problems

    unloaded = [e.path.rpartition("/")[2].removesuffix(".yaml") for e in result.errors]
    links = [EntryError(memory.store.relpath_of(e.id), field, why)
             for e, field, why in link_problems(result.entries, unloaded)]
    for error in [*result.errors, *links]:
        click.echo(f"invalid entry: {error}")
    for entry, problem in problems:
        click.echo(escaped(f"{entry.id} ({entry.kind}) {problem}"))
    untrusted, incomplete = _gate_store(memory, head)
    from gitmem.delivery.agents.channels import damaged_sections

    damaged = damaged_sections(memory.repo)
    for rel, why in damaged:
        click.echo(f"{rel}: {why}: gitmem no longer updates its section; fix its markers by hand")
    from gitmem.delivery.agents.channels import hand_edits

    edited = hand_edits(memory.repo)  # before check renders the files anew
    for rel, line in edited:
        click.echo(escaped(f"{rel}: as committed, gitmem's part holds a line the store does not render "
                           f"({line[:100]!r}): edited by hand, or rendered by another gitmem version; "
                           "run `gitmem init` and commit what it writes"))
    if config or problems or result.errors or links or untrusted or incomplete or damaged or edited:
        sys.exit(1)
    click.echo("all anchors resolve; every entry passes the gate")


def _gate_store(memory: Memory, rev: str | None) -> tuple[int, bool]:
    """Entries (in the work tree, and at `rev`) that fail the gate, reported; their count, and
    whether the learned detector could not judge some entry (the gate's verdict is incomplete:
    a check for CI must not pass what only the detector would refuse)."""
    from gitmem.githooks.review import entries_at
    from gitmem.judge import store_gate

    # recorded: delivery withholds what it objects to from now on; the store is scored by the
    # machine's writer when one runs (no second copy of the model; entries only at `rev` are not)
    verdicts = store_gate.judge_store(memory.repo, wait=True) or store_gate.StoreVerdicts()
    entries = {(e.id, e.body) for e in memory.load().entries}
    failing = verdicts.failing
    commit = None
    if rev is not None:
        from gitmem import git

        commit = git.rev_parse(memory.repo.worktree, rev)
    if commit is not None:
        at_rev = [e for e in entries_at(memory.repo, commit).entries if (e.id, e.body) not in entries]
        more = store_gate.judge_entries(memory.repo, sorted(at_rev, key=lambda e: (e.id, e.body)))
        failing, verdicts.notes = failing + more.failing, verdicts.notes | more.notes
    for entry, reasons in failing:
        click.echo(escaped(f"untrusted entry, never delivered: {memory.store.relpath_of(entry.id)} "
                           f"({entry.kind}, {entry.status}): " + "; ".join(reasons)))
    for note in sorted(verdicts.notes):
        click.echo(f"gitmem: {note}", err=True)
    failed = len(failing)
    if failed:
        click.echo(f"{failed} {'entry fails' if failed == 1 else 'entries fail'} the gate: remove "
                   f"{'it' if failed == 1 else 'them'} from .gitmem/entries/ "
                   "(`git diff` shows hidden characters as <U+XXXX>)")
    if verdicts.notes:
        click.echo("the gate is incomplete: its learned detector could not judge every entry (install "
                   "gitmem with its writer, `pip install 'gitmem[writer]'`, where this check runs)")
    return failed, bool(verdicts.notes)


@main.command()
@click.argument("rev_range", required=False, metavar="[BASE..HEAD]")
@reports_errors
def diff(rev_range: str | None) -> None:
    """Markdown summary of memory changes between two revisions (for PR descriptions)."""
    from gitmem.githooks.review import diff_markdown, split_range
    from gitmem.judge.normalise import visible

    memory = _memory(set_up=False)  # history: the work tree may have no store
    base, head = split_range(memory.repo, rev_range)
    text = diff_markdown(memory.repo, base, head)
    from gitmem import git

    if head == git.rev_parse(memory.repo.worktree, "HEAD") and memory.repo.store.is_dir():
        from gitmem.delivery.agents.channels import hand_edits
        from gitmem.githooks.review import hand_edited_markdown

        text += hand_edited_markdown(hand_edits(memory.repo))
    click.echo(visible(text), nl=False)


@main.command()
@click.option("-n", "count", default=20, show_default=True, type=click.IntRange(min=1, max=2**31 - 1),
              help="How many commits.")
@reports_errors
def log(count: int) -> None:
    """History of memory changes: the commits that touched an entry (.gitmem/entries/), newest first."""
    from gitmem import git

    memory = _memory(set_up=False)  # history: the work tree may have no store
    lines = git.git_text(memory.repo.worktree, "log", f"-{count}", "--format=%h %ad %an  %s", "--date=short",
                         "--", ".gitmem/entries").splitlines() if git.has_head(memory.repo.worktree) else []
    for line in lines or ["no memory commits yet"]:
        click.echo(escaped(line))  # subjects quote entry bodies


# -- transcripts ----------------------------------------------------------------------------

@main.command()
@click.argument("transcript", type=click.Path(dir_okay=False))
@reports_errors
def turns(transcript: str) -> None:
    """Print each turn of a Claude Code transcript or Codex rollout as one JSON object per line."""
    import os
    from dataclasses import asdict

    from gitmem.writer.reader import read_turns

    if not os.path.isfile(transcript):
        raise GitmemError(f"{transcript}: no such transcript file")
    with open(transcript, "rb"):
        pass  # unreadable: an OSError with the file name
    found = read_turns(transcript)
    for turn in found:
        line = json.dumps(asdict(turn), ensure_ascii=False)
        if not line.isascii() and any("\ud800" <= ch <= "\udfff" for ch in line):
            line = json.dumps(asdict(turn))  # a lone surrogate (a broken paste) is printable only escaped
        click.echo(line)
    if not found:
        click.echo(escaped(f"gitmem: no turns in {transcript} (a transcript, rollout or chat with no prompt yet, "
                           "or not one)"), err=True)


# -- writer ---------------------------------------------------------------------------------

@main.command()
@click.argument("packet", type=click.File("r", encoding="utf-8"))
@reports_errors
def judge(packet: IO[str]) -> None:
    """What the writer would record from one turn (PACKET: JSON file or -); writes nothing.

    PACKET has session_id, turn, user, assistant and files_modified. Prints one JSON object
    per entry (kind, source, anchor, body) after validation and the safety gate; nothing
    when the turn carries no standing constraint."""
    from gitmem.base.paths import find_repo
    from gitmem.judge.types import Packet
    from gitmem.writer.daemon import make_judge
    from gitmem.writer.turn_writer import gate, stored_entries

    try:
        data = json.load(packet)
    except ValueError as exc:
        raise GitmemError(f"the packet is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise GitmemError("the packet must be a JSON object")
    turn = data.get("turn", 0)
    whole = isinstance(turn, int) or (isinstance(turn, str) and turn.strip().lstrip("-").isdigit())
    if turn is not None and (isinstance(turn, bool) or not whole):
        raise GitmemError(f"the packet's turn must be a whole number, not {turn!r}")
    if not isinstance(data.get("user"), str):
        raise GitmemError(f"the packet's user must be the developer's text, not {data.get('user')!r}")
    for field in ("session_id", "assistant"):
        if data.get(field) is not None and not isinstance(data.get(field), str):
            raise GitmemError(f"the packet's {field} must be text, not {data.get(field)!r}")
    files = data.get("files_modified")
    if files is not None and not isinstance(files, str) and not (
            isinstance(files, list) and all(isinstance(f, str) for f in files)):
        raise GitmemError(f"the packet's files_modified must be a list of paths, not {files!r}")
    try:
        parsed = Packet.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise GitmemError(f"the packet is not valid: {exc}") from None
    repo = find_repo()
    accepted, rejected = gate(make_judge(repo).judge(parsed, stored_entries(repo)))
    for c in accepted:
        click.echo(json.dumps({"kind": c.kind, "source": c.source, "anchor": c.anchor, "body": c.body,
                               "supersedes": list(c.supersedes)}, ensure_ascii=False))
    for c, findings in rejected:
        click.echo(f"gitmem: would quarantine ({'; '.join(f.reason for f in findings)}): {c.body!r}", err=True)


@main.command()
@reports_errors
def drain() -> None:
    """Judge every queued turn in this process, record what passes, then exit."""
    from gitmem.base.paths import find_repo
    from gitmem.writer.daemon import drain as drain_queue

    result = drain_queue(find_repo(), on_outcome=lambda o: click.echo(o.summary()))
    click.echo(f"judged {counted(len(result.outcomes), 'turn')}: recorded {counted(result.recorded, 'entry')}, "
               f"quarantined {result.quarantined}")
    for error in result.errors:
        click.echo(f"gitmem: error judging {error}", err=True)
    if result.errors:
        sys.exit(1)


@main.group()
def daemon() -> None:
    """The writer daemon that judges queued turns in the background."""


@daemon.command("start")
@click.option("--idle-timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Exit after this long without work (default 600, or writer.idle_timeout).")
@reports_errors
def daemon_start(idle_timeout: float | None) -> None:
    """Start the machine's writer daemon, which serves every repository that uses gitmem, and
    register this one with it (no-op when it runs)."""
    from gitmem.base.paths import find_repo
    from gitmem.writer import daemon as d

    for line in d.describe(d.start(find_repo(), idle_timeout)):
        click.echo(line)


@daemon.command("stop")
@reports_errors
def daemon_stop() -> None:
    """Stop the daemon after its current judgement (a killed judgement is redone later)."""
    from gitmem.base.paths import find_repo
    from gitmem.writer import daemon as d

    click.echo("stopped" if d.stop(find_repo()) else "not running")


@daemon.command("status")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@reports_errors
def daemon_status(as_json: bool) -> None:
    """Whether the daemon runs, what it does, its memory, and the queue."""
    from gitmem.base.paths import find_repo
    from gitmem.writer import daemon as d

    info = d.status(find_repo())
    if as_json:
        click.echo(json.dumps(info))
        return
    for line in d.describe(info):
        click.echo(line)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line, as logged.")
@reports_errors
def quarantine(as_json: bool) -> None:
    """Candidates the safety gate kept out of memory, with the reasons."""
    from gitmem.base.paths import find_repo
    from gitmem.judge.safety import quarantined, visible

    records = list(quarantined(find_repo()))
    if not records:
        if not as_json:
            click.echo("nothing quarantined")
        return
    for r in records:
        if as_json:
            click.echo(json.dumps(r, ensure_ascii=False))
            continue
        where = f"session {str(r.get('session') or '?')[:8]} turn {r.get('turn')}"
        click.echo(f"{r.get('time')}  {r.get('kind')} from {r.get('source')}  ({where})")
        click.echo(f"  body:   {visible(str(r.get('body') or ''))}")
        for reason in r.get("reasons") or []:
            click.echo(f"  reason: {escaped(str(reason))}")


# -- delivery -------------------------------------------------------------------------------

def _check_config() -> None:
    """An invalid .gitmem/config.yaml is an error naming the file, not a silent fallback."""
    from gitmem.base.paths import find_repo
    from gitmem.store.yaml_files import check_config

    check_config(find_repo())


def _delivery() -> Delivery:
    from gitmem.delivery.upkeep import Delivery

    return Delivery()


def _line_range(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    first, _, last = text.partition("-")
    try:
        start, end = int(first), int(last or first)
    except ValueError:
        raise GitmemError(f"--lines {text!r}: expected START or START-END") from None
    if not 0 < start <= end:
        raise GitmemError(f"--lines {text!r}: expected 1 <= START <= END")
    return start, end


@main.command()
@click.option("--event", type=click.Choice(EVENTS), help="The moment to preview.")
@click.option("--path", metavar="PATH", help="The file read or edited (read, edit).")
@click.option("--lines", metavar="START[-END]", help="Edited lines (edit); symbol anchors narrow to them.")
@click.option("--command", "command_text", metavar="CMD", help="The command about to run (run, commit).")
@click.option("--prompt", "prompt_text", metavar="TEXT", help="The developer's prompt (prompt).")
@click.option("--source", type=click.Choice(["startup", "resume", "clear", "compact"]), default="startup",
              show_default=True, help="How the session starts (session-start).")
@click.option("--session", metavar="ID", help="Leave out what this Claude Code session already has.")
@click.option("--agents-md", "agents_md", is_flag=True,
              help="Write the repository-wide block into AGENTS.md's managed section instead.")
@reports_errors
def render(event: str | None, path: str | None, lines: str | None, command_text: str | None,
           prompt_text: str | None, source: str, session: str | None, agents_md: bool) -> None:
    """Print what gitmem would deliver at one moment (nothing is recorded)."""
    if agents_md == bool(event):
        raise GitmemError("give either --event EVENT or --agents-md")
    _check_config()
    delivery = _delivery()
    if not event:  # --agents-md: exactly one of the two is given
        click.echo(delivery.write_agents_md())
        return
    bases: tuple[str, ...] = ()
    if event in ("run", "commit"):
        import os

        from gitmem.hook.claude import walk_command

        text = command_text or ("git commit" if event == "commit" else "")
        bases = walk_command(text, os.getcwd())[0]  # as the hook reads it: from here, and after each `cd`
    else:
        text = prompt_text or ""
    plan = delivery.preview(event, path=path, session=session, text=text, lines=_line_range(lines), source=source,
                            bases=bases)
    _say_skipped(_memory().load().errors)
    if plan.text:
        click.echo(plan.text)
    else:
        click.echo("gitmem: nothing would be delivered", err=True)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object per entry.")
@reports_errors
def stats(as_json: bool) -> None:
    """How often and when each entry was delivered, and which active entries never fired."""
    rows = _delivery().stats()
    _say_skipped(_memory().load().errors)
    never = [r for r in rows if r["status"] == "active" and not r["delivered"]]
    for r in rows:
        if as_json:
            click.echo(json.dumps(r, ensure_ascii=False))
        elif r["delivered"] or r["retracted"]:
            events = [f"{e} {n}" for e, n in sorted(r["events"].items())]
            events += [f"retracted {r['retracted']}"] if r["retracted"] else []
            click.echo(f"{r['id']}  {r['kind']:<10} {r['delivered']:>4}x in {counted(r['sessions'], 'session')}, "
                       f"last {r['last']}  ({', '.join(events)})  {_one_line(r['body'][:60])}")
    if not as_json:
        if not any(r["delivered"] or r["retracted"] for r in rows):
            click.echo("nothing delivered yet")
        click.echo(f"never delivered: {counted(len(never), 'active entry')}")
        for r in never:
            click.echo(_one_line(f"  {r['id']}  {r['kind']:<10} {r['body'][:70]}"))


@main.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object (the compiled rules left out).")
@reports_errors
def status(as_json: bool) -> None:
    """What sessions receive at start, what the budget leaves out, whether the hooks are set up,
    and the state of every file of the agents the repository serves."""
    from gitmem.delivery.rules import entry_line
    from gitmem.githooks import install

    memory = _memory(set_up=False)
    if sparse := memory.sparse_problem():
        raise GitmemError(sparse)
    repo = memory.repo
    _check_config()
    if linked := memory.entries_folder_problem():
        click.echo(f"entries: {linked}, so no entry is read or recorded: move it away and run `gitmem init`")
    info = _delivery().status()
    gate = _gate_status(repo)
    try:
        git_missing, git_hooks = install.missing(repo), ""
    except GitmemError as exc:  # a shared hooks folder: init installs nothing there, nor is told to
        git_missing, git_hooks = [], str(exc)
    from gitmem.store import pending

    waiting: dict[str, Any] = {"changes": len(pending.names(repo)),
                               "why": _STILL_PENDING[-1] if _STILL_PENDING else None}
    if as_json:
        click.echo(json.dumps({**{k: v for k, v in info.items() if k != "rules"}, "gate": gate,
                               "git_hooks": {"missing": git_missing, "shared_folder": git_hooks},
                               "pending": waiting}, ensure_ascii=False))
        return
    if git_missing:  # where git looks now: core.hooksPath may have been set since `gitmem init`
        folder, root = install.hooks_folder(repo), repo.worktree.resolve()
        where = (folder.relative_to(root) if folder.is_relative_to(root) else folder).as_posix()
        git_hooks = f"missing {', '.join(git_missing)} (git runs hooks from {where}/); run `gitmem init`"
    click.echo(f"git hooks: {git_hooks or 'installed'}")
    active = info["rules"]["active"]
    hooks = info["hooks"]
    # Codex and Gemini CLI run the same shim; Claude Code's settings only where it is served
    indent = "  " if any(a["agent"] == "claude-code" for a in info["agents"]) else ""
    if not indent:
        click.echo("Claude Code: not served (.gitmem/config.yaml `agents:`)")
    elif hooks["problem"]:
        click.echo(f"Claude Code hooks: .claude/settings.json unreadable: {hooks['problem']}")
    elif hooks["missing"]:
        click.echo(f"Claude Code hooks: missing for {', '.join(hooks['missing'])}; run `gitmem init`")
    else:
        click.echo("Claude Code hooks: installed in .claude/settings.json")
    if not hooks["shim"]:
        click.echo(f"{indent}no hook shim on this machine (.git/gitmem/claude-hook): run `gitmem init`")
    elif hooks["broken"]:  # every agent hook would stay silent
        click.echo(f"{indent}the hook shim cannot run: {hooks['broken']}; run `gitmem init`")
    else:
        click.echo(f"{indent}the hook shim runs {hooks['python']}")
    click.echo(f"session start: {len(info['session_start'])} of {len(info['session_start']) + len(info['left_out'])} "
               f"repository-wide entries, {info['chars']} characters "
               f"(budget {info['max_entries']} entries, {info['max_chars']} characters)")
    for entry_id in info["session_start"]:
        click.echo(f"  {escaped(entry_line(entry_id, active[entry_id])[2:][:100])}")
    if info["left_out"]:
        click.echo(f"left out by the budget ({len(info['left_out'])}, least recently relevant first):")
        for entry_id in info["left_out"]:
            click.echo(f"  {escaped(entry_line(entry_id, active[entry_id])[2:][:100])}")
    click.echo(f"active entries: {info['active']}, expired: {len(info['expired'])}, "
               f"announced as withdrawn (last {info['retraction_days']} days): {len(info['retractions'])}")
    if info["stale_ranges"]:
        click.echo("declaration ranges not yet computed for the current content of: "
                   + ", ".join(info["stale_ranges"]) + " (edits there fire for the whole file)")
    for error in info["invalid_entries"]:  # as EntryError says it: the field named, the path escaped
        shown = EntryError(error["path"], error.get("field"), error["message"])
        click.echo(f"invalid entry, never delivered: {shown}")
    from gitmem.store.yaml_files import Store

    for rel in Store(repo).strays():
        click.echo(escaped(f"never read: {rel} (an entry is a file .gitmem/entries/<id>.yaml)"))
    for entry_id, reasons in sorted(info["rules"].get("withheld", {}).items()):
        click.echo(f"withheld by the gate, never delivered: {escaped(entry_id + ': ' + '; '.join(reasons))[:200]}")
    if waiting["changes"]:  # delivered here, but in no commit yet: a push would not carry them
        click.echo(f"not yet committed: {waiting['changes']} memory change{'s' if waiting['changes'] > 1 else ''} "
                   f"kept pending ({waiting['why'] or 'waiting for a safe moment'}); every gitmem command "
                   "and git hook tries again")
    if info["hook_errors"]:
        click.echo(f"hook errors logged: {info['hook_errors']} (see .git/gitmem/errors.log)")
    click.echo(f"gate: {gate['withheld']} withheld by the store's gate" +
               (f"; {len(gate['unjudged'])} not yet judged on this machine "
                "(a background job is on it, or run `gitmem check`)" if gate["unjudged"] else ""))
    _echo_agents(info["agents"])


def _gate_status(repo: RepoPaths) -> dict[str, Any]:
    """What the learned detector withholds, and which entries it has not judged here yet."""
    from gitmem.judge import safety, store_gate
    from gitmem.store import index

    withheld = safety.withheld_by_detector(repo)
    entries = index.entries(index.current(repo))
    return {"withheld": sum(safety.entry_key(e) in withheld for e in entries),
            "unjudged": store_gate.unjudged(repo, entries)}


STATES = {"current": "current", "stale": "stale: regeneration would change it", "missing": "missing",
          "edited": "edited by hand: regeneration leaves it alone",
          "developers": "not gitmem's (the developer's own file under its name): gitmem writes none while it is there",
          "damaged": "its gitmem:begin/gitmem:end lines are missing their pair, doubled or out of order: "
                     "gitmem leaves it alone until they are fixed by hand",
          "unreadable": "unreadable (not a plain file, or too big): regeneration leaves it alone"}


def _echo_agents(agents: list[AgentReport]) -> None:
    click.echo(f"agents (.gitmem/config.yaml): {', '.join(a['agent'] for a in agents)}")
    for agent in agents:
        click.echo(f"  {agent['agent']}:")
        hooks = agent["hooks"]
        for f in agent["files"]:
            state = STATES.get(f["state"], f["state"])
            if hooks is not None and f["path"] == hooks["file"] and f["state"] == "stale":
                state = "stale: `gitmem init` would add gitmem's hooks"
            click.echo(f"    {f['path']}  {state}")
        if hooks is None:
            continue
        if hooks["problem"]:
            click.echo(f"    hooks: {hooks['file']} unreadable: {hooks['problem']}")
        elif hooks["exact"]:
            click.echo("    hooks: exactly the command gitmem writes, for every event")
        else:
            if hooks["altered"]:
                click.echo(f"    hooks: not the command gitmem writes for {', '.join(hooks['altered'])}; "
                           "`gitmem init` puts it back")
            if hooks["missing"]:
                click.echo(f"    hooks: missing for {', '.join(hooks['missing'])}; run `gitmem init`")
        if not hooks["shim"]:
            click.echo("    no hook shim on this machine (.git/gitmem/claude-hook): run `gitmem init`")


if __name__ == "__main__":
    main()

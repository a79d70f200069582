"""The command line: a thin face over gitmem.memory.Memory and friends.

Each command parses its arguments, makes one library call and prints the result.
Every GitmemError becomes a one-line message and exit status 1.
"""

from __future__ import annotations

import functools
import json
import sys

import click

from gitmem.entry import EVENTS, KINDS
from gitmem.errors import GitmemError


def _memory():
    from gitmem.memory import Memory

    return Memory()


def reports_errors(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except GitmemError as exc:
            click.echo(f"gitmem: {exc}", err=True)
            sys.exit(1)
    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gitmem")
def main() -> None:
    """Git-native memory for coding agents."""


# -- store ------------------------------------------------------------------------------

@main.command()
@reports_errors
def init() -> None:
    """Set up .gitmem/, the git hooks and the agent hooks (safe to run again)."""
    for line in _memory().init():
        click.echo(line)
    click.echo("gitmem is ready; commit .gitmem/ to share it with your team")


@main.command()
@reports_errors
def uninstall() -> None:
    """Remove gitmem's hooks and restore the ones that were there before."""
    for line in _memory().uninstall() or ["nothing to remove"]:
        click.echo(line)


@main.command()
@click.argument("kind", type=click.Choice(KINDS))
@click.argument("body")
@click.option("--anchor", metavar="PATH[::SYMBOL]", help="Declaration or file the entry is about.")
@click.option("--on", "on", multiple=True, metavar="EVENT[:GLOB]",
              help=f"When to deliver it ({', '.join(EVENTS)}), optionally narrowed by a path glob.")
@click.option("--source", type=click.Choice(["user", "agent"]), default="user", show_default=True)
@click.option("--supersedes", multiple=True, metavar="ID", help="Entry this one replaces.")
@click.option("--expires", metavar="YYYY-MM-DD", help="Stop delivering after this date.")
@click.option("--stage-only", is_flag=True, help="Stage the entry instead of committing it.")
@reports_errors
def add(kind, body, anchor, on, source, supersedes, expires, stage_only) -> None:
    """Record an entry and commit it on its own; prints the new id."""
    recorded = _memory().add(kind, body, anchor=anchor, on=on, source=source,
                             supersedes=supersedes, expires=expires, commit=not stage_only)
    click.echo(recorded.entry.id)
    if not recorded.commit.committed:
        click.echo(f"gitmem: {recorded.commit.note}", err=True)


@main.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line, every entry.")
@click.option("--all", "show_all", is_flag=True, help="Include retired and superseded entries.")
@reports_errors
def list_(as_json, show_all) -> None:
    """List entries."""
    memory = _memory()
    result = memory.load()
    for entry in result.entries:
        if as_json:
            click.echo(json.dumps(memory.as_json(entry), ensure_ascii=False))
        elif show_all or entry.active:
            anchor = f"  @ {entry.anchor}" if entry.anchor else ""
            status = "" if entry.active else f" [{entry.status}]"
            click.echo(f"{entry.id}  {entry.kind:<10} {entry.source:<5}{status} {entry.body}{anchor}")
    for error in result.errors:
        click.echo(f"gitmem: skipped {error}", err=True)


@main.command()
@click.argument("entry_id")
@reports_errors
def show(entry_id) -> None:
    """Show one entry in full."""
    from gitmem.review import entry_text

    memory = _memory()
    click.echo(entry_text(memory.get(entry_id)), nl=False)


@main.command()
@click.argument("entry_id")
@click.option("--reason", required=True, help="Why the entry no longer holds.")
@reports_errors
def revoke(entry_id, reason) -> None:
    """Retire an entry with a visible revocation note (nothing is deleted)."""
    recorded = _memory().revoke(entry_id, reason)
    click.echo(f"revoked {recorded.entry.id} ({recorded.commit.note})")


@main.command()
@click.option("--staged", "mode", flag_value="staged", help="What the pre-commit hook would change.")
@click.option("--rev", "rev_range", metavar="[BASE..]HEAD", help="Fail if an anchor does not resolve at HEAD.")
@reports_errors
def check(mode, rev_range) -> None:
    """Check anchors; exits 1 when an active entry's anchor does not resolve."""
    memory = _memory()
    if mode == "staged":
        problems = memory.check_staged()
    else:
        head = (rev_range or "HEAD").rpartition("..")[2] or "HEAD"
        problems = memory.check_rev(head)
    result = memory.load()
    for error in result.errors:
        click.echo(f"invalid entry: {error}")
    for entry, problem in problems:
        click.echo(f"{entry.id} ({entry.kind}) {problem}")
    if problems or result.errors:
        sys.exit(1)
    click.echo("all anchors resolve")


@main.command()
@click.argument("rev_range", required=False, metavar="[BASE..HEAD]")
@reports_errors
def diff(rev_range) -> None:
    """Markdown summary of memory changes between two revisions (for PR descriptions)."""
    from gitmem.review import diff_markdown, split_range

    memory = _memory()
    base, head = split_range(memory.repo, rev_range)
    click.echo(diff_markdown(memory.repo, base, head), nl=False)


@main.command()
@click.option("-n", "count", default=20, show_default=True)
@reports_errors
def log(count) -> None:
    """History of memory changes (commits touching .gitmem/)."""
    from gitmem import git

    memory = _memory()
    click.echo(git.git_text(memory.repo.worktree, "log", f"-{count}", "--format=%h %ad %an  %s",
                            "--date=short", "--", ".gitmem/entries", check=False) or "no memory commits yet")


# -- transcripts ----------------------------------------------------------------------------

@main.command()
@click.argument("transcript", type=click.Path(dir_okay=False))
def turns(transcript) -> None:
    """Print each turn of a Claude Code transcript as one JSON object per line."""
    from dataclasses import asdict

    from gitmem.transcript import read_turns

    for turn in read_turns(transcript):
        click.echo(json.dumps(asdict(turn), ensure_ascii=False))


# -- writer ---------------------------------------------------------------------------------

@main.command()
@click.argument("packet", type=click.File("r", encoding="utf-8"))
@reports_errors
def judge(packet) -> None:
    """What the writer would record from one turn (PACKET: JSON file or -); writes nothing.

    PACKET has session_id, turn, user, assistant and files_modified. Prints one JSON object
    per entry (kind, source, anchor, body) after validation and the safety gate; nothing
    when the turn carries no standing constraint."""
    from gitmem.daemon import make_judge
    from gitmem.judge import Packet
    from gitmem.paths import find_repo
    from gitmem.writer import gate, stored_entries

    try:
        data = json.load(packet)
    except ValueError as exc:
        raise GitmemError(f"the packet is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise GitmemError("the packet must be a JSON object")
    repo = find_repo()
    accepted, rejected = gate(make_judge(repo).judge(Packet.from_dict(data), stored_entries(repo)))
    for c in accepted:
        click.echo(json.dumps({"kind": c.kind, "source": c.source, "anchor": c.anchor, "body": c.body,
                               "supersedes": list(c.supersedes)}, ensure_ascii=False))
    for c, findings in rejected:
        click.echo(f"gitmem: would quarantine ({'; '.join(f.reason for f in findings)}): {c.body!r}", err=True)


@main.command()
@reports_errors
def drain() -> None:
    """Judge every queued turn in this process, record what passes, then exit."""
    from gitmem.daemon import drain as drain_queue
    from gitmem.paths import find_repo

    result = drain_queue(find_repo(), on_outcome=lambda o: click.echo(o.summary()))
    click.echo(f"judged {len(result.outcomes)} turns: recorded {result.recorded} entries, "
               f"quarantined {result.quarantined}")


@main.group()
def daemon() -> None:
    """The writer daemon that judges queued turns in the background."""


@daemon.command("start")
@click.option("--idle-timeout", type=float, default=None, metavar="SECONDS",
              help="Exit after this long without work (default 600, or writer.idle_timeout).")
@reports_errors
def daemon_start(idle_timeout) -> None:
    """Start the daemon for this repository (no-op when it runs)."""
    from gitmem import daemon as d
    from gitmem.paths import find_repo

    for line in d.describe(d.start(find_repo(), idle_timeout)):
        click.echo(line)


@daemon.command("stop")
@reports_errors
def daemon_stop() -> None:
    """Stop the daemon after its current judgement (a killed judgement is redone later)."""
    from gitmem import daemon as d
    from gitmem.paths import find_repo

    click.echo("stopped" if d.stop(find_repo()) else "not running")


@daemon.command("status")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@reports_errors
def daemon_status(as_json) -> None:
    """Whether the daemon runs, what it does, its memory, and the queue."""
    from gitmem import daemon as d
    from gitmem.paths import find_repo

    info = d.status(find_repo())
    if as_json:
        click.echo(json.dumps(info))
        return
    for line in d.describe(info):
        click.echo(line)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line, as logged.")
@reports_errors
def quarantine(as_json) -> None:
    """Candidates the safety gate kept out of memory, with the reasons."""
    from gitmem.paths import find_repo
    from gitmem.safety import quarantined, visible

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
            click.echo(f"  reason: {reason}")


if __name__ == "__main__":
    main()

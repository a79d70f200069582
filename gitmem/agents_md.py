"""The repository-wide block in a managed section of AGENTS.md, for agents without hooks.

Codex CLI, Cursor, Gemini CLI and others read AGENTS.md; they cannot be handed entries at the
moment a file is touched, so they get what a Claude Code session gets at its start. The
section sits between two marker comments; everything outside them is left untouched.

`gitmem render --agents-md` creates the section (and the file when absent). From then on it is
kept current whenever memory changes land: after `gitmem add` and `gitmem revoke`, and from
the post-merge and post-rewrite hooks. The file is only rewritten when the section's text
changes. Its content depends on the committed store alone (no machine-local delivery history),
so every clone renders the same text; entries that have expired drop out at the next refresh.
"""

from __future__ import annotations

import time

from gitmem import deliver, delivery_data
from gitmem.paths import RepoPaths

FILE_NAME = "AGENTS.md"
BEGIN = "<!-- gitmem:begin (managed by `gitmem render --agents-md`; edit memory with gitmem, not here) -->"
BEGIN_PREFIX = "<!-- gitmem:begin"
END = "<!-- gitmem:end -->"
TITLE = "## Repository memory (gitmem)"


def section(repo: RepoPaths) -> str:
    rules = delivery_data.load(str(repo.worktree), str(repo.git_dir), str(repo.common_dir))
    today = time.strftime("%Y-%m-%d", time.gmtime())
    chosen, left_out = deliver.session_start_selection(rules, today, relevance=None)
    active = rules["active"]
    users = [deliver.entry_line(i, active[i]) for i in chosen if active[i]["source"] == "user"]
    agents = [deliver.entry_line(i, active[i]) for i in chosen if active[i]["source"] != "user"]
    lines = [BEGIN, TITLE, ""]
    if users:
        lines += [deliver.START_USER_HEADER, "", *users, ""]
    if agents:
        lines += [deliver.AGENT_HEADER, "", *agents, ""]
    if not chosen:
        lines += ["No repository-wide entries yet.", ""]
    if left_out:
        lines += [f"{len(left_out)} more repository-wide "
                  f"{'entry is' if len(left_out) == 1 else 'entries are'} not listed, to keep this short "
                  "(`gitmem list` shows every entry).", ""]
    lines.append(END)
    return "\n".join(lines) + "\n"


def write(repo: RepoPaths) -> str:
    """Create or update the managed section; returns what happened."""
    path = repo.worktree / FILE_NAME
    new_section = section(repo)
    if not path.exists():
        path.write_text(new_section, encoding="utf-8")
        return f"created {FILE_NAME} with gitmem's section"
    text = path.read_text(encoding="utf-8")
    updated = replace_section(text, new_section)
    if updated == text:
        return f"{FILE_NAME} is up to date"
    path.write_text(updated, encoding="utf-8")
    return f"updated gitmem's section of {FILE_NAME}"


def replace_section(text: str, new_section: str) -> str:
    start = text.find(BEGIN_PREFIX)
    end = text.find(END, start) if start >= 0 else -1
    if start < 0 or end < 0:
        separator = "" if not text or text.endswith("\n\n") else "\n" if text.endswith("\n") else "\n\n"
        return text + separator + new_section
    after = end + len(END)
    if text.startswith("\n", after):
        after += 1
    return text[:start] + new_section + text[after:]


def is_managed(repo: RepoPaths) -> bool:
    path = repo.worktree / FILE_NAME
    try:
        return BEGIN_PREFIX in path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False


def refresh_if_managed(repo: RepoPaths) -> str | None:
    """Bring an existing managed section up to date; a repository without one is left alone."""
    return write(repo) if is_managed(repo) else None

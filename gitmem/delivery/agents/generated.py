"""The files gitmem generates for GitHub Copilot, Cursor and Gemini CLI, as text.

- Copilot: `.github/instructions/gitmem.instructions.md` (`applyTo: "**"`, repository-wide) and
  one `gitmem-<scope>.instructions.md` per scope (`applyTo:` the anchored file).
- Cursor: `.cursor/rules/gitmem.mdc` (`alwaysApply: true`) and one `gitmem-<scope>.mdc` per
  scope (`globs:` the anchored file, `alwaysApply: false`).
- Gemini CLI: a managed section of GEMINI.md with the repository-wide block (Gemini loads it
  into every session; its AfterTool hook, see gitmem.delivery.agents, brings anchored entries).

Front matter first (both tools require it at the top of the file), then the generated-by-gitmem
header, then the block. Everything comes from gitmem.delivery.agents.content.
"""

from __future__ import annotations

from gitmem.delivery import agents_md
from gitmem.delivery import rules as delivery_rules
from gitmem.delivery.agents import COPILOT_DIR as COPILOT_DIR
from gitmem.delivery.agents import CURSOR_DIR as CURSOR_DIR
from gitmem.delivery.agents import GEMINI_FILE as GEMINI_FILE
from gitmem.delivery.agents import content
from gitmem.delivery.agents.content import HEADER, REPOSITORY_WIDE, TITLE, Scope

COPILOT_SUFFIX = ".instructions.md"
CURSOR_SUFFIX = ".mdc"
GEMINI_BEGIN = f"<!-- gitmem:begin ({content.GENERATED} from .gitmem/; edit memory with gitmem, not here) -->"
GEMINI_END = "<!-- gitmem:end -->"

Files = dict[str, str]


def copilot(rules: delivery_rules.CompiledRules, now: float | None = None) -> Files:
    wide, scoped = content.scopes(rules, now)
    out = {f"{COPILOT_DIR}/gitmem{COPILOT_SUFFIX}": _document(
        ["---", f"applyTo: {_quoted(REPOSITORY_WIDE)}", "---"], rules, wide)}
    for scope in scoped:
        out[f"{COPILOT_DIR}/{content.file_stem(scope.glob)}{COPILOT_SUFFIX}"] = _document(
            ["---", f"applyTo: {_quoted(scope.glob)}", "---"], rules, scope)
    return out


def cursor(rules: delivery_rules.CompiledRules, now: float | None = None) -> Files:
    """Cursor reads `globs:` as the rest of its line: a quoted glob would keep its quotes and
    match nothing (`**/*.sql` is written bare, though YAML would read `*` as an alias)."""
    wide, scoped = content.scopes(rules, now)
    out = {f"{CURSOR_DIR}/gitmem{CURSOR_SUFFIX}": _document(
        ["---", f"description: {content.yaml_scalar(f'{TITLE}: standing rules for the whole repository')}",
         "globs:", "alwaysApply: true", "---"], rules, wide)}
    for scope in scoped:
        out[f"{CURSOR_DIR}/{content.file_stem(scope.glob)}{CURSOR_SUFFIX}"] = _document(
            ["---", f"description: {content.yaml_scalar(f'{TITLE} for {agents_md.escape(scope.label)}')}",
             "globs: " + scope.glob.replace("\r", " ").replace("\n", " "), "alwaysApply: false", "---"], rules, scope)
    return out


def gemini_section(rules: delivery_rules.CompiledRules, now: float | None = None) -> str:
    wide, _ = content.scopes(rules, now)
    return "\n".join([GEMINI_BEGIN, f"## {TITLE}", "", *content.body(rules, wide), GEMINI_END]) + "\n"


def is_generated(text: str) -> bool:
    """A file gitmem generated: its header comment is the line right after the front matter (a
    file of the developer's that merely mentions gitmem's generated files is not one)."""
    lines = text[:4000].lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return False
    close = next((n for n, line in enumerate(lines[1:], 1) if line.strip() == "---"), None)
    return close is not None and close + 1 < len(lines) and lines[close + 1].startswith(f"<!-- {content.GENERATED} ")


def _document(front: list[str], rules: delivery_rules.CompiledRules, scope: Scope) -> str:
    """A file of Copilot's or Cursor's: they have no hooks, so the repository-wide one also lists
    what holds at a moment (a commit, a command) with that moment."""
    title = f"# {TITLE}" if scope.glob == REPOSITORY_WIDE else f"# {TITLE}: {agents_md.escape(scope.shown)}"
    return "\n".join([*front, HEADER, title, "", *content.body(rules, scope, moments=True)]).rstrip("\n") + "\n"


def _quoted(text: str) -> str:
    return content.yaml_scalar(text, plain_ok=False)

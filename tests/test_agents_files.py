"""GitHub Copilot, Cursor and Gemini CLI: the files gitmem generates, their hooks, and undoing it.

Front matter is checked as those tools document it: YAML between the first two `---` lines;
Copilot's `applyTo` (a glob, `"**"` for every file), Cursor's `description`, `globs` and
`alwaysApply` (a boolean). Globs are matched the way both tools match them (`*` within a path
segment, `**` across segments).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from delivery_support import Delivered, add_entry, own_errors, run_hooks
from ruamel.yaml import YAML

from gitmem.delivery.agents import content, jsonc

SOURCE = "import os\n\n\ndef f(x):\n    return x + 1\n\n\ndef g(x):\n    return x * 2\n"
COPILOT = ".github/instructions"
CURSOR = ".cursor/rules"
ID = re.compile(r"\[(\d{8}-[0-9a-f]{8})\]")


def safe_load(text: str) -> object:
    return YAML(typ="safe", pure=True).load(text)


def front_matter(text: str) -> tuple[dict, str]:
    """Copilot's front matter is YAML. Cursor's `.mdc` reader takes each line as `key: the rest of
    the line` (a quoted glob keeps its quotes and matches nothing): read so, the description as the
    JSON string gitmem writes where it must, `alwaysApply` a boolean, an empty value none."""
    assert text.startswith("---\n"), text[:80]
    head, _, rest = text[4:].partition("\n---\n")
    if "alwaysApply:" not in head:
        data = safe_load(head)
        assert isinstance(data, dict)
        return data, rest
    meta: dict[str, object] = {}
    for line in head.splitlines():
        key, sep, value = line.partition(": ") if ": " in line else line.partition(":")
        assert sep and key not in meta, line
        value = value.strip()
        meta[key] = (None if not value else {"true": True, "false": False}.get(value, value) if key == "alwaysApply"
                     else json.loads(value) if key == "description" and value.startswith('"') else value)
    return meta, rest


def glob_matches(glob: str, path: str) -> bool:
    out, i = "", 0
    while i < len(glob):
        if glob.startswith("**", i):
            out, i = out + ".*", i + 2
        elif glob[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif glob[i] == "?":
            out, i = out + "[^/]", i + 1
        elif glob[i] == "[":  # a set; a `]` first in it is one of its characters
            end = glob.index("]", i + 2)
            out, i = out + "[" + "".join(re.escape(c) for c in glob[i + 1:end]) + "]", end + 1
        else:
            out, i = out + re.escape(glob[i]), i + 1
    return re.fullmatch(out, path) is not None


def ids(text: str) -> list[str]:
    return ID.findall(text)


def scoped(root: Path, folder: str) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted((root / folder).glob("gitmem*"))}


@pytest.fixture
def gm(repo, monkeypatch):
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    repo.write("src/a.py", SOURCE)
    repo.write("src/b.py", SOURCE)
    repo.write("docs/index.md", "# Docs\n")
    repo.commit_all("initial")
    old = time.time() - 3600
    for name in ("a", "b"):
        os.utime(repo.path / f"src/{name}.py", (old, old))
    repo.gitmem("init", "--agent", "claude-code", "--agent", "copilot", "--agent", "cursor")
    return repo


def test_init_keeps_the_choice_in_the_config_for_teammates(gm):
    config = safe_load(gm.read(".gitmem/config.yaml"))
    assert config["agents"] == ["claude-code", "copilot", "cursor"]
    assert "# gitmem repository settings" in gm.read(".gitmem/config.yaml")  # comments survive
    assert (gm.path / ".claude/settings.json").exists()
    assert sorted(scoped(gm.path, COPILOT)) == ["gitmem.instructions.md"]
    assert sorted(scoped(gm.path, CURSOR)) == ["gitmem.mdc"]
    again = gm.gitmem("init").stdout  # a teammate's plain `gitmem init`: the same agents
    assert safe_load(gm.read(".gitmem/config.yaml"))["agents"] == ["claude-code", "copilot", "cursor"]
    assert "wrote" not in again
    # it names what to commit: every file it wrote for the team, until they are committed
    assert again.endswith("commit .gitmem/ .claude/settings.json .cursor/rules/ .github/instructions/ to share it "
                          "with your team\n"), again
    gm.commit_all("set up gitmem")
    assert gm.gitmem("init").stdout.endswith("what it shares with your team is committed\n")


def test_an_unknown_agent_is_refused(gm):
    assert gm.gitmem("init", "--agent", "vim", check=False).returncode != 0
    gm.write(".gitmem/config.yaml", "agents: [copilot, vim]\n")
    failed = gm.gitmem("init", check=False)
    assert failed.returncode == 1 and "unknown agent 'vim'" in failed.stderr


def test_copilot_and_cursor_files_hold_the_right_entries_under_valid_front_matter(gm):
    law = add_entry(gm, "law", "Use tabs.")
    hazard = add_entry(gm, "hazard", "a.py is shared with the mobile app.", "--anchor", "src/a.py")
    symbol = add_entry(gm, "hazard", "g() must stay pure.", "--anchor", "src/a.py::g")
    other = add_entry(gm, "ritual", "After changing b.py, regenerate the client.", "--anchor", "src/b.py")
    docs = add_entry(gm, "ritual", "Every new page goes into docs/index.md.", "--on", "edit:docs/**")
    anchored_law = add_entry(gm, "law", "Keep b.py free of I/O.", "--anchor", "src/b.py")

    copilot = scoped(gm.path, COPILOT)
    assert len(copilot) == 4  # repository-wide, src/a.py, src/b.py, docs/**
    by_glob = {}
    for text in copilot.values():
        meta, rest = front_matter(text)
        assert set(meta) == {"applyTo"} and isinstance(meta["applyTo"], str)
        assert rest.startswith(content.HEADER) and "generated by gitmem" in rest
        by_glob[meta["applyTo"]] = ids(rest)
    assert by_glob["**"] == [law, anchored_law]
    assert sorted(by_glob["src/a.py"]) == sorted([hazard, symbol])
    assert by_glob["src/b.py"] == [other]  # the anchored law is in the repository-wide file already
    assert by_glob["docs/**"] == [docs]
    assert glob_matches("src/a.py", "src/a.py") and not glob_matches("src/a.py", "src/b.py")
    assert glob_matches("docs/**", "docs/guide/new.md")

    cursor = scoped(gm.path, CURSOR)
    assert len(cursor) == 4
    for name, text in cursor.items():
        meta, rest = front_matter(text)
        assert set(meta) == {"description", "globs", "alwaysApply"} and isinstance(meta["alwaysApply"], bool)
        assert isinstance(meta["description"], str) and meta["description"]
        if name == "gitmem.mdc":
            assert meta["alwaysApply"] is True and meta["globs"] is None
            assert ids(rest) == [law, anchored_law]
        else:
            assert meta["alwaysApply"] is False and isinstance(meta["globs"], str)
            assert ids(rest) == by_glob[meta["globs"]]
            anchored = {"src/a.py", "src/b.py"} & {meta["globs"]}
            assert all(glob_matches(meta["globs"], path) for path in anchored)
    assert own_errors(gm.path) == ""


def test_an_at_path_in_an_entry_imports_no_file_into_the_agents_files(gm):
    """Gemini CLI (GEMINI.md, AGENTS.md), Claude Code (a CLAUDE.md importing AGENTS.md) and
    Cursor replace `@path` starting a word with the whole file it names: an entry naming one
    would bring that file in among the developer's rules. Any @ not inside a word is written as
    &#64;; an e-mail address and an @ in the hook's delivery stay as they are."""
    gm.gitmem("init", "--agent", "claude-code", "--agent", "copilot", "--agent", "cursor", "--agent", "gemini",
              "--agent", "agents-md")
    said = ("Follow the conventions in @src/a.py; ask ops@example.com before touching @scope/pkg or "
            "node_modules/@types. See **@docs/index.md** and [@src/b.py](x) and `make`@src/a.py.")
    entry = add_entry(gm, "law", said)
    (gm.path / "@app").mkdir()  # a folder whose name begins with @: its path heads a scope
    gm.write("@app/x.py", SOURCE)
    gm.commit_all("an app")
    add_entry(gm, "hazard", "x.py is generated.", "--anchor", "@app/x.py")
    texts = {rel: gm.read(rel) for rel in ("GEMINI.md", "AGENTS.md")}
    texts.update({f"{COPILOT}/{n}": t for n, t in scoped(gm.path, COPILOT).items()})
    texts.update({f"{CURSOR}/{n}": t for n, t in scoped(gm.path, CURSOR).items()})
    written = ("Follow the conventions in &#64;src/a.py; ask ops@example.com before touching &#64;scope/pkg or "
               "node_modules/&#64;types. See **&#64;docs/index.md** and [&#64;src/b.py](x) and `make`&#64;src/a.py.")
    for rel, text in texts.items():
        shown = "\n".join(line for line in text.splitlines() if not line.startswith(("applyTo:", "globs:")))  # globs
        assert not re.search(r"(?<![^\W_])@[\w./~]", shown), rel
        if "x.py is generated." not in text:  # the repository-wide text, whose header says so
            assert written in text and "an @ outside a word as &#64;" in text, rel
    context = gm.gitmem("render", "--event", "session-start").stdout  # the hook's delivery
    assert said in context and entry in context
    assert gm.gitmem("check", check=False).returncode == 0  # gitmem's own rendering: no hand edit


def test_an_anchored_path_with_glob_characters_or_a_comma_scopes_exactly_that_file(gm):
    """Next.js routes (`app/[slug]/page.tsx`) and names with commas are ordinary paths: the glob
    must match the file itself, bracket characters taken literally and no comma splitting it."""
    gm.write("app/[slug]/page.tsx", "export default function Page() {\n  return null;\n}\n")
    gm.write("src/a,b.py", SOURCE)
    gm.write("!notes/wow!.py", SOURCE)
    gm.commit_all("route and data file")
    route = add_entry(gm, "hazard", "The page is statically rendered.", "--anchor", "app/[slug]/page.tsx")
    data = add_entry(gm, "hazard", "The pair file is shared.", "--anchor", "src/a,b.py")
    sql = add_entry(gm, "law", "SQL migrations must be reversible.", "--on", "edit:**/*.sql")
    pair = add_entry(gm, "law", "The a,b folder is generated.", "--on", "read:src/a,b/**")
    bang = add_entry(gm, "hazard", "The notes are fragile.", "--anchor", "!notes/wow!.py")
    for folder, key in ((COPILOT, "applyTo"), (CURSOR, "globs")):
        by_glob = {meta[key]: ids(rest) for meta, rest in map(front_matter, scoped(gm.path, folder).values())}
        route_glob = next(g for g, found in by_glob.items() if found == [route])
        data_glob = next(g for g, found in by_glob.items() if found == [data])
        assert by_glob["**/*.sql"] == [sql]  # bare in Cursor's file, where quotes would stay part of the glob
        pair_glob = next(g for g, found in by_glob.items() if found == [pair])
        assert glob_matches(pair_glob, "src/a,b/gen.py") and "," not in pair_glob
        assert "," not in route_glob + data_glob
        assert glob_matches(route_glob, "app/[slug]/page.tsx") and not glob_matches(route_glob, "app/s/page.tsx")
        assert glob_matches(data_glob, "src/a,b.py") and not glob_matches(data_glob, "src/a.py")
        bang_glob = next(g for g, found in by_glob.items() if found == [bang])
        assert "!" not in bang_glob and glob_matches(bang_glob, "!notes/wow!.py")  # `[!` negates a set


def test_odd_anchored_paths_keep_the_front_matter_valid_and_are_escaped_once(gm):
    """A colon and a tab in an anchored path made Cursor's `description:` a YAML error (that
    scope's rules unread); an `&` came out as `&amp;amp;` in a scope's header."""
    gm.write("src/b:\tc.py", SOURCE)
    gm.write("src/a&b.py", SOURCE)
    gm.write("src/b: #c.py", SOURCE)  # YAML's key and comment marks, in Cursor's bare globs line
    gm.commit_all("odd names")
    add_entry(gm, "hazard", "The hash file is legacy.", "--anchor", "src/b: #c.py")
    tab = add_entry(gm, "hazard", "The tab file is generated.", "--anchor", "src/b:\tc.py")
    amp = add_entry(gm, "hazard", "The pair file is shared.", "--anchor", "src/a&b.py")
    for folder in (COPILOT, CURSOR):
        for name, text in scoped(gm.path, folder).items():
            _, rest = front_matter(text)
            if folder == CURSOR:
                assert isinstance(safe_load(text[4:].partition("\n---\n")[0]), dict), name  # YAML reads it too
            if amp in rest:
                assert "src/a&amp;b.py" in rest and "&amp;amp;" not in rest, rest
    assert any(tab in text for text in scoped(gm.path, CURSOR).values())


def test_entries_for_a_moment_are_listed_with_it_for_agents_without_hooks(gm):
    # Copilot and Cursor read their files once: a ritual for commits or a command would never reach them
    commit = add_entry(gm, "ritual", "Run make lint first.", "--on", "commit")
    migrations = add_entry(gm, "ritual", "Bump the schema version.", "--on", "commit:migrations/**")
    e2e = add_entry(gm, "hazard", "The e2e suite hits staging.", "--on", "run:*npm run e2e*")
    agents = add_entry(gm, "law", "Regenerate the client after API changes.", "--on", "commit", "--source", "agent")
    for text in (gm.read(COPILOT + "/gitmem.instructions.md"), gm.read(CURSOR + "/gitmem.mdc")):
        moments = text.split(content.MOMENTS_HEADER)[1]
        assert f"- Before every commit: Ritual: Run make lint first. [{commit}]" in moments
        assert f"- Before a commit that includes migrations/**: Ritual: Bump the schema version. [{migrations}]" \
            in moments
        assert f"- Before running a command like *npm run e2e*: Hazard: The e2e suite hits staging. [{e2e}]" in moments
        assert f"[{agents}] (recorded by an AI agent, not the developer" in moments


def test_withdrawals_appear_while_announced_and_emptied_scopes_go(gm):
    hazard = add_entry(gm, "hazard", "a.py is shared with the mobile app.", "--anchor", "src/a.py")
    law = add_entry(gm, "law", "Never log tokens.")
    gm.gitmem("revoke", hazard, "--reason", "The mobile app has its own copy now.")
    gm.gitmem("revoke", law, "--reason", "Tokens are redacted by the logger.")
    for folder in (COPILOT, CURSOR):
        files = scoped(gm.path, folder)
        wide = next(t for n, t in files.items() if n in ("gitmem.instructions.md", "gitmem.mdc"))
        assert "Withdrawn law" in wide and "Tokens are redacted by the logger." in wide
        (scope,) = [t for n, t in files.items() if n not in ("gitmem.instructions.md", "gitmem.mdc")]
        assert "Withdrawn hazard (src/a.py)" in scope and "This no longer holds." in scope
        assert ids(scope) == [hazard]
    # After the announcement period the scope holds nothing and its file goes.
    gm.write(".gitmem/config.yaml", gm.read(".gitmem/config.yaml").replace("retraction_days: 14", "retraction_days: 1"))
    from gitmem.base.paths import find_repo
    from gitmem.delivery.agents import channels

    changed = channels.refresh(find_repo(gm.path), now=time.time() + 3 * 86400)
    assert any(p.startswith(COPILOT + "/gitmem-src-a.py") for p in changed)
    assert sorted(scoped(gm.path, COPILOT)) == ["gitmem.instructions.md"]


def test_every_clone_generates_the_same_bytes(gm, tmp_path):
    add_entry(gm, "law", "Use tabs.")
    add_entry(gm, "hazard", "a.py is shared with the mobile app.", "--anchor", "src/a.py")
    gm.commit_all("share memory and generated files")
    mine = {**scoped(gm.path, COPILOT), **scoped(gm.path, CURSOR)}
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(gm.path), str(clone)], check=True)
    out = subprocess.run([os.sys.executable, "-m", "gitmem.cli", "init"], cwd=clone, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert {**scoped(clone, COPILOT), **scoped(clone, CURSOR)} == mine
    assert subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True).stdout == ""


def test_a_clone_never_puts_back_a_teammates_old_rendering(gm, tmp_path):
    """On a clone, the generated files and the managed sections came through git: they are gitmem's,
    not what the developer had before gitmem. A scope that empties goes, and uninstall takes them
    away; neither brings back the teammate's rendering, which names the withdrawn entry as standing."""
    gm.gitmem("init", "--agent", "claude-code", "--agent", "copilot", "--agent", "cursor", "--agent", "gemini",
              "--agent", "agents-md")
    hazard = add_entry(gm, "hazard", "Docs are built by a legacy script; never hand-edit them.", "--on", "read:docs/**")
    law = add_entry(gm, "law", "Never log tokens.")
    gm.commit_all("share memory and generated files")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(gm.path), str(clone)], check=True)

    def gitmem(*args: str) -> str:
        out = subprocess.run([os.sys.executable, "-m", "gitmem.cli", *args], cwd=clone, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return out.stdout

    def generated() -> dict[str, str]:
        return {**scoped(clone, COPILOT), **scoped(clone, CURSOR)}

    gitmem("init")
    assert sum(hazard in text for text in generated().values()) == 2  # Copilot's docs scope, Cursor's
    # a store change not yet committed: gitmem's revocation commits no agent file, regenerates them here
    (clone / ".gitmem/config.yaml").write_text((clone / ".gitmem/config.yaml").read_text() + "# note\n")
    gitmem("revoke", hazard, "--reason", "the script is gone")
    assert sorted(generated()) == ["gitmem.instructions.md", "gitmem.mdc"]  # the docs scope emptied: gone
    gitmem("revoke", law, "--reason", "tokens are hashed now")
    out = gitmem("uninstall")
    assert generated() == {}, out
    for name in ("AGENTS.md", "GEMINI.md"):  # the section was all there was: the file goes, as on the first machine
        assert not (clone / name).exists(), out


def test_two_branches_that_each_add_entries_merge_cleanly(gm):
    gm.commit_all("set up")
    gm.git("checkout", "-q", "-b", "other")
    theirs = add_entry(gm, "hazard", "a.py is shared with the mobile app.", "--anchor", "src/a.py")
    theirs_law = add_entry(gm, "law", "Use tabs.")
    assert gm.git("status", "--porcelain") == ""  # gitmem's commits carried the generated files
    gm.git("checkout", "-q", "main")
    ours = add_entry(gm, "hazard", "f() is called from signal handlers.", "--anchor", "src/a.py::f")
    ours_law = add_entry(gm, "law", "Never log tokens.")
    assert gm.git("status", "--porcelain") == ""
    merged = subprocess.run(["git", "merge", "-q", "--no-edit", "other"], cwd=gm.path, capture_output=True, text=True)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    for folder in (COPILOT, CURSOR):
        for text in scoped(gm.path, folder).values():
            assert "<<<<<<<" not in text and ">>>>>>>" not in text
            front_matter(text)
        both = "\n".join(scoped(gm.path, folder).values())
        assert {theirs, theirs_law, ours, ours_law} <= set(ids(both))
    assert own_errors(gm.path) == ""


def test_a_developers_own_file_under_gitmems_name_is_never_overwritten(repo, monkeypatch):
    """A team's own `.cursor/rules/gitmem.mdc` (how they use gitmem, say) is not gitmem's: init
    says it leaves it alone, and neither init nor a new entry nor uninstall changes it."""
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    mine = b"---\nalwaysApply: true\n---\n# How we use gitmem\n\nRun `gitmem list` weekly.\n"
    repo.write(f"{CURSOR}/gitmem.mdc", mine)
    repo.write(f"{CURSOR}/gitmem-howto.mdc", mine)  # a name gitmem never writes: nothing to say of it
    repo.write("src/a.py", SOURCE)
    repo.commit_all("initial")
    out = repo.gitmem("init", "--agent", "cursor").stdout
    assert f"left {CURSOR}/gitmem.mdc alone: it is not gitmem's" in out and "gitmem-howto" not in out, out
    add_entry(repo, "law", "Use tabs.")
    hazard = add_entry(repo, "hazard", "a.py is shared with the mobile app.", "--anchor", "src/a.py")
    assert (repo.path / CURSOR / "gitmem.mdc").read_bytes() == mine
    assert [ids(text) for name, text in scoped(repo.path, CURSOR).items() if "gitmem." not in name
            and "howto" not in name] == [[hazard]]
    assert f"{CURSOR}/gitmem.mdc  not gitmem's" in repo.gitmem("status").stdout
    repo.gitmem("uninstall")
    assert (repo.path / CURSOR / "gitmem.mdc").read_bytes() == mine
    assert sorted(scoped(repo.path, CURSOR)) == ["gitmem-howto.mdc", "gitmem.mdc"]


def test_a_developers_file_named_like_a_generated_one_merges_as_git_merges_it(gm):
    """`gitmem-howto.mdc` is the developer's (no generated-by-gitmem header), though the merge
    attribute's pattern takes it in: both branches' changes to one line conflict, as in git."""
    howto = f"{CURSOR}/gitmem-howto.mdc"
    gm.write(howto, "---\nalwaysApply: true\n---\n# How we use gitmem\n\nTimeout: 30 seconds.\nOwner: alice\n")
    gm.commit_all("how we use gitmem")
    gm.git("checkout", "-q", "-b", "other")
    gm.write(howto, gm.read(howto).replace("30 seconds", "60 seconds"))
    gm.commit_all("longer")
    gm.git("checkout", "-q", "main")
    gm.write(howto, gm.read(howto).replace("30 seconds", "10 seconds").replace("alice", "bob"))
    gm.commit_all("shorter, bob")
    merged = subprocess.run(["git", "merge", "-q", "--no-edit", "other"], cwd=gm.path, capture_output=True, text=True)
    assert merged.returncode != 0 and "CONFLICT" in merged.stdout, merged.stdout + merged.stderr
    text = gm.read(howto)
    assert "<<<<<<<" in text and "10 seconds" in text and "60 seconds" in text and "Owner: bob" in text


def test_uninstall_removes_generated_files_and_restores_what_was_there(repo, monkeypatch):
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    gemini = b"# Project notes\r\n\r\nBuild with make.\r\n"  # CRLF and all: back byte for byte
    repo.write("GEMINI.md", gemini)
    repo.write(".cursor/rules/style.mdc", "---\nalwaysApply: true\n---\nTabs.\n")
    repo.write(".github/workflows/ci.yml", "on: push\n")
    repo.write("src/a.py", SOURCE)
    repo.commit_all("initial")
    before = {p: p.read_bytes() for p in repo.path.rglob("*") if p.is_file() and ".git" not in p.parts}
    repo.gitmem("init", "--agent", "copilot", "--agent", "cursor", "--agent", "gemini", "--agent", "agents-md")
    add_entry(repo, "law", "Use tabs.")
    add_entry(repo, "hazard", "a.py is shared with the mobile app.", "--anchor", "src/a.py")
    assert "Use tabs." in repo.read("GEMINI.md") and repo.read("GEMINI.md").startswith("# Project notes")
    assert json.loads(repo.read(".gemini/settings.json"))["hooks"]["AfterTool"][0]["hooks"][0]["timeout"] == 10_000
    assert (repo.path / "AGENTS.md").exists() and (repo.path / COPILOT).is_dir()
    repo.gitmem("uninstall")
    after = {p: p.read_bytes() for p in repo.path.rglob("*") if p.is_file() and ".git" not in p.parts
             and ".gitmem" not in p.parts}
    assert after == before
    for gone in (COPILOT, ".github/instructions", ".gemini", "AGENTS.md", ".claude"):
        assert not (repo.path / gone).exists(), gone
    assert (repo.path / CURSOR / "style.mdc").exists()
    attributes = (repo.path / ".git/info/attributes")
    assert "gitmem-generated" not in (attributes.read_text() if attributes.exists() else "")


@pytest.mark.parametrize("rel, agent", [("GEMINI.md", "gemini"), ("AGENTS.md", "agents-md")])
def test_a_crlf_file_gets_its_section_in_crlf(repo, monkeypatch, rel, agent):
    """A file checked out with CRLF line ends (Windows, core.autocrlf) keeps them: gitmem's
    section mixed in with LF would show the whole file changed in some editors and diffs."""
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    original = b"# Project notes\r\n\r\nBuild with make.\r\n"
    repo.write(rel, original)
    repo.commit_all("initial")
    repo.gitmem("init", "--agent", agent)
    add_entry(repo, "law", "Use tabs.")
    data = (repo.path / rel).read_bytes()
    assert b"Use tabs." in data and data.startswith(original + b"\r\n<!-- gitmem:begin")
    assert data.count(b"\n") == data.count(b"\r\n"), data
    repo.gitmem("uninstall")
    assert (repo.path / rel).read_bytes() == original


def test_a_clone_with_core_autocrlf_keeps_its_crlf_checkout_and_commits_the_sections(repo, tmp_path, monkeypatch):
    """Windows' core.autocrlf=true checks files out with CRLF: gitmem's LF rewrite of a generated
    file showed it modified for good, AGENTS.md's CRLF copy counted as the developer's change (its
    section never joined gitmem's commits), and status called the CRLF sections stale."""
    from conftest import GitRepo

    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    repo.write("AGENTS.md", "# Project\n\nBe nice.\n")
    repo.write("src/a.py", SOURCE)
    repo.commit_all("initial")
    repo.gitmem("init", "--agent", "claude-code", "--agent", "cursor", "--agent", "agents-md")
    add_entry(repo, "law", "Use tabs.")
    repo.commit_all("gitmem for the team")
    subprocess.run(["git", "-c", "core.autocrlf=true", "clone", "-q", str(repo.path), str(tmp_path / "win")], check=True)
    win = GitRepo(tmp_path / "win")
    win.git("config", "core.autocrlf", "true")
    assert (win.path / "AGENTS.md").read_bytes().startswith(b"# Project\r\n")
    win.gitmem("init")
    assert win.git("status", "--porcelain") == ""
    law = add_entry(win, "law", "Never commit secrets.")
    assert win.git("status", "--porcelain") == ""
    assert {"AGENTS.md", f"{CURSOR}/gitmem.mdc"} <= set(win.git("show", "--name-only", "--format=", "HEAD").split())
    for rel in ("AGENTS.md", f"{CURSOR}/gitmem.mdc"):
        data = (win.path / rel).read_bytes()
        assert law.encode() in data and data.count(b"\n") == data.count(b"\r\n"), rel
        assert law in win.git("show", f"HEAD:{rel}") and "\r" not in win.git("show", f"HEAD:{rel}")
    states = {f["path"]: f["state"] for a in json.loads(win.gitmem("status", "--json").stdout)["agents"]
              for f in a["files"]}
    assert states["AGENTS.md"] == states[f"{CURSOR}/gitmem.mdc"] == "current", states


def test_where_git_checks_files_out_with_crlf_gitmems_new_files_are_crlf(repo, monkeypatch):
    """`* text eol=crlf` with core.safecrlf=true: every LF file gitmem created (settings, hooks,
    generated files, a new scope's file its own commit added) made `git add -A` refuse."""
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    repo.write(".gitattributes", b"* text eol=crlf\r\n")
    repo.write("src/a.py", SOURCE.replace("\n", "\r\n"))
    repo.commit_all("initial")
    repo.git("config", "core.safecrlf", "true")
    repo.gitmem("init", *(arg for agent in ("claude-code", "codex", "gemini", "copilot", "cursor", "agents-md")
                          for arg in ("--agent", agent)))
    repo.commit_all("gitmem")  # `git add -A` refused before
    add_entry(repo, "law", "Use tabs.")
    add_entry(repo, "hazard", "a.py is shared with the mobile app.", "--anchor", "src/a.py")
    repo.git("add", "-A")
    assert repo.git("status", "--porcelain") == ""
    for rel in (".claude/settings.json", ".codex/hooks.json", "AGENTS.md", *(f"{CURSOR}/{n}" for n in scoped(repo.path, CURSOR))):
        data = (repo.path / rel).read_bytes()
        assert data.count(b"\n") == data.count(b"\r\n"), rel


def crlf_agents_md(repo, monkeypatch, text: bytes) -> None:
    """A repository whose AGENTS.md is committed with CRLF line ends, served with gitmem's section."""
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    repo.write("AGENTS.md", text)
    repo.write("src/a.py", SOURCE)
    repo.commit_all("initial")
    repo.gitmem("init", "--agent", "claude-code", "--agent", "agents-md")
    repo.commit_all("gitmem")


def test_an_agents_md_stored_with_crlf_joins_gitmems_commits_in_an_autocrlf_clone(repo, tmp_path, monkeypatch):
    """git converts no blob stored with CRLF: the checkout's bytes are the blob's, though `git
    hash-object --path` would convert them."""
    from conftest import GitRepo

    crlf_agents_md(repo, monkeypatch, b"# Project\r\n\r\nSome rules.\r\n")
    subprocess.run(["git", "-c", "core.autocrlf=true", "clone", "-q", str(repo.path), str(tmp_path / "win")], check=True)
    win = GitRepo(tmp_path / "win")
    win.git("config", "core.autocrlf", "true")
    win.gitmem("init")
    law = add_entry(win, "law", "Prefer pathlib over os.path.")
    assert win.git("status", "--porcelain") == "" and law in win.git("show", "HEAD:AGENTS.md")


def test_two_branches_merging_a_crlf_agents_md_keep_its_line_ends(repo, monkeypatch):
    """The merge driver read the three versions with universal newlines and wrote LF: the merge
    commit rewrote every line of a CRLF AGENTS.md, the developer's text included."""
    crlf_agents_md(repo, monkeypatch, b"# Project\r\n\r\nBe nice.\r\n")
    repo.git("checkout", "-q", "-b", "side")
    theirs = add_entry(repo, "law", "Prefer small functions.")
    repo.git("checkout", "-q", "main")
    ours = add_entry(repo, "law", "Never commit secrets.")
    repo.git("merge", "-q", "--no-edit", "side")
    merged = subprocess.run(["git", "show", "HEAD:AGENTS.md"], cwd=repo.path, capture_output=True).stdout
    assert ours.encode() in merged and theirs.encode() in merged
    assert merged.count(b"\n") == merged.count(b"\r\n") and merged.startswith(b"# Project\r\n"), merged
    assert "AGENTS.md  current" in repo.gitmem("status").stdout


GEMINI_SETTINGS_WITH_COMMENTS = """{
  // the team's Gemini CLI settings (Gemini CLI reads and keeps comments)
  "ui": {"theme": "GitHub"}, /* shared */
  "hooks": {
    "SessionStart": [{"hooks": [{"type": "command", "command": "echo team"}]}]
  },
  "general": {"vimMode": false} // last
}
"""


def test_a_gemini_settings_file_with_comments_keeps_them(repo, monkeypatch):
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    repo.write(".gemini/settings.json", GEMINI_SETTINGS_WITH_COMMENTS)
    repo.write("src/a.py", SOURCE)
    repo.commit_all("initial")
    assert "added gitmem's Gemini CLI hooks" in repo.gitmem("init", "--agent", "gemini").stdout
    text = repo.read(".gemini/settings.json")
    for kept in ("// the team's Gemini CLI settings", '"ui": {"theme": "GitHub"}, /* shared */',
                 '"general": {"vimMode": false} // last'):
        assert kept in text
    hooks = jsonc.loads(text)["hooks"]
    assert hooks["SessionStart"][0]["hooks"][0]["command"] == "echo team" and "AfterTool" in hooks
    report = json.loads(repo.gitmem("status", "--json").stdout)["agents"]
    gemini = next(a for a in report if a["agent"] == "gemini")
    assert gemini["hooks"]["exact"] is True and gemini["hooks"]["problem"] is None
    assert "Gemini CLI hooks" not in repo.gitmem("init").stdout  # idempotent: nothing to add
    repo.gitmem("uninstall")
    assert repo.read(".gemini/settings.json") == GEMINI_SETTINGS_WITH_COMMENTS


@pytest.mark.parametrize("rel, agent", [(".codex/hooks.json", "codex"), (".gemini/settings.json", "gemini"),
                                        (".claude/settings.json", "claude-code")])
def test_a_settings_file_edited_after_init_keeps_its_style_through_uninstall(repo, monkeypatch, rel, agent):
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    styled = '{\r\n    "env": {"A": "1"},\r\n    "model": "x"\r\n}\r\n'  # CRLF, 4 spaces, compact inner object
    repo.write(rel, styled.encode())
    repo.write("src/a.py", SOURCE)
    repo.commit_all("initial")
    repo.gitmem("init", "--agent", agent)
    installed = (repo.path / rel).read_bytes().decode()
    assert installed.endswith('    "env": {"A": "1"},\r\n    "model": "x"\r\n}\r\n')
    assert "\n" not in installed.replace("\r\n", "") and '\r\n        "' in installed  # its line breaks, its indent
    # the developer changes their own setting before gitmem is taken out
    (repo.path / rel).write_bytes(installed.replace('"model": "x"', '"model": "y"').encode())
    repo.gitmem("uninstall")
    assert (repo.path / rel).read_bytes() == styled.replace('"model": "x"', '"model": "y"').encode()


@pytest.mark.parametrize("text", ['{"a": 1}', '{}', '{\n\t"a": [1, 2]\n}\n', '{\r\n  "a": "\\u00e9"\r\n}'])
def test_one_member_set_and_removed_leaves_the_rest_byte_for_byte(text):
    added = jsonc.set_member(text, "hooks", {"X": [{"hooks": []}]})
    assert json.loads(added) == {**json.loads(text), "hooks": {"X": [{"hooks": []}]}}
    assert ("\n" in added) == ("\n" in text) and ("\r\n" in added) == ("\r\n" in text)
    assert jsonc.set_member(added, "hooks", None) == text


@pytest.mark.parametrize("text, without", [
    ('{\n  "a": 1, // keep\n  "hooks": {"X": []}\n}\n', '{\n  "a": 1 // keep\n}\n'),
    ('{\n  "hooks": {"X": []}, // about hooks\n  "url": "http://x//y" /* z */\n}\n',
     '{\n   // about hooks\n  "url": "http://x//y" /* z */\n}\n'),
    ('{ /* only */ "hooks": {"X": []} }', '{ /* only */  }'),
])
def test_json_with_comments_loses_one_member_and_nothing_else(text, without):
    assert jsonc.remove_member(text, "hooks") == without
    assert "hooks" not in jsonc.loads(without)
    back = jsonc.replace_member(without, "hooks", {"X": []})
    assert jsonc.loads(back) == jsonc.loads(text) and jsonc.strip_comments(back) != back


def test_a_comment_inside_gemini_hooks_is_not_dropped(repo, monkeypatch):
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    commented = '{\n  "hooks": { // ours\n    "SessionStart": []\n  }\n}\n'
    repo.write(".gemini/settings.json", commented)
    repo.commit_all("initial")
    out = repo.gitmem("init", "--agent", "gemini", check=False)
    assert "holds comments gitmem would lose" in out.stdout + out.stderr
    assert repo.read(".gemini/settings.json") == commented


def test_a_developers_own_rule_file_named_like_gitmems_is_never_taken_for_one(repo, monkeypatch):
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    own = "---\nalwaysApply: true\n---\nThe files gitmem*.mdc are generated by gitmem; never edit them.\n"
    repo.write(f"{CURSOR}/gitmem-usage.mdc", own)
    repo.write("src/a.py", SOURCE)
    repo.commit_all("our own rules")
    repo.gitmem("init", "--agent", "cursor")
    add_entry(repo, "law", "Use tabs.")
    assert repo.read(f"{CURSOR}/gitmem-usage.mdc") == own and "gitmem.mdc" in scoped(repo.path, CURSOR)
    assert content.GENERATED in repo.read(f"{CURSOR}/gitmem.mdc")


def test_dropping_an_agent_takes_its_files_down(gm):
    add_entry(gm, "hazard", "a.py is shared with the mobile app.", "--anchor", "src/a.py")
    assert len(scoped(gm.path, CURSOR)) == 2
    gm.gitmem("init", "--agent", "claude-code", "--agent", "copilot")
    assert not (gm.path / CURSOR).exists()
    assert len(scoped(gm.path, COPILOT)) == 2


# -- Gemini CLI ------------------------------------------------------------------------------

def gemini_hook(root: Path, event: str, **fields) -> Delivered:
    """One hook run as Gemini CLI runs it: the command from .gemini/settings.json in the project
    dir, GEMINI_PROJECT_DIR set, the event on stdin (base fields plus the event's own)."""
    settings = json.loads((root / ".gemini/settings.json").read_text())
    payload = {"session_id": "gemini-1", "transcript_path": str(root / ".gemini-chat.jsonl"), "cwd": str(root),
               "hook_event_name": event, "timestamp": "2026-12-01T10:30:00Z", **fields}
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_")}
    env.update(GEMINI_PROJECT_DIR=str(root), GEMINI_SESSION_ID="gemini-1", GITMEM_NO_DAEMON="1")
    commands = [hook["command"] for group in settings["hooks"].get(event, [])
                if not (group.get("matcher") and "tool_name" in fields
                        and not re.fullmatch(group["matcher"], fields["tool_name"]))
                for hook in group["hooks"]]
    return run_hooks(commands, payload, event, root, env)


def gemini_refusals(root: Path, tool_name: str, tool_input: dict) -> list[dict]:
    """Gemini CLI's BeforeTool hooks for one tool call, as it runs them: each answer, parsed."""
    settings = json.loads((root / ".gemini/settings.json").read_text())
    payload = {"session_id": "gemini-1", "transcript_path": str(root / ".gemini-chat.jsonl"), "cwd": str(root),
               "hook_event_name": "BeforeTool", "timestamp": "2026-12-01T10:30:00Z", "tool_name": tool_name,
               "tool_input": tool_input}
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_")}
    env.update(GEMINI_PROJECT_DIR=str(root), GEMINI_SESSION_ID="gemini-1", GITMEM_NO_DAEMON="1", GEMINI_CLI="1")
    answers = []
    for group in settings["hooks"].get("BeforeTool", []):
        if group.get("matcher") and not re.fullmatch(group["matcher"], tool_name):
            continue
        for hook in group["hooks"]:
            proc = subprocess.run(["sh", "-c", hook["command"]], input=json.dumps(payload).encode(), cwd=root,
                                  env=env, capture_output=True, timeout=60)
            assert proc.returncode == 0, proc
            answers.append(json.loads(proc.stdout) if proc.stdout.strip() else {})
    return answers


def test_gemini_cannot_write_memory_through_its_tools(gm):
    """The agent stays read-only under Gemini CLI too: its BeforeTool hook refuses a write_file,
    replace or shell command into memory, with a reason the agent reads, and lets the rest run."""
    gm.gitmem("init", "--agent", "gemini")
    law = add_entry(gm, "law", "Use tabs.")
    entry = str(gm.path / ".gitmem" / "entries" / f"{law}.yaml")
    for tool, tool_input in (("write_file", {"file_path": entry, "content": "body: push to main\n"}),
                             ("replace", {"file_path": entry, "old_string": "Use tabs.", "new_string": "x"}),
                             ("run_shell_command", {"command": "gitmem add law 'Push straight to main.'"}),
                             ("run_shell_command", {"command": f"echo 'body: x' > {entry}"}),
                             # its shell tool's `directory` is where the command runs
                             ("run_shell_command", {"command": f"rm {law}.yaml", "directory": ".gitmem/entries"}),
                             ("run_shell_command", {"command": "rm -r entries", "directory": "src/../.gitmem"}),
                             ("run_shell_command", {"command": f"rm {law}.yaml", "dir_path": ".gitmem/entries"})):
        answers = gemini_refusals(gm.path, tool, tool_input)
        assert [a.get("decision") for a in answers] == ["deny"], (tool, tool_input)
        assert "may not" in answers[0]["reason"] and "gitmem add" in answers[0]["reason"]
    for tool, tool_input in (("write_file", {"file_path": str(gm.path / "src/a.py"), "content": "x = 1\n"}),
                             ("run_shell_command", {"command": "gitmem list && cat .gitmem/entries/*.yaml"}),
                             ("run_shell_command", {"command": "rm a.py", "directory": "src"})):
        assert gemini_refusals(gm.path, tool, tool_input) == [{}], (tool, tool_input)
    assert gm.entries()[law]["body"] == "Use tabs."
    assert own_errors(gm.path) == ""


def test_gemini_cannot_switch_its_hooks_off(gm):
    """Gemini CLI's settings hold gitmem's hooks, the read-only gate among them: an edit that switches
    hooks off or takes gitmem's out is refused, as for Claude Code's; any other edit runs."""
    gm.gitmem("init", "--agent", "gemini")
    path = str(gm.path / ".gemini/settings.json")
    text = gm.read(".gemini/settings.json")
    settings = json.loads(text)
    for tool, tool_input in (
            ("write_file", {"file_path": path, "content": json.dumps({**settings, "hooksConfig": {"enabled": False}})}),
            ("write_file", {"file_path": path, "content": "// comments are fine\n" + json.dumps(
                {**settings, "hooksConfig": {"disabled": ["gitmem"]}})}),
            ("write_file", {"file_path": path, "content": "{}"}),
            ("replace", {"file_path": path, "old_string": "{", "new_string": "{{"}),
            ("run_shell_command", {"command": "echo {} > .gemini/settings.json"})):
        answers = gemini_refusals(gm.path, tool, tool_input)
        assert [a.get("decision") for a in answers] == ["deny"], (tool, tool_input)
        assert "settings" in answers[0]["reason"], answers
    # Gemini's replace with expected_replacements replaces every one
    gm.write(".gemini/settings.json", text.replace("{", '{"telemetry": {"enabled": true}, "hooksConfig": {"enabled": true},', 1))
    both = {"file_path": path, "old_string": '{"enabled": true}', "new_string": '{"enabled": false}', "expected_replacements": 2}
    assert [a.get("decision") for a in gemini_refusals(gm.path, "replace", both)] == ["deny"]
    # and with allow_multiple; its replace also finds text that is not there as written (by lines
    # trimmed, by spaces, or mended by a model): such an edit cannot be read, and is refused
    every = {**both, "expected_replacements": None, "allow_multiple": True}
    squeezed = {**both, "old_string": '"hooksConfig":{"enabled":true}', "new_string": '"hooksConfig":{"enabled":false}'}
    for edit in (every, squeezed):
        answers = gemini_refusals(gm.path, "replace", edit)
        assert [a.get("decision") for a in answers] == ["deny"] and "settings" in answers[0]["reason"], edit
    gm.write(".gemini/settings.json", text)
    for command in ("python3 -c \"open('.gemini/settings.json','w').write('{}')\"", "rm -rf .gemini",
                    "mv .gemini .gemini.off"):
        assert [a.get("decision") for a in gemini_refusals(gm.path, "run_shell_command", {"command": command})] == \
            ["deny"], command
    kept = "// the team's model\n" + json.dumps({**settings, "model": {"name": "gemini-2.5-pro"},
                                                  "telemetry": {"enabled": False}}, indent=2)
    assert gemini_refusals(gm.path, "write_file", {"file_path": path, "content": kept}) == [{}]
    assert gm.read(".gemini/settings.json") == text


def test_gemini_gets_the_repository_block_in_gemini_md_and_anchored_entries_after_tools(gm):
    gm.gitmem("init", "--agent", "gemini")
    law = add_entry(gm, "law", "Use tabs.")
    hazard = add_entry(gm, "hazard", "g() must stay pure.", "--anchor", "src/a.py::g")
    prompt_law = add_entry(gm, "law", "Billing changes need a second reviewer.", "--on", "prompt:src/b.py")
    freeze = add_entry(gm, "law", "No deploys during the audit.", "--expires", "2099-01-31")
    section = gm.read("GEMINI.md")
    assert ids(section) == [law, freeze] and "generated by gitmem" in section
    assert f"(until 2099-01-31): No deploys during the audit. [{freeze}]" in section  # GEMINI.md outlives days
    path = str(gm.path / "src/a.py")
    assert gemini_hook(gm.path, "AfterTool", tool_name="read_file", tool_input={"file_path": path},
                       tool_response={"llmContent": SOURCE, "returnDisplay": ""}).active == [hazard]
    assert not gemini_hook(gm.path, "AfterTool", tool_name="read_file", tool_input={"file_path": path},
                           tool_response={"llmContent": SOURCE})
    assert gemini_hook(gm.path, "BeforeAgent", prompt="please tidy src/b.py").active == [prompt_law]
    # Gemini compresses its context: what hooks added goes with it, so it comes again
    assert not gemini_hook(gm.path, "PreCompress", trigger="auto")
    assert gemini_hook(gm.path, "AfterTool", tool_name="read_file", tool_input={"file_path": path},
                       tool_response={"llmContent": SOURCE}).active == [hazard]
    assert own_errors(gm.path) == ""


def test_gemini_is_not_told_again_what_gemini_md_gave_it(gm):
    """An anchored law is in GEMINI.md's block (repository-wide) and fires when its file is read:
    the session has it from GEMINI.md, so reading the file does not repeat it."""
    gm.gitmem("init", "--agent", "gemini")
    law = add_entry(gm, "law", "g() must stay pure.", "--anchor", "src/a.py::g")
    assert ids(gm.read("GEMINI.md")) == [law]
    assert not gemini_hook(gm.path, "BeforeAgent", prompt="hi")
    assert not gemini_hook(gm.path, "AfterTool", tool_name="read_file", tool_input={"file_path": str(gm.path / "src/a.py")},
                           tool_response={"llmContent": SOURCE})


def test_after_compression_gemini_hears_again_what_changed_since_its_session_started(gm):
    """Gemini CLI keeps GEMINI.md as it read it at its start through compression (it does not read
    it again); what hooks added goes. A rule recorded mid-session and a withdrawal announced
    mid-session are news again at the next moment after compression; what the start's GEMINI.md
    gave is not repeated."""
    gm.gitmem("init", "--agent", "gemini")
    old = add_entry(gm, "law", "Use tabs.")
    kept = add_entry(gm, "law", "Never log tokens.")
    assert not gemini_hook(gm.path, "BeforeAgent", prompt="hi")  # the session starts with GEMINI.md's block
    new = add_entry(gm, "law", "Never push directly to main.")
    gm.gitmem("revoke", old, "--reason", "we use the formatter's defaults now")
    told = gemini_hook(gm.path, "BeforeAgent", prompt="next")
    assert told.active == [new] and told.retracted == [old], told
    assert not gemini_hook(gm.path, "PreCompress", trigger="auto")
    again = gemini_hook(gm.path, "BeforeAgent", prompt="after the compression")
    assert again.active == [new] and again.retracted == [old] and kept not in again.ids, again
    assert not gemini_hook(gm.path, "BeforeAgent", prompt="and then")
    assert own_errors(gm.path) == ""


def test_gemini_read_many_files_delivers_the_entries_of_the_files_it_takes_in(gm):
    """read_many_files names files, folders and globs: the anchored files among them get what a
    read_file of each would bring, once."""
    gm.gitmem("init", "--agent", "gemini")
    hazard = add_entry(gm, "hazard", "g() must stay pure.", "--anchor", "src/a.py::g")
    other = add_entry(gm, "hazard", "b.py is shared with the mobile app.", "--anchor", "src/b.py")
    read = {"llmContent": SOURCE, "returnDisplay": ""}
    for include in (["src/a.py"], ["src/*.py"], ["src/"], ["**/*.py"], ["."], [str(gm.path)], ["src/*.{py,ts}"]):
        got = gemini_hook(gm.path, "AfterTool", tool_name="read_many_files", tool_input={"include": include},
                          tool_response=read)
        assert sorted(got.active) == sorted([hazard] if include == ["src/a.py"] else [hazard, other]), include
        assert not gemini_hook(gm.path, "PreCompress", trigger="auto")  # what was delivered may come again
    assert not gemini_hook(gm.path, "AfterTool", tool_name="read_many_files", tool_input={"include": ["docs/"]},
                           tool_response=read)
    assert own_errors(gm.path) == ""


def test_gemini_shell_commands_are_read_from_the_folder_its_tool_runs_them_in(gm, tmp_path):
    """run_shell_command's `dir_path`: `pytest test_b.py` there names src/test_b.py; a commit there,
    in another repository, gets none of this one's rituals."""
    gm.gitmem("init", "--agent", "gemini")
    hazard = add_entry(gm, "hazard", "test_b.py needs the fake clock.", "--on", "run:src/test_b.py")
    ritual = add_entry(gm, "ritual", "Run make lint before every commit.")
    other = tmp_path / "other"
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    ran = gemini_hook(gm.path, "AfterTool", tool_name="run_shell_command",
                      tool_input={"command": "pytest test_b.py", "dir_path": "src"}, tool_response={"llmContent": ""})
    assert ran.active == [hazard] and "About the command that just ran" in ran.text
    committed = gemini_hook(gm.path, "AfterTool", tool_name="run_shell_command",
                            tool_input={"command": "git commit -m wip", "dir_path": str(other)},
                            tool_response={"llmContent": ""})
    assert ritual not in committed.active


def test_an_entry_that_comes_in_during_a_gemini_session_reaches_it_once(gm):
    """Gemini reads the repository block from GEMINI.md as it starts; a law recorded during the
    session comes at its next moment, once, and what GEMINI.md held is not repeated."""
    gm.gitmem("init", "--agent", "gemini")
    law = add_entry(gm, "law", "Use tabs.")
    assert not gemini_hook(gm.path, "BeforeAgent", prompt="tidy the readme")  # GEMINI.md has the law
    later = add_entry(gm, "law", "All money amounts are integer cents.")
    arrived = gemini_hook(gm.path, "BeforeAgent", prompt="now the invoices")
    assert arrived.active == [later] and law not in arrived.text
    assert not gemini_hook(gm.path, "BeforeAgent", prompt="and the receipts")


def test_gemini_gets_a_files_commit_entries_after_its_shell_tool_made_the_commit(gm):
    """Gemini answers a commit only after it ran (AfterTool): the work tree is clean by then, so
    what the commit held is read from the commit it made."""
    gm.gitmem("init", "--agent", "gemini")
    gm.commit_all("gemini hooks")
    hazard = add_entry(gm, "hazard", "g() is called from the billing cron: announce changes in #billing.",
                       "--anchor", "src/a.py::g", "--on", "commit")
    gm.write("src/a.py", SOURCE.replace("return x * 2", "return x * 3"))
    gm.git("commit", "-qam", "tweak g")
    committed = gemini_hook(gm.path, "AfterTool", tool_name="run_shell_command",
                            tool_input={"command": "git commit -am 'tweak g'"}, tool_response={"llmContent": ""})
    assert hazard in committed.active
    assert "About the commit just made" in committed.text and "Before this commit" not in committed.text



class GeminiChat:
    """A Gemini CLI chat recording as the CLI keeps it (the shape of its format, written here;
    `info` notices, thoughts, tool calls and token counts beside the text): a `.jsonl` path gets
    the current CLI's line format (the session's metadata, then each message appended, in full
    again when it changes, `$set` metadata updates, `$rewindTo` rewinds); a `.json` path an older
    CLI's one document, rewritten whole after every message."""

    def __init__(self, path: Path, session: str) -> None:
        self.path, self.messages, self.made = path, [], 0
        self.lines = path.suffix == ".jsonl"
        self.head = {"sessionId": session, "projectHash": "9f" * 32, "startTime": "2026-12-01T10:00:00.000Z"}
        if self.lines:
            self._append({**self.head, "lastUpdated": self.head["startTime"]})
        else:
            self._write()

    def _append(self, record: object) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")

    def _write(self) -> None:
        data = {**self.head, "lastUpdated": f"2026-12-01T10:{len(self.messages):02d}:00.000Z",
                "messages": self.messages}
        self.path.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")

    def add(self, kind: str, content: object, **extra: object) -> str:
        self.made += 1  # the CLI's ids are UUIDs: never one a rewound message had
        message = {"id": f"m{self.made}", "timestamp": f"2026-12-01T10:{self.made:02d}:00Z",
                   "type": kind, "content": content, **extra}
        self.messages.append(message)
        if self.lines:
            self._append(message)
            self._append({"$set": {"lastUpdated": message["timestamp"]}})
        else:
            self._write()
        return str(message["id"])

    def update(self, message_id: str, **changes: object) -> None:
        """The line format records a changed message again, whole (tool calls, tokens added)."""
        message = next(m for m in self.messages if m["id"] == message_id)
        message.update(changes)
        self._append(message)

    def rewind(self, message_id: str) -> None:
        """`/rewind`: that message and every later one are gone."""
        self.messages = self.messages[:[m["id"] for m in self.messages].index(message_id)]
        self._append({"$rewindTo": message_id})

    def set_history(self, *made: dict, kept: int = 0) -> None:
        """The CLI setting its history itself (compression, a session's start): the messages it
        makes (each with an id of its own, never recorded on a line before), then the last `kept`."""
        self.messages = [*made, *self.messages[len(self.messages) - kept:]]
        self._append({"$set": {"messages": self.messages}})

    def user(self, content: object, **extra: object) -> str:
        return self.add("user", content, **extra)

    def gemini(self, text: str) -> str:
        return self.add("gemini", text, thoughts=[{"subject": "Planning", "description": "Read the file first."}],
                 toolCalls=[{"id": "read_file-1", "name": "read_file", "args": {"file_path": "src/a.py"},
                             "status": "success", "result": [{"functionResponse": {"response": {"output": "..."}}}]}],
                 tokens={"input": 1200, "output": 40, "total": 1240}, model="gemini-2.5-pro")


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_gemini_chat_recording_reads_into_typed_turns(tmp_path, suffix):
    """Only what the developer typed is a turn: slash commands, shell-mode lines and the CLI's
    notices are not; gitmem's own context is stripped from a prompt it was recorded with; a
    prompt given as parts is joined; the reply is the model's visible text only. The same in the
    current CLI's line format and an older CLI's one document."""
    from gitmem.writer import gemini_chat, reader

    chat = GeminiChat(tmp_path / f"session-2026-12-01T10-00-gem1{suffix}", "gem-1")
    chat.add("info", "Authenticated with Google.")
    chat.user("fyi we're moving off axios, use the built-in fetch for every HTTP call")
    chat.gemini("Understood. I'll use fetch.")
    chat.gemini("Done: the client now calls fetch.")
    chat.user("/memory show")
    chat.add("info", "Memory: 2 files")
    chat.user("!ls src")
    chat.user([{"text": "<gitmem-context>\nThe developer stated: Use tabs.\n</gitmem-context>\n"},
               {"text": "now run the tests"}])
    chat.add("error", "Quota exceeded.")
    chat.gemini("All 12 tests pass.")
    # an `@path` prompt: the CLI appends the file (a comment in it is no word of the developer's),
    # and records what it displayed; another tool's hook context appended as a part of its own
    chat.user([{"text": "tidy up @src/config.py"}, {"text": "\n--- Content from referenced files ---"},
               {"text": "\nContent from @src/config.py:\n"}, {"text": "# never call syncLedger() from a handler\n"},
               {"text": "\n--- End of content ---"}], displayContent=[{"text": "tidy up @src/config.py"}])
    chat.gemini("Tidied.")
    chat.user([{"text": "now the readme"}, {"text": "Always deploy on Fridays. (another hook's context)"}])
    chat.gemini("Done.")
    assert gemini_chat.is_chat(chat.path)
    turns = reader.read_turns(chat.path)
    assert [(t.index, t.user, t.assistant) for t in turns] == [
        (0, "fyi we're moving off axios, use the built-in fetch for every HTTP call",
         "Understood. I'll use fetch.\n\nDone: the client now calls fetch."),
        (1, "now run the tests", "All 12 tests pass."), (2, "tidy up @src/config.py", "Tidied."),
        (3, "now the readme", "Done.")]
    assert reader.last_turn_index(chat.path) == 3
    assert [t.index for t in reader.read_turns(chat.path, start=3)] == [3]
    if suffix == ".jsonl":
        return
    (tmp_path / "half.json").write_text(chat.path.read_text()[:200])  # caught mid-rewrite
    assert reader.read_turns(tmp_path / "half.json") == [] and reader.last_turn_index(tmp_path / "half.json") == -1
    (tmp_path / "deep.json").write_text('{"sessionId": "x", "messages": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert reader.read_turns(tmp_path / "deep.json") == []  # nesting no recording has: no turns, no crash
    claude = tmp_path / "transcript.jsonl"  # Claude Code's records name a sessionId too
    claude.write_text(json.dumps({"type": "user", "sessionId": "s", "message": {"role": "user", "content": "hi"},
                                  "uuid": "u1", "timestamp": "2026-12-01T10:00:00Z"}) + "\n")
    assert not gemini_chat.is_chat(claude) and [t.user for t in reader.read_turns(claude)] == ["hi"]


def test_a_gemini_line_recording_follows_changed_messages_rewinds_and_half_lines(tmp_path):
    """A message recorded again when it changes is read once, in its place, with its latest text; a
    rewind takes that message and every later one away, and a turn typed after it is numbered
    after every turn recorded before it (the writer has judged those up to its watermark); a line
    caught mid-append is left out."""
    from gitmem.writer import reader

    chat = GeminiChat(tmp_path / "session-2026-12-01T10-00-gem2.jsonl", "gem-2")
    chat.user("fyi: never call syncLedger() from a request handler")
    reply = chat.gemini("")
    chat.update(reply, content="Understood.", tokens={"input": 10, "output": 2, "total": 12})
    typo = chat.user("from now on use fetcch")
    chat.gemini("Which library?")
    chat.rewind(typo)
    chat.user("from now on use the built-in fetch for every HTTP call")
    chat.gemini("Will do.")
    with chat.path.open("a", encoding="utf-8") as handle:
        handle.write('{"id": "m9", "type": "user", "content": "half a li')
    assert [(t.index, t.user, t.assistant) for t in reader.read_turns(chat.path)] == [
        (0, "fyi: never call syncLedger() from a request handler", "Understood."),
        (2, "from now on use the built-in fetch for every HTTP call", "Will do.")]
    assert reader.last_turn_index(chat.path) == 2
    # judged up to the typo before the rewind: the turn typed after it is still ahead
    assert [t.index for t in reader.read_turns(chat.path, start=2)] == [2]


def test_what_the_gemini_cli_writes_into_its_own_history_is_no_turn(tmp_path):
    """The setup text a session starts with and the summary compression leaves in the history reach
    the recording as messages of type `user` with a `$set` of the whole list: never typed, no turn,
    and the reply after them answers no typed prompt; the prompts kept through it keep their turns."""
    from gitmem.writer import reader

    chat = GeminiChat(tmp_path / "session-2026-12-01T10-00-gem3.jsonl", "gem-3")
    chat.set_history({"id": "setup", "type": "user", "content": [{"text": "This is the Gemini CLI. We are "
                      "setting up the context for our chat. Always answer in Markdown."}]},
                     {"id": "setup-ack", "type": "gemini", "content": [{"text": "Got it."}]})
    chat.user("refactor the ledger please")
    chat.gemini("Done.")
    chat.user("fyi we never deploy on Fridays")
    chat.gemini("Noted.")
    chat.set_history({"id": "snapshot", "type": "user", "content": [{"text": "<state_snapshot><key_knowledge>"
                      "- The user requires that all money be stored as integer cents.</key_knowledge></state_snapshot>"}]},
                     {"id": "snapshot-ack", "type": "gemini", "content": [{"text": "Thanks for the context!"}]},
                     kept=2)
    chat.user("now continue")
    chat.gemini("Continuing.")
    assert [(t.index, t.user, t.assistant) for t in reader.read_turns(chat.path)] == [
        (0, "refactor the ledger please", "Done."), (1, "fyi we never deploy on Fridays", "Noted."),
        (2, "now continue", "Continuing.")]
    assert reader.last_turn_index(chat.path) == 2


def test_a_gemini_recording_past_any_size_worth_reading_whole_still_gives_its_turns(tmp_path):
    """A busy turn records its reply again, whole, at every tool call: the file passes 64 MiB in one
    session, and every turn is still read."""
    from gitmem.writer import reader

    chat = GeminiChat(tmp_path / "session-2026-12-01T10-00-gem4.jsonl", "gem-4")
    chat.user("we never deploy on Fridays")
    reply = chat.gemini("Reading the deploy scripts.")
    output = "x" * 2_000_000
    calls: list[dict] = []
    for n in range(34):
        calls.append({"id": f"read_file-{n}", "name": "read_file", "args": {"file_path": f"deploy/{n}.sh"},
                      "result": [{"functionResponse": {"response": {"output": output}}}]})
        chat.update(reply, toolCalls=calls[-1:] if n % 2 else calls[-2:])
    chat.user("and keep the changelog in sync")
    assert chat.path.stat().st_size > 64 * 1024 * 1024
    assert [(t.index, t.user) for t in reader.read_turns(chat.path)] == [
        (0, "we never deploy on Fridays"), (1, "and keep the changelog in sync")]
    assert reader.last_turn_index(chat.path) == 1


def test_a_gemini_session_is_captured_with_the_real_model(gm, tmp_path, monkeypatch):
    """END TO END, real model: Gemini CLI's hooks as `gitmem init --agent gemini` installs them (the
    prompt, a file edit, the turn's end, the session's end), its chat recording, `gitmem drain`: the
    developer's rule is recorded in their words, attributed to the session and turn, and reaches the
    next Gemini session through GEMINI.md; the acknowledgement after it records nothing."""
    monkeypatch.delenv("GITMEM_TEST_JUDGE", raising=False)
    gm.gitmem("init", "--agent", "gemini")
    gm.commit_all("gemini reads memory too")
    rule = ("add a currency check to charge(). and going forward, never store money as floats anywhere "
            "in this repo, always use integer cents.")
    chat = GeminiChat(gm.path / ".gemini-chat.jsonl", "gemini-1")  # the transcript_path gemini_hook sends
    head = gm.git("rev-parse", "HEAD").strip()
    assert not gemini_hook(gm.path, "BeforeAgent", prompt=rule)
    chat.user(rule)
    path = gm.path / "src/a.py"
    path.write_text(SOURCE.replace("return x + 1", "return int(x) + 1"))
    gemini_hook(gm.path, "AfterTool", tool_name="replace",
                tool_input={"file_path": str(path), "old_string": "return x + 1", "new_string": "return int(x) + 1"},
                tool_response={"llmContent": "Successfully modified file"})
    logged = [json.loads(line) for line in (gm.path / ".git/gitmem/events/gemini-1.jsonl").read_text().splitlines()]
    assert [(e["tool"], e["path"]) for e in logged] == [("Edit", "src/a.py")]  # the files the turn modified
    chat.gemini("charge() now rejects non-integer amounts.")
    assert not gemini_hook(gm.path, "AfterAgent", prompt=rule, prompt_response="charge() now rejects non-integer amounts.",
                           stop_hook_active=False)
    ack = "thanks! can you run the tests now?"
    gemini_hook(gm.path, "BeforeAgent", prompt=ack)
    chat.user(ack)
    chat.gemini("All 5 tests pass.")
    gemini_hook(gm.path, "AfterAgent", prompt=ack, prompt_response="All 5 tests pass.", stop_hook_active=False)
    gemini_hook(gm.path, "SessionEnd", reason="exit")
    out = gm.gitmem("drain").stdout
    assert re.search(r"turn 0: recorded (law|hazard)", out) and "turn 1: nothing to record" in out, out
    entries = [e for e in gm.entries().values() if "float" in e["body"]]
    assert len(entries) == 1 and entries[0]["body"] in rule and entries[0]["source"] == "user", out
    log = gm.git("log", f"{head}..HEAD", "--format=%B")
    assert "Gitmem-Session: gemini-1 turn 0" in log
    if entries[0]["anchor"] is None:  # repository-wide: every Gemini session reads it in GEMINI.md
        assert entries[0]["id"] in gm.read("GEMINI.md")
    assert own_errors(gm.path) == ""


@pytest.mark.parametrize("conflict", [False, True])
def test_without_their_interpreter_the_agent_files_merge_as_git_does(gm, tmp_path, conflict):
    """The venv `gitmem init` recorded is gone: AGENTS.md and the generated files merge with git's
    own text merge (its markers on a real conflict), never a conflict with only our side in the file."""
    import shlex
    import sys

    from gitmem.delivery.agents.channels import MERGE_DRIVER as GENERATED_DRIVER
    from gitmem.githooks.install import MERGE_DRIVER as AGENTS_MD_DRIVER

    gm.gitmem("init", "--agent", "claude-code", "--agent", "cursor", "--agent", "agents-md")
    gm.commit_all("agents without hooks read memory too")
    gone = shlex.quote(str(tmp_path / "gone" / "python"))
    for name in (AGENTS_MD_DRIVER, GENERATED_DRIVER):
        command = gm.git("config", f"merge.{name}.driver").strip()
        assert shlex.quote(sys.executable) in command, command
        gm.git("config", f"merge.{name}.driver", command.replace(shlex.quote(sys.executable), gone))
    text = gm.read("AGENTS.md")
    gm.write("AGENTS.md", "# Notes\n\nBuild with make.\n\n" + text + "\nFooter.\n")
    gm.git("commit", "-q", "--no-verify", "-am", "notes around gitmem's section")
    gm.git("switch", "-q", "-c", "other")
    gm.write("AGENTS.md", gm.read("AGENTS.md").replace("Build with make.", "Build with make -j4."))
    gm.git("commit", "-q", "--no-verify", "-am", "theirs")
    gm.git("switch", "-q", "main")
    ours = ("Build with make -j8.", "Footer.") if conflict else ("Build with make.", "Footer (kept short).")
    gm.write("AGENTS.md", gm.read("AGENTS.md").replace("Build with make.", ours[0]).replace("Footer.", ours[1]))
    gm.git("commit", "-q", "--no-verify", "-am", "ours")
    proc = subprocess.run(["git", "merge", "--no-edit", "other"], cwd=gm.path, capture_output=True, text=True)
    merged = gm.read("AGENTS.md")
    if not conflict:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "Build with make -j4." in merged and "Footer (kept short)." in merged and "<<<<<<<" not in merged
    else:
        assert proc.returncode == 1 and "CONFLICT (content): Merge conflict in AGENTS.md" in proc.stdout
        assert "<<<<<<< ours:AGENTS.md\n" in merged and ">>>>>>> theirs:AGENTS.md\n" in merged
        assert "Build with make -j8." in merged and "Build with make -j4." in merged
        gm.git("merge", "--abort")

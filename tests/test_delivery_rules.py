"""The delivery rules as pure functions: defaults per kind, triggers, globs, budget, retractions."""

from __future__ import annotations

import time

import pytest

from gitmem.delivery import rules as delivery_rules
from gitmem.delivery.rules import Cue, command_matches, compile_rules, path_matches, plan, session_start_ids

NOW = time.mktime((2026, 3, 10, 12, 0, 0, 0, 0, 0)) - time.timezone
DAY = 86400


def iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def entry(entry_id, kind="law", body=None, *, anchor=None, triggers=(), source="user", status="active",
          expires=None, created=None, revoked_at=None, reason="it was removed", superseded_by=None):
    path, _, symbol = (anchor or "").partition("::")
    data = {"id": entry_id, "kind": kind, "status": status, "source": source,
            "body": body or f"body of {entry_id}",
            "anchor": {"path": path, "symbol": symbol or None, "language": None, "fingerprint": None}
            if anchor else None,
            "triggers": list(triggers), "created": {"at": created or iso(NOW - 30 * DAY)},
            "supersedes": [], "superseded_by": superseded_by, "expires": expires}
    if status == "revoked":
        data["revocation"] = {"at": revoked_at or iso(NOW - DAY), "reason": reason, "commit": None}
    return data


def rules(*entries, **delivery):
    config = {"delivery": {"session_start": {k: v for k, v in delivery.items() if k.startswith("max_")},
                           **{k: v for k, v in delivery.items() if not k.startswith("max_")}}}
    return compile_rules(list(entries), config)


def fired(compiled, cue, record=None, **kwargs):
    """What `cue` delivers; without `record`, in a session whose start offered the repository's
    session-start entries (a moment with no session start seen brings those first)."""
    if record is None:
        record = {"delivered": {}, "retracted": {},
                  "known": session_start_ids(compiled, time.strftime("%Y-%m-%d", time.gmtime(NOW)))}
    return plan(compiled, cue, record, now=NOW, **kwargs)


def ids(compiled, cue, **kwargs):
    return sorted(fired(compiled, cue, **kwargs).active)


START = Cue("session-start", source="startup")


@pytest.mark.parametrize("kind, anchor, expected", [
    ("law", None, {"session-start"}),
    ("correction", None, {"session-start"}),
    ("open_loop", None, {"session-start"}),
    ("hazard", None, {"session-start"}),
    ("ritual", None, {"session-start", "commit"}),
    # standing rules of the whole repository: at session start even when anchored
    ("law", "src/a.py", {"session-start", "read", "edit"}),
    ("hazard", "src/a.py::f", {"read", "edit"}),
    ("correction", "src/a.py", {"session-start", "read", "edit"}),
    ("open_loop", "src/a.py", {"session-start", "read", "edit"}),
    ("ritual", "src/a.py", {"edit", "commit"}),
])
def test_default_rule_per_kind(kind, anchor, expected):
    compiled = rules(entry("e", kind, anchor=anchor))
    cues = {"session-start": START, "read": Cue("read", "src/a.py"), "edit": Cue("edit", "src/a.py"),
            "commit": Cue("commit", text="git commit -m x"), "run": Cue("run", text="make"),
            "prompt": Cue("prompt", text="hello")}
    got = {name for name, cue in cues.items()
           if ids(compiled, cue, commit_paths=lambda: {"src/a.py"}) == ["e"]}
    assert got == expected


def test_anchored_entries_fire_only_for_their_file():
    compiled = rules(entry("a", "hazard", anchor="src/a.py"), entry("b", "hazard", anchor="src/b.py"))
    assert ids(compiled, Cue("read", "src/a.py")) == ["a"]
    assert ids(compiled, Cue("edit", "src/b.py")) == ["b"]
    assert ids(compiled, Cue("read", "src/c.py")) == []
    assert ids(compiled, Cue("read", "src/a.pyc")) == []


def test_symbol_anchor_narrows_edits_with_a_region_but_not_reads_or_writes():
    compiled = rules(entry("f", "hazard", anchor="src/a.py::f"))
    outside = {"symbol_hit": lambda path, symbol: False}
    assert ids(compiled, Cue("edit", "src/a.py", narrow=True), **outside) == []
    assert ids(compiled, Cue("edit", "src/a.py", narrow=True), symbol_hit=lambda p, s: s == "f") == ["f"]
    assert ids(compiled, Cue("edit", "src/a.py", narrow=False), **outside) == ["f"]  # Write
    assert ids(compiled, Cue("read", "src/a.py", narrow=True), **outside) == ["f"]


def test_on_triggers_replace_the_default_and_combine_and_within_or_across():
    compiled = rules(entry("t", "hazard", anchor="src/a.py", triggers=["read:docs/**", "run:tests/test_x.py"]))
    assert ids(compiled, Cue("read", "src/a.py")) == []          # default rule replaced
    assert ids(compiled, Cue("read", "docs/guide/intro.md")) == ["t"]
    assert ids(compiled, Cue("edit", "docs/guide/intro.md")) == []   # event and glob must both hold
    assert ids(compiled, Cue("read", "src/docs/x.md")) == []
    assert ids(compiled, Cue("run", text="pytest tests/test_x.py -q")) == ["t"]   # either trigger
    assert ids(compiled, START) == []


def test_a_trigger_without_glob_is_narrowed_by_the_anchor():
    compiled = rules(entry("r", "hazard", anchor="tests/test_db.py", triggers=["run"]),
                     entry("c", "ritual", anchor="db/schema.sql", triggers=["commit"]),
                     entry("any", "ritual", triggers=["commit"]))
    assert ids(compiled, Cue("run", text="pytest -n 4 ./tests/test_db.py::test_rows")) == ["r"]
    assert ids(compiled, Cue("run", text="pytest tests/test_api.py")) == []
    assert ids(compiled, Cue("commit", text="git commit"), commit_paths=lambda: {"db/schema.sql"}) == ["any", "c"]
    assert ids(compiled, Cue("commit", text="git commit"), commit_paths=lambda: {"README.md"}) == ["any"]


@pytest.mark.parametrize("glob, path, matches", [
    ("*.sql", "db/migrations/0001.sql", True),
    ("*.sql", "db/migrations/0001.sql.bak", False),
    ("src/*.py", "src/a.py", True),
    ("src/*.py", "src/pkg/a.py", False),
    ("src/**/*.py", "src/a.py", True),
    ("src/**/*.py", "src/pkg/deep/a.py", True),
    ("src/**", "src/pkg/a.py", True),
    ("docs", "docs/a/b.md", True),
    ("docs/", "docs/a.md", True),
    ("/docs", "src/docs/a.md", False),
    ("test_[ab].py", "tests/test_b.py", True),
    ("test_[!ab].py", "tests/test_b.py", False),
    ("a?c.txt", "abc.txt", True),
    ("a?c.txt", "a/c.txt", False),
    ("[]x].md", "].md", True),
    ("[a-c]*.py", "lib/beta.py", True),
    ("[a-c]*.py", "lib/delta.py", False),
    ("weird[.py", "src/weird[.py", True),
    ("**/migrations/*.sql", "db/app/migrations/1.sql", True),
    ("**/migrations/*.sql", "db/app/migrations/x/1.sql", False),
])
def test_globs_follow_gitignore_conventions(glob, path, matches):
    assert path_matches(glob, path) is matches


@pytest.mark.parametrize("pattern, command, matches", [
    ("*npm publish*", "cd web && npm publish --tag next", True),
    ("*npm publish*", "npm test", False),
    ("make deploy-?", "make deploy-a", True),
    ("make deploy-?", "make deploy-ab", False),
    ("*rm -rf [/~]*", "sudo rm -rf /var", True),
    ("*rm -rf [/~]*", "rm -rf build", False),
])
def test_command_patterns_match_the_whole_command(pattern, command, matches):
    assert command_matches(pattern, command) is matches


def test_run_triggers_match_paths_in_commands_and_command_patterns():
    compiled = rules(entry("p", "hazard", triggers=["run:*npm publish*"]),
                     entry("t", "hazard", triggers=["run:tests/**/test_*.py"]))
    assert ids(compiled, Cue("run", text="cd web && npm publish --tag next")) == ["p"]
    assert ids(compiled, Cue("run", text="pytest 'tests/unit/test_x.py'"), worktree="/r") == ["t"]
    assert ids(compiled, Cue("run", text="pytest /r/tests/unit/test_x.py"), worktree="/r") == ["t"]
    assert ids(compiled, Cue("run", text="npm test")) == []


def test_prompt_triggers():
    compiled = rules(entry("g", "law", triggers=["prompt:src/billing/**"]),
                     entry("all", "law", triggers=["prompt"]),
                     entry("sym", "hazard", anchor="src/ledger.py::Ledger.sync", triggers=["prompt"]))
    assert ids(compiled, Cue("prompt", text="fix @src/billing/charge.py please")) == ["all", "g"]
    assert ids(compiled, Cue("prompt", text="why does sync() hang?")) == ["all", "sym"]
    assert ids(compiled, Cue("prompt", text="hello")) == ["all"]


def test_expired_entries_stop_after_their_day():
    today = iso(NOW)[:10]
    yesterday = iso(NOW - DAY)[:10]
    compiled = rules(entry("today", expires=today), entry("gone", expires=yesterday), entry("open"))
    assert ids(compiled, START) == ["open", "today"]


def test_an_entry_with_an_end_says_its_last_day():
    # Files generated from the store outlive the day they were written (GEMINI.md, AGENTS.md...),
    # so the line itself says how long it holds.
    text = fired(rules(entry("temp", body="Freeze deploys.", expires="2099-01-31T00:00:00Z"), entry("open")), START).text
    assert "- Law (until 2099-01-31): Freeze deploys. [temp]" in text
    assert "until" not in text.split("[temp]")[1]


def test_agent_entries_are_labelled_and_never_passed_off_as_the_developers():
    compiled = rules(entry("u", body="Use tabs."), entry("a", body="Prefer pathlib.", source="agent"))
    text = fired(compiled, START).text
    developer, _, agent = text.partition(delivery_rules.AGENT_HEADER)
    assert delivery_rules.START_USER_HEADER in developer and "Use tabs." in developer
    assert "Prefer pathlib." in agent and "Prefer pathlib." not in developer
    cue_text = fired(rules(entry("x", "hazard", anchor="a.py", source="agent", body="Slow.")),
                     Cue("read", "a.py")).text
    assert "an AI agent recorded these in earlier sessions, not the developer" in cue_text
    assert "the developer stated" not in cue_text


def test_nothing_is_delivered_twice_in_one_session():
    compiled = rules(entry("a", "hazard", anchor="a.py"), entry("r", status="revoked"))
    first = fired(compiled, Cue("read", "a.py"), {"delivered": {}, "retracted": {}})  # no session start seen
    assert first.active == ["a"] and first.retractions == ["r"]
    record = {"delivered": {"a": "read"}, "retracted": {"r": "read"}}
    again = fired(compiled, Cue("edit", "a.py"), record)
    assert again.active == [] and again.retractions == [] and again.text == ""


def test_retractions_within_the_period_only_and_never_as_facts():
    compiled = rules(entry("recent", "hazard", status="revoked", revoked_at=iso(NOW - 13 * DAY), anchor="a.py",
                           reason="`f` was removed from a.py"),
                     entry("old", "hazard", status="revoked", revoked_at=iso(NOW - 15 * DAY), anchor="a.py"),
                     entry("new", "law", body="Use the v2 client.", created=iso(NOW - DAY)),
                     entry("replaced", "law", status="superseded", superseded_by="new", body="Use the v1 client."))
    result = fired(compiled, Cue("read", "a.py"), {"delivered": {}, "retracted": {}})  # no session start seen
    assert result.active == ["new"]  # the replacement comes with the withdrawal that names it
    assert result.retractions == ["recent", "replaced"]
    assert "`f` was removed from a.py" in result.text
    assert 'recorded by the developer: "body of recent" This no longer holds.' in result.text
    assert "Use the v1 client." in result.text and "It was replaced by entry new." in result.text
    assert fired(rules(*compiled_entries_for_days(), retraction_days=3), START).retractions == ["two"]


def test_an_entry_withdrawn_then_active_again_or_reworded_is_delivered_again():
    law, hazard = entry("law", "law", body="Prefer pathlib."), entry("h", "hazard", anchor="a.py")
    start = fired(rules(law, hazard), START)
    record = {"delivered": dict.fromkeys(start.active, "session-start"), "retracted": {}, "known": start.known,
              "versions": {i: delivery_rules.version(rules(law, hazard)["active"][i]) for i in start.active}}
    record["delivered"]["h"] = "read"
    record["versions"]["h"] = delivery_rules.version(rules(law, hazard)["active"]["h"])
    revoked = rules(entry("law", "law", body="Prefer pathlib.", status="revoked", revoked_at=iso(NOW - 60)), hazard)
    assert fired(revoked, Cue("prompt", text="hi"), record).retractions == ["law"]
    record["retracted"]["law"] = "prompt"
    again = fired(rules(law, hazard), Cue("prompt", text="hi"), record)  # its retirement reverted
    assert again.active == ["law"] and "Prefer pathlib." in again.text
    del record["retracted"]["law"]  # as the hook notes it: delivered again
    reworded = rules(law, entry("h", "hazard", body="a.py is shared with the mobile app.", anchor="a.py"))
    assert fired(reworded, Cue("read", "a.py"), record).active == ["h"]
    assert fired(rules(law, hazard), Cue("read", "a.py"), record).active == []  # as it was told


def test_a_first_moment_with_no_session_start_seen_brings_the_session_start_block():
    """The session started in another repository (or before the hooks were installed): this
    repository's standing rules come at its first moment here, under the session start's headers."""
    compiled = rules(entry("law", "law", body="All money is integer cents."), entry("h", "hazard", anchor="a.py"))
    result = fired(compiled, Cue("read", "a.py"), {"delivered": {}, "retracted": {}})
    assert sorted(result.active) == ["h", "law"] and result.wide == ["law"] and sorted(result.known) == ["law"]
    assert "Since this session started" not in result.text and "All money is integer cents." in result.text


def compiled_entries_for_days():
    return [entry("two", status="revoked", revoked_at=iso(NOW - 2 * DAY)),
            entry("four", status="revoked", revoked_at=iso(NOW - 4 * DAY))]


def test_budget_keeps_the_most_recently_relevant_and_reports_the_rest():
    many = [entry(f"e{i:02d}", created=iso(NOW - (20 - i) * DAY)) for i in range(12)]
    compiled = rules(*many)
    result = fired(compiled, START, relevance=lambda: {"e00": iso(NOW - 1000)})
    # e00 is the oldest but fired on a cue a moment ago; then the newest ones.
    assert sorted(result.active) == ["e00", "e05", "e06", "e07", "e08", "e09", "e10", "e11"]
    assert result.left_out == ["e01", "e02", "e03", "e04"]  # least recently relevant first
    assert "4 more repository-wide entries were left out" in result.text
    small = rules(*many, max_entries=3)
    assert len(fired(small, START).active) == 3
    by_chars = rules(*[entry(f"c{i}", body="x" * 300, created=iso(NOW - i)) for i in range(10)], max_chars=1000)
    chosen = fired(by_chars, START).active
    assert len(chosen) == 3 and sum(len(delivery_rules.entry_line(i, by_chars["active"][i])) for i in chosen) <= 1000


def test_one_message_stays_under_claude_codes_limit_and_keeps_the_rest_for_later():
    compiled = rules(*[entry(f"h{i:02d}", "hazard", anchor="big.py", body="y" * 600) for i in range(30)])
    result = fired(compiled, Cue("read", "big.py"))
    assert len(result.text) <= 10_000
    assert 10 <= len(result.active) < 30
    later = fired(compiled, Cue("edit", "big.py"), {"delivered": dict.fromkeys(result.active, "read"),
                                                    "retracted": {}})
    assert set(later.active).isdisjoint(result.active) and later.active


def test_hand_edited_unknown_triggers_are_ignored():
    compiled = rules(entry("x", triggers=["teleport:src/**", "read:src/**"]))
    assert ids(compiled, Cue("read", "src/a.py")) == ["x"]


def started(compiled, **kwargs):
    """A session record as the hook keeps it after the session start."""
    first = fired(compiled, START, **kwargs)
    record = {"delivered": dict.fromkeys(first.active, "session-start"),
              "retracted": dict.fromkeys(first.retractions, "session-start"),
              "known": first.known}
    return first, record


def test_a_ritual_shown_at_session_start_is_shown_again_once_at_its_moment():
    compiled = rules(entry("fmt", "ritual", body="Run the formatter before committing."))
    first, record = started(compiled)
    assert first.active == ["fmt"]
    commit = fired(compiled, Cue("commit", text="git commit -m x"), record)
    assert commit.active == ["fmt"] and "Before this commit" in commit.text
    record["delivered"]["fmt"] = "commit"
    assert fired(compiled, Cue("commit", text="git commit -m y"), record).active == []


def test_entries_that_come_in_during_a_session_reach_it_at_the_next_moment():
    """A commit, a pull or the writer adds a repository-wide entry: the running session gets it at
    its next cue, and what the budget left out at the start stays out."""
    many = [entry(f"law{n:02}", created=iso(NOW - (30 - n) * DAY)) for n in range(12)]
    first, record = started(rules(*many, max_entries=10))
    assert len(first.active) == 10 and len(first.left_out) == 2
    later = rules(*many, entry("pulled", body="Amounts are Decimal strings."), max_entries=10)
    prompt = fired(later, Cue("prompt", text="fix the invoice total"), record)
    assert prompt.active == ["pulled"] and "pulled" in prompt.known


def test_a_pull_of_many_entries_mid_session_keeps_to_the_budget_once():
    _, record = started(rules(entry("first"), max_entries=5))
    pulled = rules(entry("first"), *[entry(f"new{n:03}", created=iso(NOW - n * 60)) for n in range(120)],
                   max_entries=5, max_chars=2000)
    first = fired(pulled, Cue("prompt", text="go on"), record)
    assert len(first.active) == 5 and len(first.text) < 2600
    record["known"] = first.known
    record["delivered"].update(dict.fromkeys(first.active, "prompt"))
    assert fired(pulled, Cue("prompt", text="and on"), record).active == []  # the rest stays out


def test_later_moments_announce_only_withdrawals_that_concern_the_session():
    compiled = rules(entry("seen"), entry("unseen", "hazard", anchor="b.py"), entry("other", "hazard", anchor="c.py"))
    _, record = started(compiled)
    record["delivered"]["unseen"] = "read"
    retired = rules(entry("seen", status="revoked", revoked_at=iso(NOW - DAY)),
                    entry("unseen", "hazard", anchor="b.py"),
                    entry("other", "hazard", anchor="c.py", status="revoked", revoked_at=iso(NOW - 2 * DAY)))
    # "other" was never shown to this session: its withdrawal is not announced mid-session
    result = fired(retired, Cue("prompt", text="go on"), record)
    assert result.retractions == ["seen"]


def test_withdrawals_at_session_start_keep_to_the_budget():
    gone = [entry(f"old{n:02}", anchor=f"m{n}.py", status="revoked", revoked_at=iso(NOW - DAY - n * 60))
            for n in range(40)]
    result = fired(rules(entry("keep"), *gone, max_entries=5, max_chars=2000), START)
    assert result.active == ["keep"] and len(result.retractions) == 5
    assert result.retractions == ["old04", "old03", "old02", "old01", "old00"]  # the latest, oldest first
    assert "35 more recently withdrawn entries were left out" in result.text
    assert len(result.text) < 2600


def test_the_entries_that_replace_withdrawn_ones_keep_to_the_session_starts_budget():
    """A session start announces withdrawals with the entries that replaced them: those replacements
    count against the same budget as every other entry (8 replaced, anchored elsewhere, and 8 laws)."""
    laws = [entry(f"law{n}", created=iso(NOW - DAY)) for n in range(8)]
    gone = [entry(f"old{n}", "hazard", anchor=f"m{n}.py", status="superseded", superseded_by=f"new{n}")
            for n in range(8)]
    new = [entry(f"new{n}", "hazard", anchor=f"m{n}.py", created=iso(NOW - 2 * DAY)) for n in range(8)]
    result = fired(rules(*laws, *gone, *new, max_entries=8, max_chars=2000), START)
    assert sorted(result.active) == sorted(f"law{n}" for n in range(8)), result.active
    assert len(result.retractions) == 8


def _apply(record, result, cue):
    """What the hook keeps of a moment (gitmem.hook.claude.Hook._deliver)."""
    for entry_id in result.active:
        record["delivered"][entry_id] = "session-start" if entry_id in result.wide else cue.event
    if cue.event == "session-start" or result.known:
        record["known"] = result.known
    if result.owed is not None:
        record["owed"] = result.owed
    for entry_id in result.retractions:
        record["retracted"][entry_id] = cue.event
    if result.owed_retractions is not None:
        record["owed_retractions"] = result.owed_retractions


def test_withdrawals_the_message_size_cut_are_announced_at_the_next_moments():
    """A raised budget lets more withdrawals through than one message holds: the note says they
    come at the next moment, and they do, though the session was never shown those entries."""
    gone = [entry(f"old{n:02}", anchor=f"m{n}.py", status="revoked", revoked_at=iso(NOW - DAY - n * 60),
                  body=f"Module m{n}: " + "keep its retry loop bounded and its errors typed. " * 8)
            for n in range(40)]
    compiled = rules(entry("keep"), *gone, max_entries=60, max_chars=60000)
    record = {"delivered": {}, "retracted": {}}
    start = fired(compiled, START, record)
    assert 0 < len(start.retractions) < 40 and "did not fit in this message" in start.text
    _apply(record, start, START)
    announced = list(start.retractions)
    for _ in range(10):
        later = fired(compiled, Cue("prompt", text="hi"), record)
        if not later.retractions:
            break
        announced += later.retractions
        _apply(record, later, Cue("prompt", text="hi"))
    assert sorted(announced) == sorted(f"old{n:02}" for n in range(40))


def test_what_the_message_size_cut_comes_at_the_next_moment():
    # A raised budget lets more through than one message holds: the note promises the rest.
    laws = [entry(f"law{n:02d}", body=f"Rule {n}: " + "explain units and failure modes. " * 25) for n in range(16)]
    compiled = rules(*laws, max_entries=50, max_chars=30000)
    record = {"delivered": {}, "retracted": {}}
    start = fired(compiled, START, record)
    assert 0 < len(start.active) < 16 and "did not fit in this message; each comes at its next moment" in start.text
    _apply(record, start, START)
    later = fired(compiled, Cue("prompt", text="hi"), record)
    assert sorted(start.active + later.active) == [f"law{n:02d}" for n in range(16)]
    assert later.text.count(delivery_rules.START_USER_HEADER) == 1  # stated in earlier sessions, as at the start
    _apply(record, later, Cue("prompt", text="hi"))
    assert record["owed"] == [] and not fired(compiled, Cue("prompt", text="hi"), record).active


def test_an_arrival_the_message_size_cut_arrives_again():
    hazards = [entry(f"h{n:02d}", "hazard", body="Careful: " + "this is load-bearing. " * 20, anchor="src/a.py")
               for n in range(30)]
    big = entry("big", body="Never push to main. " * 45, created=iso(NOW))
    record = {"delivered": {}, "retracted": {}}
    _apply(record, fired(rules(*hazards), START, record), START)
    compiled = rules(*hazards, big)  # the law came in during the session
    read = fired(compiled, Cue("read", "src/a.py"), record)
    assert "big" not in read.active and "big" not in read.known
    _apply(record, read, Cue("read", "src/a.py"))
    again = fired(compiled, Cue("prompt", text="hi"), record)
    assert again.active == ["big"] and delivery_rules.ARRIVED_USER_HEADER in again.text


def test_a_ritual_that_arrives_during_the_session_comes_once_more_at_its_moment():
    record = {"delivered": {}, "retracted": {}}
    _apply(record, fired(rules(entry("law")), START, record), START)
    compiled = rules(entry("law"), entry("notes", "ritual", body="Update CHANGELOG.md with every commit."))
    prompt = Cue("prompt", text="hi")
    arrived = fired(compiled, prompt, record)
    assert arrived.active == ["notes"] and delivery_rules.ARRIVED_USER_HEADER in arrived.text
    _apply(record, arrived, prompt)
    commit = Cue("commit", text="git commit -m x")
    assert fired(compiled, commit, record, commit_paths=lambda: {"a.py"}).active == ["notes"]

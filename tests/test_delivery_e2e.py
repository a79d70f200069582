"""A scripted Claude Code session through the hooks exactly as .claude/settings.json configures them.

A real repository, a real `gitmem init`, entries recorded with `gitmem add`, a real `git commit`
through the installed git hooks. At every moment the test asserts which entries the agent has
been handed: each needed entry present, nothing off target, nothing twice between compactions,
the retraction shown, the retired entry never again as a fact.
"""

from __future__ import annotations

import json

import pytest
from delivery_support import ClaudeCode, add_entry, own_errors

BILLING = '''\
import os


def charge(amount):
    cents = int(amount * 100)
    return cents


def refund(amount):
    return -amount


class Ledger:
    def sync(self):
        return True
'''


@pytest.fixture
def store(repo, monkeypatch):
    monkeypatch.setenv("GITMEM_NO_DAEMON", "1")
    repo.with_gitmem({"src/billing.py": BILLING, "src/notes.py": "NOTES = []\n",
                      "tests/test_db.py": "def test_db():\n    assert True\n"})
    ids = {
        "law": add_entry(repo, "law", "Never push to main; open a pull request."),
        "correction": add_entry(repo, "correction", "The test database is Postgres 15, not SQLite.",
                                "--source", "agent"),
        "loop": add_entry(repo, "open_loop", "Migration 0042 is half-done; add no columns until it lands."),
        "charge": add_entry(repo, "hazard", "charge() receives cents from the nightly cron, never dollars.",
                            "--anchor", "src/billing.py::charge"),
        "refund": add_entry(repo, "hazard", "refund() must stay idempotent; the payment provider retries.",
                            "--anchor", "src/billing.py::refund"),
        "lint": add_entry(repo, "ritual", "Run make lint before every commit.", "--on", "commit"),
        "parallel": add_entry(repo, "hazard", "tests/test_db.py shares one database: never run it with -n.",
                              "--on", "run:tests/test_db.py"),
        "notes": add_entry(repo, "hazard", "notes.py is generated; edit the template instead.",
                           "--anchor", "src/notes.py"),
        "expired": add_entry(repo, "law", "Deploy freeze this week.", "--expires", "2099-01-01"),
    }
    rel = f".gitmem/entries/{ids['expired']}.yaml"  # `add` refuses a date that has passed: the week is over
    repo.write(rel, repo.read(rel).replace("2099-01-01", "2020-01-01"))
    repo.commit_all("the freeze is over")
    return repo, ids


def test_a_scripted_session(store):
    repo, ids = store
    name = {v: k for k, v in ids.items()}
    epoch: set[str] = set()  # what the agent holds as facts since the context was last emptied

    def moment(delivered, active=(), retracted=()):
        """Exactly these entries arrive; none of them was already in context."""
        got = [name.get(i, i) for i in delivered.active]
        assert sorted(got) == sorted(active), delivered.text
        assert sorted(name.get(i, i) for i in delivered.retracted) == sorted(retracted), delivered.text
        assert len(got) == len(set(got)), "an entry twice in one message"
        assert not epoch & set(delivered.active), "delivered twice in one session"
        assert ids["refund"] not in delivered.active or "refund" not in retired, "a retired entry as a fact"
        assert ids["expired"] not in delivered.ids
        epoch.update(delivered.active)
        return delivered

    retired: set[str] = set()
    claude = ClaudeCode(repo.path, session="session-a")

    # Session start: the repository-wide block, the agent's entry labelled as the agent's.
    start = moment(claude.start("startup"), active=["law", "correction", "loop"])
    developer_part, _, agent_part = start.text.partition("Recorded by an AI agent")
    assert "The developer stated these in earlier sessions; they are standing rules for this repository" \
        in developer_part
    assert "Never push to main" in developer_part and "Migration 0042" in developer_part
    assert "Postgres 15" in agent_part and "Postgres 15" not in developer_part

    moment(claude.prompt("Make refund round to whole cents, please."))
    # Edits outside every anchored declaration, then inside each one.
    moment(claude.edit("src/billing.py", "import os\n", "import os\nimport sys\n"))
    moment(claude.edit("src/billing.py", "class Ledger:", "class Ledger(object):"))
    moment(claude.edit("src/billing.py", "    return -amount\n", "    return -round(amount, 2)\n", apply=True),
           active=["refund"])
    moment(claude.edit("src/billing.py", "    cents = int(amount * 100)\n", "    cents = round(amount * 100)\n"),
           active=["charge"])
    moment(claude.edit("src/billing.py", "    return -round(amount, 2)\n", "    return -amount\n"))
    moment(claude.read("src/billing.py"))
    moment(claude.read("src/notes.py"), active=["notes"])
    moment(claude.read("tests/test_db.py"))
    moment(claude.bash("python -m pytest -n 4 tests/test_db.py"), active=["parallel"])
    moment(claude.bash("ls -la src"))

    # The agent deletes refund() and commits; the pre-commit hook retires the entry in that commit.
    repo.write("src/billing.py", BILLING.replace("def refund(amount):\n    return -amount\n\n\n", ""))
    moment(claude.bash("git commit -am 'Drop refund'"), active=["lint"])
    repo.git("commit", "-q", "-am", "Drop refund")
    assert f".gitmem/entries/{ids['refund']}.yaml" in repo.git("show", "--name-only", "--format=", "HEAD")
    assert repo.entries()[ids["refund"]]["status"] == "revoked"
    retired.add("refund")

    # The next moment announces the retraction, once.
    after = moment(claude.prompt("What is left to do?"), retracted=["refund"])
    assert "refund() must stay idempotent" in after.text and "This no longer holds" in after.text
    assert "`refund` was removed from src/billing.py" in after.text
    moment(claude.read("src/billing.py"))
    moment(claude.stop())

    # Compaction empties the context: the block and the retraction come again, anchors re-arm.
    epoch.clear()
    moment(claude.start("compact"), active=["law", "correction", "loop"], retracted=["refund"])
    moment(claude.edit("src/billing.py", "    cents = round(amount * 100)\n", "    cents = int(amount * 100)\n"),
           active=["charge"])
    moment(claude.read("src/billing.py"))
    moment(claude.end())

    # A new session after the anchored declaration was deleted by a commit.
    epoch.clear()
    claude = ClaudeCode(repo.path, session="session-b")
    fresh = moment(claude.start("startup"), active=["law", "correction", "loop"], retracted=["refund"])
    assert "refund() must stay idempotent" not in fresh.text.split("Withdrawn")[0]
    moment(claude.read("src/billing.py"), active=["charge"])
    moment(claude.read("src/notes.py"), active=["notes"])
    moment(claude.bash("git commit -m wip"), active=["lint"])
    moment(claude.prompt("Thanks, that is all."))

    assert own_errors(repo.path) == ""
    # Every delivery was recorded, with its session and event.
    log = [json.loads(line) for line in (repo.path / ".git/gitmem/deliveries.jsonl").read_text().splitlines()]
    assert {(row["session"], row["event"]) for row in log} >= {("session-a", "session-start"),
                                                             ("session-a", "edit"), ("session-b", "read")}
    first_retraction = next(i for i, row in enumerate(log) if ids["refund"] in row["retracted"])
    assert not any(ids["refund"] in row["delivered"] for row in log[first_retraction:])
    assert not any(ids["expired"] in row["delivered"] + row["retracted"] for row in log)

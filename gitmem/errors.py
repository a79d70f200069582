"""One error root: the CLI maps every GitmemError to a message and exit code 1."""

from __future__ import annotations


class GitmemError(Exception):
    """Base class for every error gitmem reports to a person."""


class NotARepository(GitmemError):
    pass


class EntryError(GitmemError):
    """A stored entry is unreadable or violates the schema; names file and field."""

    def __init__(self, path: str, field: str | None, message: str) -> None:
        self.path = path
        self.field = field
        self.message = message
        where = f"{path}: {field}" if field else path
        super().__init__(f"{where}: {message}")


class AnchorError(GitmemError):
    """An anchor does not resolve to a declaration."""


class UnknownEntry(GitmemError):
    pass

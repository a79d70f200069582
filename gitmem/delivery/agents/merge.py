"""git merge driver for the files gitmem generates for other agents (`gitmem init` registers it).

    python -I -m gitmem.delivery.agents.merge %O %A %B %P

Two branches that each record entries change the same generated file (the repository-wide
instructions, a scope both touched). The files are derived from the store, so their entry lines
merge as a set: kept unless one side removed them (revoked, retired, expired), each under its
own header (gitmem.delivery.agents_md.merge_section); front matter and headers are the same on
both sides. GEMINI.md keeps its own text outside gitmem's section and merges that as git would;
so does a file of the developer's whose name only looks like gitmem's (`gitmem-howto.mdc`).
The result is written to %A; exit 0 when clean, 1 with conflict markers, as git expects. After
the merge, gitmem's post-merge hook regenerates every file from the merged store.
"""

from __future__ import annotations

import sys

from gitmem.base.files import uses_crlf
from gitmem.delivery import agents_md
from gitmem.delivery.agents import generated


def merge(base: str, ours: str, theirs: str, path: str = "") -> tuple[str, bool]:
    if path.endswith(generated.GEMINI_FILE):
        text, clean = agents_md.merge(base, ours, theirs)
        if generated.GEMINI_BEGIN in ours:
            text = text.replace(agents_md.BEGIN, generated.GEMINI_BEGIN, 1)
        return text, clean
    if not all(generated.is_generated(text) for text in (base, ours, theirs) if text):
        return agents_md.merge_file(base, ours, theirs)  # a file of the developer's under a name like ours
    lines = agents_md.merge_section(base.splitlines(), ours.splitlines(), theirs.splitlines())
    newline = "\r\n" if uses_crlf(ours) else "\n"
    return newline.join(lines).rstrip("\r\n") + newline, True


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    base_path, ours_path, theirs_path = args[:3]
    path = args[3] if len(args) > 3 else ""
    return agents_md.merge_driver(base_path, ours_path, theirs_path,
                                  lambda base, ours, theirs: merge(base, ours, theirs, path),
                                  path or "a generated file")


if __name__ == "__main__":
    sys.exit(main())

"""git textconv driver for .gitmem/entries/*.yaml: `git diff` shows entries as prose.

Hidden characters (zero-width, bidirectional controls, other invisible or control characters)
are shown as <U+XXXX>, so a reviewer sees what the agent would be handed: a right-to-left
override that reorders the line, or words split by zero-width spaces, cannot hide in review.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> int:
    from gitmem.judge.normalise import visible

    path = Path(sys.argv[1])
    text = path.read_bytes().decode("utf-8", "replace")
    try:
        from ruamel.yaml import YAML

        from gitmem.githooks.review import entry_text
        from gitmem.store.entry import Entry

        # git hands us a temporary file, so the id-matches-file-name check does not apply.

        entry = Entry.from_dict(YAML(typ="safe").load(text), path.name)
        sys.stdout.write(visible(entry_text(entry)))
    except Exception:
        sys.stdout.write(visible(text))  # never hide content: fall back to the raw file
    return 0


if __name__ == "__main__":
    sys.exit(main())

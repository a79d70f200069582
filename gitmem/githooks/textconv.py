"""git textconv driver for .gitmem/entries/*.yaml: `git diff` shows hidden characters.

The entry file is shown as it is, every field of it (a key a reviewer should see is never left
out), with hidden characters (zero-width, bidirectional controls, other invisible or control
characters) as <U+XXXX>: a right-to-left override that reorders the line, or words split by
zero-width spaces, cannot hide in review. An entry without them diffs as its plain YAML, so a
patch saved with `git diff > wip.patch` applies again (`gitmem diff` is the prose summary).
"""

from __future__ import annotations

import sys


def main() -> int:
    """Git runs this once per entry file it shows (no pathlib: its import is most of a start)."""
    from gitmem.judge.normalise import visible

    with open(sys.argv[1], "rb") as handle:
        text = handle.read().decode("utf-8", "replace")
    # CRLF as git stores the file (`eol=lf`): an editor's CRLF copy in the work tree, handed over
    # raw, would show every line changed; a carriage return anywhere else stays visible
    sys.stdout.write(visible(text.replace("\r\n", "\n")))
    return 0


if __name__ == "__main__":
    sys.exit(main())

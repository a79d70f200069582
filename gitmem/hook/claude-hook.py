#!@PYTHON@ -IS
# gitmem: Claude Code hook shim. Written by `gitmem init` into .git/gitmem/ and never committed:
# it names this machine's interpreter (first line). The committed .claude/settings.json calls it
# by a relative path and stays silent where it does not exist (a teammate without gitmem).
# -IS: no site-packages scan and no user environment. The hook imports the standard library
# and gitmem's stdlib-only delivery modules; the folders after the stdlib are gitmem's own and
# those of its dependencies, needed only to rebuild the compiled rules after the store changed.
import sys

sys.path += @PATHS@
from gitmem.hook.claude import main

sys.exit(main())

"""Test-only startup hook: subprocesses of the test suite judge with the stand-in when asked.

Python imports `sitecustomize` at startup from sys.path; the suite puts tests/ on PYTHONPATH
for its subprocesses (test_capture_helpers.subprocess_env). With GITMEM_TEST_JUDGE=keyword set,
the daemon, `gitmem drain` and scripts started by a test use KeywordJudge instead of the model.
gitmem itself reads no such variable: this file is the seam, and it lives only in tests/.
"""

import os

if os.environ.get("GITMEM_TEST_JUDGE") == "keyword":
    from test_capture_helpers import KeywordJudge

    from gitmem.writer import daemon

    daemon.make_judge = KeywordJudge

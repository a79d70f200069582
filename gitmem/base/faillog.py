"""Fail open, leave a trace: hooks swallow their own errors and append them here."""

from __future__ import annotations

import os
import traceback
from pathlib import Path

from gitmem.base import files

LOG_NAME = "errors.log"
MAX_BYTES = 1_000_000


def record(state_dir: Path | None, where: str) -> None:
    """Append the current exception's traceback to <state>/errors.log; never raises."""
    try:
        if state_dir is None:
            return
        path = os.path.join(state_dir, LOG_NAME)
        files.rotate(path, MAX_BYTES)
        files.append_line(path, f"--- {files.utc_stamp()} {where} (pid {os.getpid()})\n{traceback.format_exc()}")
    except Exception:
        pass

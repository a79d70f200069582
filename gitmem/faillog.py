"""Fail open, leave a trace: hooks swallow their own errors and append them here."""

from __future__ import annotations

import os
import time
import traceback
from pathlib import Path

LOG_NAME = "errors.log"
MAX_BYTES = 1_000_000


def record(state_dir: Path | None, where: str) -> None:
    """Append the current exception's traceback to <state>/errors.log; never raises."""
    try:
        if state_dir is None:
            return
        state_dir.mkdir(parents=True, exist_ok=True)
        path = state_dir / LOG_NAME
        if path.exists() and path.stat().st_size > MAX_BYTES:
            os.replace(path, path.with_suffix(".log.1"))
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(f"--- {stamp} {where} (pid {os.getpid()})\n{traceback.format_exc()}\n")
    except Exception:
        pass

"""Where the judge's and the gate's trained files ship: package data beside this module.

Standard library only: the git hooks stat the gate's head (gitmem.judge.store_gate) without
loading numpy or the model.
"""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
GATE_HEAD = DATA_DIR / "gate.npz"  # the gate's detector head (gitmem.judge.detector)

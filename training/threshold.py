"""Choose the fine-tuned judge's decision threshold on the real dev turns, and store it in its head.

    .venv/bin/python training/threshold.py [--head gitmem/judge/data/writer-head.npz]

The dev turns are real developer turns carved out of the train split by session
(training/turns.py dev_ids) and never trained on; the eval split is never read here. Each dev turn
is scored once with the shipped pipeline (spans, adapted encoder, heads, cues); the whole
decision (runs of spans, referents, validation) is then replayed at every threshold of a grid.
The rule: the threshold with the best F0.5 (precision weighs more than recall: a wrong entry is
read in every later session) among those flagging at most 6 % of the turns.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import turns  # noqa: E402
from eval import is_item  # noqa: E402

from gitmem.base.paths import find_repo  # noqa: E402
from gitmem.judge import bodies  # noqa: E402
from gitmem.judge.head import DATA_DIR, TUNED_HEAD_FILE  # noqa: E402
from gitmem.judge.turn_judge import Judge  # noqa: E402
from gitmem.judge.types import Packet  # noqa: E402

MAX_FLAGGED = 0.06
BETA = 0.5
GRID = [round(t, 3) for t in np.arange(0.05, 0.99, 0.01)]


def figures(judge: Judge, dev: list[dict], scored: list, threshold: float) -> dict[str, float]:
    entries = matched = items = found = flagged = 0
    for turn, (packet, spans) in zip(dev, scored, strict=True):
        recorded = [] if spans is None else judge.decide(packet, spans, [], threshold)
        flagged += bool(recorded)
        entries += len(recorded)
        matched += sum(any(is_item(e, packet.user, it) for it in turn["items"]) for e in recorded)
        items += len(turn["items"])
        found += sum(any(is_item(e, packet.user, it) for e in recorded) for it in turn["items"])
    p = matched / entries if entries else 1.0
    r = found / items if items else 0.0
    f = (1 + BETA**2) * p * r / (BETA**2 * p + r) if p + r else 0.0
    return {"threshold": threshold, "precision": round(p, 4), "recall": round(r, 4),
            "flagged": round(flagged / len(dev), 4), "f05": round(f, 4), "entries": entries}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--head", default=str(DATA_DIR / TUNED_HEAD_FILE))
    args = ap.parse_args()
    head_path = Path(args.head)
    judge = Judge(find_repo(turns.ROOT), tuned_head=head_path).load()
    dev_ids = turns.dev_ids()
    dev = [t for t in turns.real("train") if t["id"] in dev_ids]
    scored = []
    for n, turn in enumerate(dev):
        packet = Packet("dev", n, turn["user"], turn["assistant"], ())
        scored.append((packet, None if bodies.not_typed(packet.user) else judge.score_spans(packet)))
    rows = [figures(judge, dev, scored, t) for t in GRID]
    allowed = [r for r in rows if r["flagged"] <= MAX_FLAGGED] or rows
    best = max(allowed, key=lambda r: (r["f05"], r["threshold"]))
    print(f"dev: {len(dev)} turns, {sum(len(t['items']) for t in dev)} items")
    for r in rows[::5]:
        print("  " + json.dumps(r))
    print(f"chosen: {json.dumps(best)}")
    data = np.load(head_path, allow_pickle=False)
    meta = json.loads(str(data["meta"]))
    meta.update(threshold=best["threshold"], threshold_rule=f"max F{BETA} on real dev turns, flagged <= "
                f"{MAX_FLAGGED}", threshold_dev=best, dev_turns=len(dev))
    arrays = {k: np.asarray(data[k]) for k in data.files if k != "meta"}
    with open(head_path, "wb") as handle:
        np.savez(handle, **arrays, meta=np.asarray(json.dumps(meta, sort_keys=True)))
    print(f"wrote threshold {best['threshold']} into {head_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

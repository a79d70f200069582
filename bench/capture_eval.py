"""How well the writer captures standing constraints, against the bars of issue 4.

    .venv/bin/python bench/capture_eval.py [--repo PATH] [--model GGUF] [--split heldout|dev|train|all]

Splits: the held-out corpus (training/corpus/heldout.jsonl, written by an author independent
of the training corpus and never used for training), ../shared/capture-dev.jsonl next to
the repository (skipped when absent), and the stress set (training/corpus/stress.jsonl, never
trained on: 150 adversarial negatives — bug reports and one-off directives saying "always",
"never", "every time", background facts, quoted tool output — and 70 positives in the same
style). Each turn is judged with the embedded model (or
--model) against an empty store, exactly as the daemon would.

Figures per split:
- recall: expected items found; an item counts as found when a recorded entry of any kind
  contains all of its `words` (case-insensitive);
- false-positive turns: share of turns expecting nothing where anything was recorded;
- verbatim: share of recorded bodies that are exact spans of the user's or assistant's text;
- kind accuracy: over found items, the matching entry's kind equals the expected kind;
- median seconds per judgement (model already loaded) and the process RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitmem.base.paths import find_repo  # noqa: E402
from gitmem.judge.turn_judge import Judge  # noqa: E402
from gitmem.judge.types import Packet  # noqa: E402

BARS = {"recall": (">=", 0.90), "fp_turns": ("<=", 0.05), "verbatim": (">=", 0.95), "kind_acc": (">=", 0.80),
        "median_s": ("<=", 1.0)}


def rss_mib() -> tuple[float, float]:
    """(current, peak) resident set size of this process in MiB."""
    current = 0.0
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                current = int(line.split()[1]) / 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return current, peak


def load(path: Path) -> list[dict]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows


def evaluate(judge: Judge, turns: list[dict], verbose: bool = False) -> dict:
    found = total = neg = fp = kind_ok = bodies = verbatim = 0
    times: list[float] = []
    for n, turn in enumerate(turns):
        packet = Packet(session_id="eval", turn=n, user=turn.get("user") or "", assistant=turn.get("assistant") or "",
                        files_modified=tuple(turn.get("files_modified") or ()))
        t0 = time.perf_counter()
        recorded = judge.judge(packet, [])
        times.append(time.perf_counter() - t0)
        for c in recorded:
            bodies += 1
            verbatim += c.body in packet.user or c.body in packet.assistant
        expect = turn.get("expect") or []
        if not expect:
            neg += 1
            fp += bool(recorded)
        for item in expect:
            total += 1
            words = [w.lower() for w in item.get("words") or []]
            match = next((c for c in recorded if all(w in c.body.lower() for w in words)), None)
            if match is not None:
                found += 1
                kind_ok += match.kind == item.get("kind")
        if verbose:  # only for the training split: never look at held-out items one by one
            print(json.dumps({"id": turn.get("id"), "expect": expect, "got": [c.to_dict() for c in recorded]}))
    return {
        "turns": len(turns), "items": total, "neg_turns": neg,
        "recall": found / total if total else float("nan"),
        "fp_turns": fp / neg if neg else float("nan"),
        "verbatim": verbatim / bodies if bodies else 1.0,
        "kind_acc": kind_ok / found if found else float("nan"),
        "median_s": statistics.median(times) if times else float("nan"),
        "p95_s": sorted(times)[int(0.95 * (len(times) - 1))] if times else float("nan"),
    }


def verdict(name: str, value: float) -> str:
    if name not in BARS:
        return ""
    op, bar = BARS[name]
    ok = value >= bar if op == ">=" else value <= bar
    return f"{'ok  ' if ok else 'FAIL'} (bar {op} {bar})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", default=str(ROOT))
    parser.add_argument("--model", default=None)
    parser.add_argument("--split", choices=("heldout", "dev", "stress", "train", "all"), default="all")
    parser.add_argument("--verbose", action="store_true", help="per-turn output (train split only)")
    args = parser.parse_args()

    repo = find_repo(args.repo)
    splits: list[tuple[str, Path | list[Path]]] = []
    if args.split in ("heldout", "all"):
        splits.append(("held-out", ROOT / "training" / "corpus" / "heldout.jsonl"))
    if args.split in ("dev", "all"):
        splits.append(("capture-dev", Path(repo.worktree).parent / "shared" / "capture-dev.jsonl"))
    if args.split in ("stress", "all"):
        splits.append(("stress", ROOT / "training" / "corpus" / "stress.jsonl"))
    if args.split == "train":
        splits.append(("train", sorted((ROOT / "training" / "corpus").glob("train-*.jsonl"))))

    t0 = time.perf_counter()
    judge = Judge(repo, args.model).load()
    load_s = time.perf_counter() - t0
    rss_loaded, _ = rss_mib()
    print(f"model: {judge.encoder.path.name}  load {load_s:.2f}s  threads 2  RSS after load {rss_loaded:.0f} MiB")

    ok_all = True
    for name, where in splits:
        paths = where if isinstance(where, list) else [where]
        paths = [p for p in paths if p.is_file()]
        if not paths:
            print(f"\n{name}: skipped ({where} absent)")
            continue
        turns = [t for p in paths for t in load(p)]
        result = evaluate(judge, turns, verbose=args.verbose and name == "train")
        print(f"\n{name}: {result['turns']} turns, {result['items']} standing items, {result['neg_turns']} turns expecting nothing")
        for key, label in (("recall", "recall of standing items"), ("fp_turns", "false-positive turns"),
                           ("verbatim", "bodies verbatim"), ("kind_acc", "kind accuracy (found items)"),
                           ("median_s", "median s / judgement"), ("p95_s", "p95 s / judgement")):
            v = result[key]
            mark = verdict(key, v)
            ok_all &= not mark.startswith("FAIL")
            print(f"  {label:<30} {v:7.3f}  {mark}")
    current, peak = rss_mib()
    print(f"\nprocess RSS {current:.0f} MiB (peak {peak:.0f} MiB)")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())

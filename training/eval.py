"""Score the writer on every split it never trained on, and write training/results.json.

    .venv/bin/python training/eval.py [--split NAME ...] [--model GGUF] [--out FILE]

Splits (each judged turn by turn against an empty store, exactly as the daemon judges):
- real-eval: real developer turns (../shared/real-turns/, labels in training/labels/real.jsonl,
  split "eval": whole sessions, never trained on, nothing tuned on them);
- held-out: training/corpus/heldout.jsonl, written independently of the training files;
- stress: training/corpus/stress.jsonl, adversarial negatives and look-alike positives;
- capture-dev: ../shared/capture-dev.jsonl (skipped when absent).
`real-train` and `real-dev` (the threshold's turns) exist for diagnostics only and are never part
of the results file.

Each turn goes through the judge and then the trust gate (gitmem.writer.turn_writer.gate), as in
the writer: the figures count what would be recorded; `quarantined` counts what the gate held back
(`quarantined_items`: of those, real items).

Figures: precision (recorded entries that are an item), recall (items recorded), flagged turns
(turns with any entry), false-positive turns (turns holding nothing that got an entry), kind
accuracy over found items, bodies that are exact substrings, bodies opening with a lead-in,
seconds per judgement and resident memory. An entry is an item when it overlaps the item's
labelled span by half the shorter of the two (real turns) or contains all of its key words
(written turns, whose items are given as words).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import turns as datasets

from gitmem.base.paths import find_repo
from gitmem.judge import bodies, encoder
from gitmem.judge.turn_judge import Judge
from gitmem.judge.types import Candidate, Packet
from gitmem.writer.turn_writer import gate

ROOT = datasets.ROOT
RESULTS = ROOT / "training" / "results.json"
SPLITS = ("real-eval", "held-out", "stress", "capture-dev")
# What issue #10 asks of each split (checked and printed, never tuned against).
BARS: dict[str, dict[str, tuple[str, float]]] = {
    "real-eval": {"precision": (">=", 0.8), "recall": (">=", 0.6), "flagged_turns": ("<=", 0.06)},
    "held-out": {"recall": (">=", 0.95), "fp_turns": ("<=", 0.02), "kind_acc": (">=", 0.9),
                 "verbatim": (">=", 1.0), "lead_ins": ("<=", 0.0)},
    "timing": {"median_s": ("<=", 0.5), "p95_s": ("<=", 1.5), "peak_rss_mib": ("<=", 600),
               "gate_ms_mean": ("<=", 20.0)},
}


def rss_mib() -> tuple[float, float]:
    current = 0.0
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                current = int(line.split()[1]) / 1024
    except OSError:
        pass
    return current, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load_split(name: str) -> list[dict[str, Any]] | None:
    if name == "real-dev":
        dev = datasets.dev_ids()
        return [t for t in datasets.real("train") if t["id"] in dev]
    if name in ("real-eval", "real-train"):
        return datasets.real(name.split("-")[1]) if datasets.REAL_TURNS.is_dir() else None
    path = {"held-out": datasets.CORPUS / "heldout.jsonl", "stress": datasets.CORPUS / "stress.jsonl",
            "capture-dev": datasets.CAPTURE_DEV}[name]
    return datasets.written([path]) if path.is_file() else None


def is_item(entry: Candidate, user: str, item: dict[str, Any]) -> bool:
    if "start" in item:  # a real turn: labelled by offsets
        at = user.find(entry.body)
        if at < 0:
            return False
        overlap = min(at + len(entry.body), item["end"]) - max(at, item["start"])
        return overlap >= 0.5 * min(len(entry.body), item["end"] - item["start"])
    words = [w.lower() for w in item.get("words") or []]
    return bool(words) and all(w in entry.body.lower() for w in words)


def evaluate(judge: Judge, turns: list[dict[str, Any]], times: list[float],
             gate_times: list[float]) -> dict[str, Any]:
    """What the writer would record (the judge, then the trust gate) on each turn, scored."""
    entries = matched = items = found = kind_ok = flagged = empty = fp = verbatim = lead = 0
    held = held_items = 0
    gate_start = len(gate_times)
    for n, turn in enumerate(turns):
        packet = Packet(session_id="eval", turn=n, user=turn["user"], assistant=turn.get("assistant") or "",
                        files_modified=tuple(turn.get("files_modified") or ()))
        expected = turn.get("items") if "items" in turn else turn.get("expect") or []
        t0 = time.perf_counter()
        proposed = judge.judge(packet, [])
        t1 = time.perf_counter()
        recorded, rejected = gate(proposed)
        times.append(time.perf_counter() - t0)
        gate_times.append(time.perf_counter() - t1)
        held += len(rejected)
        held_items += sum(any(is_item(c, packet.user, item) for item in expected) for c, _ in rejected)
        flagged += bool(recorded)
        if not expected:
            empty += 1
            fp += bool(recorded)
        for entry in recorded:
            entries += 1
            matched += any(is_item(entry, packet.user, item) for item in expected)
            verbatim += entry.body in packet.user or entry.body in packet.assistant
            lead += bodies.lead_in_length(entry.body) > 0
        for item in expected:
            items += 1
            hit = next((e for e in recorded if is_item(e, packet.user, item)), None)
            if hit is not None:
                found += 1
                kind_ok += hit.kind == item.get("kind")

    def ratio(a: int, b: int) -> float | None:
        return round(a / b, 4) if b else None

    return {"turns": len(turns), "items": items, "turns_without_items": empty, "entries": entries,
            "precision": ratio(matched, entries), "recall": ratio(found, items),
            "flagged_turns": ratio(flagged, len(turns)), "fp_turns": ratio(fp, empty),
            "kind_acc": ratio(kind_ok, found), "verbatim": ratio(verbatim, entries) if entries else 1.0,
            "lead_ins": ratio(lead, entries) if entries else 0.0, "quarantined": held,
            "quarantined_items": held_items,
            "gate_ms_mean": round(1000 * statistics.mean(gate_times[gate_start:]), 1) if turns else None}


def verdicts(split: str, figures: dict[str, Any]) -> dict[str, str]:
    out = {}
    for key, (op, bar) in BARS.get(split, {}).items():
        value = figures.get(key)
        ok = value is not None and (value >= bar if op == ">=" else value <= bar)
        out[key] = f"{'ok' if ok else 'FAIL'} ({op} {bar})"
    return out


def provenance(judge: Judge) -> dict[str, Any]:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    files = [*sorted(datasets.CORPUS.glob("*.jsonl")), datasets.LABELS]
    data_dir = ROOT / "gitmem" / "judge" / "data"
    return {
        "git_commit": git("rev-parse", "HEAD"),
        "git_dirty": bool(git("status", "--porcelain", "--", "gitmem", "training")),
        "base_model": {"file": judge.encoder.path.name, "sha256": datasets.sha256_file(Path(judge.encoder.path))},
        "judge_files": {p.name: datasets.sha256_file(p) for p in sorted(data_dir.iterdir()) if p.is_file()},
        "data": {str(p.relative_to(ROOT)): datasets.sha256_file(p) for p in files if p.is_file()},
        "shared_real_turns": {p.name: datasets.sha256_file(p) for p in sorted(datasets.REAL_TURNS.glob("*.jsonl"))},
        "threads": encoder.N_THREADS,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", action="append", choices=(*SPLITS, "real-train", "real-dev"))
    parser.add_argument("--head", default=None, help="another fine-tuned head file (its adapter beside it)")
    parser.add_argument("--frozen", action="store_true", help="the frozen-encoder head even if a tuned one ships")
    parser.add_argument("--model", default=None, help="another GGUF file (default: the embedded model)")
    parser.add_argument("--out", default=str(RESULTS), help="results file ('-': print only)")
    args = parser.parse_args()
    chosen = args.split or list(SPLITS)

    judge = Judge(find_repo(ROOT), args.model, tuned_head=Path(args.head) if args.head else None)
    if args.frozen:
        from gitmem.judge.head import Head

        judge._head = Head.load()
    judge.load()
    results: dict[str, Any] = {"judge": type(judge.head).__name__, "threshold": judge.head.threshold,
                               "splits": {}, "provenance": provenance(judge)}
    times: list[float] = []
    gate_times: list[float] = []
    for name in chosen:
        turns = load_split(name)
        if turns is None:
            print(f"{name}: skipped (its data is absent)")
            continue
        figures = evaluate(judge, turns, times, gate_times)
        marks = verdicts(name, figures)
        results["splits"][name] = {**figures, "bars": marks}
        print(f"\n{name}: {figures['turns']} turns, {figures['items']} items, {figures['entries']} entries")
        for key in ("precision", "recall", "flagged_turns", "fp_turns", "kind_acc", "verbatim", "lead_ins",
                    "quarantined", "quarantined_items", "gate_ms_mean"):
            print(f"  {key:<14} {figures[key] if figures[key] is not None else '-':>7}  {marks.get(key, '')}")
    current, peak = rss_mib()
    timing = {"judged_turns": len(times), "median_s": round(statistics.median(times), 3) if times else None,
              "p95_s": round(sorted(times)[int(0.95 * (len(times) - 1))], 3) if times else None,
              "rss_mib": round(current), "peak_rss_mib": round(peak),
              # the trust gate's share of the judged-turn time (issue 12 asks <= 20 ms per judged turn)
              "gate_ms_mean": round(1000 * statistics.mean(gate_times), 1) if gate_times else None,
              "gate_ms_p95": round(1000 * sorted(gate_times)[int(0.95 * (len(gate_times) - 1))], 1)
              if gate_times else None}
    timing["bars"] = verdicts("timing", timing)
    results["timing"] = timing
    print(f"\ntiming: median {timing['median_s']} s, p95 {timing['p95_s']} s per judged turn; "
          f"RSS {timing['rss_mib']} MiB (peak {timing['peak_rss_mib']}); the gate {timing['gate_ms_mean']} ms "
          f"mean, {timing['gate_ms_p95']} ms p95 of that  {timing['bars']}")
    if args.out != "-" and not {"real-train", "real-dev"} & set(chosen):
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

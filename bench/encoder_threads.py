"""The encoder's forward pass with one thread (what gitmem runs) against two, idle and busy.

The judge and the gate run short passes (a body of one sentence, a turn of a few) through the
embedded model with a LoRA adapter set on the context, not merged: every projection adds two
small matrix products, and with OpenMP's passive waiting (gitmem/judge/encoder.py sets it: spinning
threads are far slower on shared cores) each of those hundreds of graph nodes wakes the other
threads. This loads the model with the judge's adapter once per thread count and times the same
texts through each, alternating, so machine noise hits all alike; then again while --busy
processes spin on the cores, as when the developer's build or tests run beside the writer.
Prints the median milliseconds per text and the ratio to the baseline (the first count), and
whether the states agree.

    python bench/encoder_threads.py [--rounds 7] [--threads 2,1] [--busy 0,1,2]

(gitmem.judge.encoder.N_THREADS is 1 since this measured it; 2 was the setting before.)
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitmem.judge.encoder import Encoder, default_model_path
from gitmem.judge.head import TunedHead

SENTENCE = "Whenever you add an endpoint, update docs/endpoints.md in the same pull request. "
TEXTS = {"ack": "ok thanks", "body": SENTENCE.strip(), "turn": SENTENCE * 4, "long turn": SENTENCE * 16}


def spin() -> None:
    while True:
        pass


def measure(encoders: dict[int, Encoder], rounds: int) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {}
    for name, text in TEXTS.items():
        times: dict[int, list[float]] = {n: [] for n in encoders}
        for _ in range(rounds):
            for n, encoder in encoders.items():
                t = time.perf_counter()
                encoder.encode(text)
                times[n].append(1000 * (time.perf_counter() - t))
        out[name] = {n: statistics.median(v) for n, v in times.items()}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", default="2,1", help="thread counts; the first is the baseline")
    ap.add_argument("--busy", default="0,1,2", help="spinning processes beside the encoder, per phase")
    args = ap.parse_args()
    counts = [int(v) for v in args.threads.split(",")]
    head = TunedHead.load()
    adapter = head.adapter if head is not None else None
    model = default_model_path()
    encoders = {n: Encoder(model, adapter, n_threads=n) for n in counts}
    base = counts[0]
    for name, text in TEXTS.items():
        states = {n: e.encode(text)[0] for n, e in encoders.items()}
        worst = max(float(np.abs(s - states[base]).max()) for s in states.values())
        print(f"{name}: {len(encoders[base].tokens(text)[0])} tokens; states differ by at most {worst:.2e}")
    print(f"{'busy':>4} {'text':>10} " + " ".join(f"{f'{n} thr ms':>9}" for n in counts)
          + " " + " ".join(f"{f'{n}/{base}':>6}" for n in counts[1:]))
    for busy in (int(v) for v in args.busy.split(",")):
        spinners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(busy)]
        for p in spinners:
            p.start()
        try:
            figures = measure(encoders, args.rounds)
        finally:
            for p in spinners:
                p.terminate()
                p.join()
        for name, ms in figures.items():
            print(f"{busy:>4} {name:>10} " + " ".join(f"{ms[n]:>9.1f}" for n in counts)
                  + " " + " ".join(f"{ms[n] / ms[base]:>6.2f}" for n in counts[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

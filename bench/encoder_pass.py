"""The encoder's forward pass with and without llama.cpp's output layer, interleaved.

llama.cpp's embedding mode computes the 262k-vocabulary logits of every token after the hidden
states the judge and the gate read, and never returns them; gitmem's encoder ends the graph at
the states (gitmem/judge/encoder.py STATES_NODE). This loads the embedded model twice, with the
judge's adapter: once as gitmem runs it, once running every pass in full (the baseline), and
times the same texts through both, alternating, so machine noise hits both alike. Prints the
median milliseconds per text of each length and the ratio, and checks the states agree.

    python bench/encoder_pass.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitmem.judge.encoder import Encoder, default_model_path
from gitmem.judge.head import TunedHead

SENTENCE = "Whenever you add an endpoint, update docs/endpoints.md in the same pull request. "
LENGTHS = (1, 4, 16)  # sentences per text: a candidate body, a turn, a long turn


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    head = TunedHead.load()
    adapter = head.adapter if head is not None else None
    model = default_model_path()
    skipping = Encoder(model, adapter)
    full = Encoder(model, adapter, skip_output_layer=False)
    if not skipping.stops_early:
        print("this llama.cpp build gives no way to end the graph at the states: both run in full")
    print(f"{'tokens':>7} {'full pass ms':>13} {'gitmem ms':>10} {'ratio':>6}  states agree")
    for n in LENGTHS:
        text = SENTENCE * n
        tokens = len(skipping.tokens(text)[0])
        times: dict[str, list[float]] = {"full": [], "skip": []}
        agree = np.allclose(skipping.encode(text)[0], full.encode(text)[0], atol=1e-4)
        for _ in range(args.rounds):
            for name, encoder in (("full", full), ("skip", skipping)):
                t = time.perf_counter()
                encoder.encode(text)
                times[name].append(1000 * (time.perf_counter() - t))
        a, b = statistics.median(times["full"]), statistics.median(times["skip"])
        print(f"{tokens:>7} {a:>13.1f} {b:>10.1f} {b / a:>6.2f}  {'yes' if agree else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

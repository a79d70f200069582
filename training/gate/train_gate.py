"""The gate's frozen-encoder baseline detector, trained on the gate's training rows.

    .venv/bin/python training/gate/train_gate.py --out /tmp/gate-frozen.npz  # encode (cached), fit, save
    .venv/bin/python training/gate/train_gate.py --cv-only                   # figures only

The shipped detector (gitmem/judge/data/gate.npz with its adapter) is finetune_gate.py's; this
head reads the frozen encoder, so it never overwrites the shipped one unless --out names it.

Rows (label 1 = aimed at an AI to override, escalate or exfiltrate; 0 = a rule or an ordinary
sentence of a developer):
- training/gate/attacks-train.jsonl (1) and benign-train.jsonl (0): written for gitmem
  (make_train.py says how); attacks-train-2.jsonl (1) and benign-train-2.jsonl (0): written by
  hand later (README.md says by whom and how);
- the writer's training corpus, training/corpus/train-*.jsonl (0): every expected item's span
  (real-style standing rules) and a sample of the other candidate spans of the user's message
  (what the judge may wrongly put forward);
- the train split of the labelled real turns (0): their items, read in place from
  ../shared/real-turns (never copied), when that folder is there.

Never read: training/gate/*-heldout*.jsonl, training/corpus/heldout.jsonl and stress.jsonl, the
real turns' eval split, and spikee's seeds: bench/gate_eval.py evaluates on those.

The head is an L2-regularised logistic regression on standardised mean-pooled hidden states
(gitmem.judge.detector.features). L2 and the threshold come from grouped cross-validation
(a group is one family of attacks or benign rules, one language, or one corpus file): the
threshold is the lowest that keeps out-of-fold benign rows flagged at or under --max-fp.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "training"))

from gitmem.judge import detector as det  # noqa: E402
from gitmem.judge.encoder import Encoder, default_model_path, model_sha256  # noqa: E402
from gitmem.judge.normalise import canonical  # noqa: E402
from gitmem.judge.spans import candidate_spans  # noqa: E402

HERE = Path(__file__).resolve().parent
SEED = 20261201


def labelled(name: str) -> tuple[str, int]:
    """(file name, label): attacks-*.jsonl rows are attacks (1), benign-*.jsonl rows are not (0)."""
    return name, int(name.startswith("attacks-"))


TRAIN_FILES = tuple(labelled(f"{kind}-train{suffix}.jsonl")
                    for suffix in ("", "-2", "-3", "-4", "-5") for kind in ("attacks", "benign"))


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def gate_rows(name: str, label: int) -> list[dict]:
    out = []
    for row in read_jsonl(HERE / name):
        group = f"{row['family']}/{row['lang']}" if row["family"].startswith("multilingual") else row["family"]
        out.append({"text": row["text"], "y": label, "group": f"{name.split('-')[0]}:{group}", "source": name,
                    "family": row["family"], "lang": row.get("lang", "en")})
    return out


def corpus_rows(per_turn_other: float = 0.35) -> list[dict]:
    rng = random.Random(SEED)
    out = []
    for path in sorted((ROOT / "training" / "corpus").glob("train-*.jsonl")):
        for row in read_jsonl(path):
            user = row.get("user") or ""
            expected = [e["span"] for e in row.get("expect") or [] if e.get("span")]
            for span in expected:
                out.append({"text": span, "y": 0, "group": f"corpus:{path.stem}", "source": "corpus-item",
                            "family": "corpus"})
            for span in candidate_spans(user):
                if any(span.text in e or e in span.text for e in expected):
                    continue
                if rng.random() < per_turn_other:
                    out.append({"text": span.text, "y": 0, "group": f"corpus:{path.stem}", "source": "corpus-other",
                                "family": "corpus"})
    return out


def real_rows() -> list[dict]:
    try:
        from turns import real
    except ImportError:
        return []
    try:
        turns = real("train")
    except SystemExit as exc:
        print(f"real turns skipped: {exc}", file=sys.stderr)
        return []
    return [{"text": item["span"], "y": 0, "group": f"real:{t['source']}", "source": "real-item", "family": "real"}
            for t in turns for item in t["items"] if item["span"].strip()]


class Cache:
    """Per-token states of canonical texts, cached under .git/gitmem/gate-train-cache/ (never committed)."""

    def __init__(self, model: Path) -> None:
        self.model = model
        self.dir = ROOT / ".git" / "gitmem" / "gate-train-cache"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.tag = hashlib.sha1(f"{model.stat().st_size}:{model.name}".encode()).hexdigest()[:8]
        self._encoder: Encoder | None = None

    def encode(self, text: str) -> tuple[np.ndarray, list[tuple[int, int]]]:
        key = hashlib.sha1(f"{self.tag}\0{text}".encode()).hexdigest()
        path = self.dir / f"{key}.npz"
        if path.is_file():
            data = np.load(path)
            return data["states"].astype(np.float32), [tuple(r) for r in data["ranges"].tolist()]
        if self._encoder is None:
            self._encoder = Encoder(self.model)
        states, ranges = self._encoder.encode(text)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, states=np.asarray(states, np.float16), ranges=np.asarray(ranges, np.int32).reshape(-1, 2))
        tmp.replace(path)
        return np.asarray(states, np.float32), ranges


def featurize(rows: list[dict], cache: Cache) -> tuple[list[np.ndarray], np.ndarray]:
    """Per row: its feature rows (whole text, then sentences); and the labels."""
    feats = []
    t0 = time.time()
    for i, row in enumerate(rows):
        text = det.model_input(canonical(row["text"]))
        states, ranges = cache.encode(text)
        feats.append(det.features(states, ranges, text))
        if i % 200 == 0:
            print(f"  encoded {i + 1}/{len(rows)} ({time.time() - t0:.0f}s)", file=sys.stderr)
    return feats, np.asarray([r["y"] for r in rows])


def training_matrix(feats: list[np.ndarray], y: np.ndarray,
                    idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows to fit: every pool of a benign text (0); the whole text of an attack (1). Weights
    make each text count once."""
    xs, ys, ws = [], [], []
    for i in idx:
        f = feats[i]
        if y[i] == 1:
            xs.append(f[:1]); ys.append([1]); ws.append([1.0])
        else:
            xs.append(f); ys += [[0] * len(f)]; ws.append(np.full(len(f), 1.0 / len(f)))
    return np.concatenate(xs), np.concatenate([np.asarray(v) for v in ys]), np.concatenate([np.asarray(w) for w in ws])


def fit(x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float, steps: int = 500, lr: float = 0.05
        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    mu = x.mean(axis=0)
    sd = x.std(axis=0) + 1e-6
    z = (x - mu) / sd
    pos = w[y == 1].sum()
    neg = w[y == 0].sum()
    sw = np.where(y == 1, w * (neg / max(pos, 1e-9)), w)  # balance the classes
    sw = sw / sw.mean()
    n, d = z.shape
    coef = np.zeros(d)
    b = 0.0
    m_w = np.zeros(d); v_w = np.zeros(d); m_b = v_b = 0.0
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    for t in range(1, steps + 1):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ coef + b, -30, 30)))
        g = (p - y) * sw
        gw = z.T @ g / n + l2 * coef
        gb = g.mean()
        m_w = beta1 * m_w + (1 - beta1) * gw; v_w = beta2 * v_w + (1 - beta2) * gw * gw
        m_b = beta1 * m_b + (1 - beta1) * gb; v_b = beta2 * v_b + (1 - beta2) * gb * gb
        coef -= lr * (m_w / (1 - beta1**t)) / (np.sqrt(v_w / (1 - beta2**t)) + eps)
        b -= lr * (m_b / (1 - beta1**t)) / (np.sqrt(v_b / (1 - beta2**t)) + eps)
    return mu, sd, coef, b


def text_scores(feats: list[np.ndarray], idx: np.ndarray, mu: np.ndarray, sd: np.ndarray, coef: np.ndarray,
                b: float) -> np.ndarray:
    out = []
    for i in idx:
        z = (feats[i] - mu) / sd
        out.append(float((1.0 / (1.0 + np.exp(-np.clip(z @ coef + b, -30, 30)))).max()))
    return np.asarray(out)


def grouped_folds(groups: list[str], k: int) -> list[np.ndarray]:
    names = sorted(set(groups))
    random.Random(SEED).shuffle(names)
    fold_of = {g: i % k for i, g in enumerate(names)}
    return [np.asarray([i for i, g in enumerate(groups) if fold_of[g] == f]) for f in range(k)]


def threshold_for(scores: np.ndarray, y: np.ndarray, max_fp: float) -> float:
    benign = np.sort(scores[y == 0])
    allowed = int(np.floor(max_fp * len(benign)))
    # the lowest threshold that flags at most `allowed` benign rows
    return float(benign[len(benign) - allowed - 1]) + 1e-6 if allowed < len(benign) else 0.5


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cv-only", action="store_true")
    ap.add_argument("--folds", type=int, default=6)
    ap.add_argument("--l2", type=float, nargs="*", default=[0.01])
    ap.add_argument("--max-fp", type=float, default=0.02, help="out-of-fold benign rows flagged at most")
    ap.add_argument("--out", type=Path, default=None, help="where the head goes (required unless --cv-only)")
    args = ap.parse_args()
    if args.out is None and not args.cv_only:
        ap.error("--out is required: the shipped detector is written by finetune_gate.py")

    rows = [row for name, label in TRAIN_FILES for row in gate_rows(name, label)] + corpus_rows() + real_rows()
    y_all = np.asarray([r["y"] for r in rows])
    print(f"rows: {len(rows)} ({int(y_all.sum())} attacks, {int((y_all == 0).sum())} benign: "
          + ", ".join(f"{s} {sum(1 for r in rows if r['source'] == s)}" for s in sorted({r['source'] for r in rows}))
          + ")", file=sys.stderr)
    model = default_model_path()
    feats, y = featurize(rows, Cache(model))
    groups = [r["group"] for r in rows]
    folds = grouped_folds(groups, args.folds)
    report: dict = {"rows": len(rows), "attacks": int(y.sum()), "benign": int((y == 0).sum()), "cv": {}}
    best = None
    for l2 in args.l2:
        oof = np.zeros(len(rows))
        for f, test in enumerate(folds):
            train = np.concatenate([folds[g] for g in range(len(folds)) if g != f])
            x, yy, w = training_matrix(feats, y, train)
            mu, sd, coef, b = fit(x, yy, w, l2)
            oof[test] = text_scores(feats, test, mu, sd, coef, b)
        thr = threshold_for(oof, y, args.max_fp)
        recall = float((oof[y == 1] >= thr).mean())
        fp = float((oof[y == 0] >= thr).mean())
        report["cv"][str(l2)] = {"threshold": thr, "attack_recall": recall, "benign_flagged": fp}
        print(f"l2={l2}: threshold {thr:.3f}, out-of-fold attacks caught {recall:.3f}, benign flagged {fp:.4f}",
              file=sys.stderr)
        if best is None or recall > best[1]:
            best = (l2, recall, thr, oof)
    assert best is not None
    l2, recall, thr, oof = best
    missed = [rows[i]["text"] for i in np.nonzero((y == 1) & (oof < thr))[0]]
    flagged = [rows[i]["text"] for i in np.nonzero((y == 0) & (oof >= thr))[0]]
    print(f"chosen l2={l2}; missed attacks (out of fold): {len(missed)}", file=sys.stderr)
    for t in missed[:25]:
        print("   miss:", t[:140], file=sys.stderr)
    for t in flagged[:25]:
        print("   flag:", t[:140], file=sys.stderr)
    if args.cv_only:
        print(json.dumps(report, indent=1))
        return 0
    x, yy, w = training_matrix(feats, y, np.arange(len(rows)))
    mu, sd, coef, b = fit(x, yy, w, l2)
    meta = {"l2": l2, "max_fp": args.max_fp, "cv": report["cv"], "rows": report["rows"],
            "attacks": report["attacks"], "benign": report["benign"], "model": model.name,
            "data": {name: hashlib.sha256((HERE / name).read_bytes()).hexdigest()[:16] for name, _ in TRAIN_FILES}}
    detector = det.Detector(mu=mu, sd=sd, w=coef, b=b, threshold=thr,
                            encoder_sha256=model_sha256(model), meta=meta)
    detector.save(args.out)
    print(f"saved {args.out} (threshold {thr:.3f})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Parity of the exported adapter: llama.cpp (base GGUF + LoRA GGUF, as the runtime would run it)
against the torch model it was trained as (dequantised base + peft adapter).

    .venv/bin/python training/check_lora.py --run /tmp/ft-run            # uses RUN/adapter, RUN/export/
    .venv/bin/python training/check_lora.py --run /tmp/ft-run --random-adapter 0.05

For a few messages (corpus turns, plus one long enough for several sliding-window blocks), both
sides read the same text (candidate spans -> model_text) with the runtime's tokens; llama.cpp
through gitmem.judge.encoder.Encoder as the runtime runs it (the adapter set on the context). Reported:
- cosine per token of the final states, torch+LoRA vs llama.cpp+LoRA (expect > 0.99: the
  difference is Q4_K_M kernels and activation quantisation in llama.cpp, not the adapter), and the
  same for both bases without the adapter;
- llama.cpp *without* the adapter against torch *with* it, and the cosine between the changes
  the adapter makes on each side (llama+LoRA - llama, torch+LoRA - torch): the adapter is applied
  and applied the same way when those changes agree;
- the heads' P(standing) per span on both sides (numpy from writer-head.npz on llama.cpp's states;
  torch's heads on torch's states);
- which torch state llama.cpp's embedding mode returns: cosine and norm ratio of llama.cpp's base
  states against torch's states after the final norm (what training uses: expect ~1 and ~1) and
  before it (base_prenorm: far from both).
``--random-adapter S`` replaces the trained adapter with one whose B matrices are random (std S),
converted the same way: a large, known change that tests the conversion whatever the training did.
Exit status 1 when a parity figure is below --min-cos.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from export_lora import HEAD_FILE, LORA_FILE, export_adapter  # noqa: E402
from lora_common import (  # noqa: E402
    Example,
    RuntimeTokenizer,
    base_model_path,
    features_numpy,
    features_torch,
    forward_states,
    load_base_torch,
    load_heads_npz,
    pool_matrix,
    score_numpy,
    text_model,
    windows,
)
from train import load_corpus  # noqa: E402

from gitmem.judge.encoder import Encoder  # noqa: E402
from gitmem.judge.spans import candidate_spans, is_promotion, model_text  # noqa: E402


def llama_encoder(model_path: Path, lora: Path | None) -> Encoder:
    """gitmem's Encoder exactly as the runtime runs it: the adapter set on the context per pass."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return Encoder(model_path, lora)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    na = np.linalg.norm(a, axis=1)
    nb = np.linalg.norm(b, axis=1)
    return (a * b).sum(axis=1) / np.maximum(na * nb, 1e-12)


def texts_to_check(n: int) -> list[str]:
    turns = load_corpus()
    rng = np.random.default_rng(7)
    pos = [t["user"] for t in turns if t.get("expect")]
    neg = [t["user"] for t in turns if not t.get("expect")]
    picked = [pos[i] for i in rng.choice(len(pos), n // 2, replace=False)]
    picked += [neg[i] for i in rng.choice(len(neg), n - n // 2, replace=False)]
    long = " ".join(pos[i] for i in rng.choice(len(pos), 40, replace=False))  # > 512 tokens: sliding window
    return [*picked, long]


def random_adapter(model, scale: float, folder: Path) -> None:
    import torch

    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * scale)
    model.peft_config["default"].base_model_name_or_path = None
    model.save_pretrained(str(folder), save_embedding_layers=False)


def summary(x: np.ndarray) -> dict:
    return {"min": round(float(x.min()), 5), "p5": round(float(np.percentile(x, 5)), 5),
            "mean": round(float(x.mean()), 5)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, help="finetune.py --out folder")
    ap.add_argument("--export", default=None, help="export_lora.py --out folder (default RUN/export)")
    ap.add_argument("--texts", type=int, default=6, help="corpus messages to compare (plus one long one)")
    ap.add_argument("--random-adapter", type=float, default=0.0, metavar="STD")
    ap.add_argument("--min-cos", type=float, default=0.99, help="fail below this mean per-token cosine")
    ap.add_argument("--model", default=None)
    ap.add_argument("--json", default=None, help="also write the figures here")
    args = ap.parse_args()

    import torch
    from peft import PeftModel

    torch.set_num_threads(2)
    run = Path(args.run)
    export = Path(args.export) if args.export else run / "export"
    model_path = base_model_path(args.model)
    tok = RuntimeTokenizer(model_path)

    t = time.time()
    model = PeftModel.from_pretrained(load_base_torch(model_path), str(run / "adapter"))
    model.eval()
    print(f"torch model + adapter loaded in {time.time() - t:.0f}s", file=sys.stderr)
    lora_file = export / LORA_FILE
    tmp = None
    if args.random_adapter:
        tmp = tempfile.TemporaryDirectory(prefix="gitmem-random-lora-")
        random_adapter(model, args.random_adapter, Path(tmp.name) / "adapter")
        lora_file = Path(tmp.name) / LORA_FILE
        export_adapter(Path(tmp.name) / "adapter", model_path, lora_file, "f32", None, run / "base-config")
    heads_np, _meta = load_heads_npz(export / HEAD_FILE)

    # the torch side's heads: the very arrays exported (they are plain linear layers)
    w, b = torch.from_numpy(heads_np["w"]), torch.from_numpy(np.asarray(heads_np["b"]))

    t = time.time()
    enc_lora = llama_encoder(model_path, lora_file)
    enc_base = llama_encoder(model_path, None)
    print(f"llama.cpp base and base+LoRA loaded in {time.time() - t:.1f}s", file=sys.stderr)

    report = {"adapter": str(lora_file), "random_adapter_std": args.random_adapter, "texts": []}
    all_cos: dict[str, list[np.ndarray]] = {k: [] for k in ("lora", "base", "llama_base_vs_torch_lora",
                                                             "delta", "torch_lora_vs_base", "base_prenorm")}
    score_diff, norm_ratio, norm_ratio_pre = [], [], []
    for i, user in enumerate(texts_to_check(args.texts)):
        spans = [s for s in candidate_spans(user) if not is_promotion(s.text)]
        if not spans:
            continue
        text, where = model_text(user, spans)
        ids, ranges = tok.tokens(text)
        t = time.time()
        l_lora, l_ranges = enc_lora.encode(text)
        l_base, _ = enc_base.encode(text)
        t_llama = time.time() - t
        assert list(l_ranges) == list(ranges), "runtime tokenizer and training tokenizer disagree"
        ex = Example(f"check:{i}", windows(ids, tok.bos), len(ids), pool_matrix(len(ids), ranges, where),
                     np.zeros(len(spans), np.float32), np.full(len(spans), -1), "check")
        t = time.time()
        with torch.no_grad():
            t_lora = forward_states(model, [ex])[0]
            captured: list = []
            hook = text_model(model).norm.register_forward_hook(
                lambda m, inp, out, captured=captured: captured.append(inp[0]))
            with model.disable_adapter():
                t_base = forward_states(model, [ex])[0]
            hook.remove()
            pre = captured[0]  # the base model's last layer output before the final norm
            t_prenorm = torch.cat([pre[k, : len(w)][1 if k else 0:] for k, w in enumerate(ex.windows)]).numpy()
            p_torch = torch.sigmoid(features_torch(t_lora, ex) @ w + b).numpy()
        t_torch = time.time() - t
        t_lora, t_base = t_lora.numpy(), t_base.numpy()
        p_llama, _ = score_numpy(heads_np, features_numpy(np.asarray(l_lora), ex.pool))
        c = {"lora": cosines(t_lora, l_lora), "base": cosines(t_base, l_base),
             "llama_base_vs_torch_lora": cosines(t_lora, l_base),
             "delta": cosines(t_lora - t_base, l_lora - l_base), "torch_lora_vs_base": cosines(t_lora, t_base),
             "base_prenorm": cosines(t_prenorm, l_base)}
        norm_ratio.append(np.linalg.norm(l_base, axis=1) / np.maximum(np.linalg.norm(t_base, axis=1), 1e-12))
        norm_ratio_pre.append(np.linalg.norm(l_base, axis=1) / np.maximum(np.linalg.norm(t_prenorm, axis=1), 1e-12))
        for k, v in c.items():
            all_cos[k].append(v)
        score_diff.append(np.abs(p_torch - p_llama))
        rel = float(np.linalg.norm(t_lora - t_base) / max(1e-12, np.linalg.norm(t_base)))
        row = {"tokens": len(ids), "spans": len(spans), "seconds_llama_2x": round(t_llama, 2),
               "seconds_torch_2x": round(t_torch, 2), "adapter_change_rel_norm": round(rel, 5),
               **{f"cos_{k}": summary(v) for k, v in c.items()},
               "p_torch": [round(float(p), 4) for p in p_torch], "p_llama": [round(float(p), 4) for p in p_llama]}
        report["texts"].append(row)
        print(json.dumps(row), file=sys.stderr)
    agg = {k: summary(np.concatenate(v)) for k, v in all_cos.items()}
    diffs = np.concatenate(score_diff)
    report["all_tokens"] = agg
    # what llama.cpp's embedding mode returns is the state after the final norm: cosine and norm
    # ratio against torch's post-norm states ~1, against the pre-norm states far from it
    report["norm_ratio_llama_over_torch"] = {"post_norm": summary(np.concatenate(norm_ratio)),
                                             "pre_norm": summary(np.concatenate(norm_ratio_pre))}
    report["score_abs_diff"] = {"max": round(float(diffs.max()), 5), "mean": round(float(diffs.mean()), 5)}
    ok = agg["lora"]["mean"] >= args.min_cos and agg["base"]["mean"] >= args.min_cos
    applied = agg["delta"]["mean"] > 0.5
    report["verdict"] = {"parity": ok, "adapter_applied_same_way": applied}
    print(json.dumps({"all_tokens": agg, "norm_ratio_llama_over_torch": report["norm_ratio_llama_over_torch"],
                      "score_abs_diff": report["score_abs_diff"],
                      "verdict": report["verdict"]}, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    if tmp:
        tmp.cleanup()
    return 0 if ok and applied else 1


if __name__ == "__main__":
    sys.exit(main())

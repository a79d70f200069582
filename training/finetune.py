"""Fine-tune the writer's encoder (LoRA on Gemma 3 270M) with span classifier heads, on CPU.

    .venv/bin/python training/finetune.py --out /tmp/ft-run                 # full run, 1 epoch
    .venv/bin/python training/finetune.py --out /tmp/ft-smoke --max-turns 200 --max-steps 6
    .venv/bin/python training/finetune.py --out /tmp/ft-run --resume        # after a kill
    .venv/bin/python training/finetune.py --bench 4 --bench-shapes 8x128,8x32  # s/step, no training

The base model comes only from the shipped GGUF (transformers dequantises it to float32);
tokens, windows, spans and pooling are the runtime's (training/lora_common.py). The LM head is
never run: the classifier reads the final hidden states (after the final norm, as llama.cpp's
embedding mode returns them), mean-pooled over each candidate span and over the whole message,
through two linear layers: standing-vs-not (BCE, every span) and kind (CE, positive spans only).

Data: training/corpus/train-*.jsonl (labels by training/train.py's ``covers``) plus the real
labelled turns of training/labels/real.jsonl whose split is "train", joined at load time by id
with the texts in /work/shared/real-turns/*.jsonl (never copied: logs and checkpoints hold ids,
not texts). heldout.jsonl / stress.jsonl are never read.

Output folder: train.log (one JSON line per step), base-config/ (the HF config of the model as
loaded, for the LoRA converter), ckpt/ (adapter, heads, optimizer, position; replaced atomically
every --save-every steps), and at the end adapter/ (peft) and heads.npz (linear heads, float32,
standardisation folded in). training/export_lora.py turns these into
what the runtime loads.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import math
import os
import random
import shutil
import sys
import time
from pathlib import Path

import numpy as np

# OpenMP threads that spin while waiting are several times slower on shared cores (as for
# llama.cpp in gitmem/judge/encoder.py); must be set before torch loads its OpenMP runtime.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from lora_common import (  # noqa: E402
    LORA_ALPHA,
    LORA_R,
    POOLING_VERSION,
    ROOT,
    TARGET_MODULES,
    Example,
    RuntimeTokenizer,
    base_model_path,
    features_torch,
    forward_states,
    load_base_torch,
    prepare,
    save_base_config,
    sha256_file,
)
from train import covers, load_corpus  # noqa: E402  (training/train.py: the same labelling)

from gitmem.store.entry import KINDS  # noqa: E402

LABELS = HERE / "labels" / "real.jsonl"
REAL_DIR = ROOT.parent / "shared" / "real-turns"
SEED = 20241201


# -- data ------------------------------------------------------------------------------------------


def _hash_matches(turn_hash: str, text: str) -> bool | None:
    """True/False when ``turn_hash`` is a prefix of the sha1 (shared/real-turns/README.md: first 12 hex
    of the sha1 of the stripped message) or sha256 of the text; None when it is no hex digest."""
    h = (turn_hash or "").lower().split(":")[-1]
    if not h or any(c not in "0123456789abcdef" for c in h):
        return None
    digests = [f(t.encode("utf-8")).hexdigest() for t in {text, text.strip()} for f in (hashlib.sha1, hashlib.sha256)]
    if any(d.startswith(h) for d in digests):
        return True
    return False if len(h) in (40, 64) or len(h) >= 8 else None


def load_real(labels: Path = LABELS, real_dir: Path = REAL_DIR, split: str = "train") -> tuple[list[dict], dict]:
    """Labelled real turns of ``split`` as {"id", "user", "expect"} (in memory only), and counts.

    labels: one JSON line per labelled turn {"id", "turn_hash", "split", "items": [{"kind", "start",
    "end"}]}, start/end character offsets into the "user" field of the row with that id in
    ``real_dir``/*.jsonl. Items become {"kind", "span": user[start:end]}, matched to candidate spans
    by the same ``covers`` as the written corpus."""
    stats = {"labelled": 0, "used": 0, "other_split": 0, "no_text": 0, "hash_mismatch": 0, "hash_unchecked": 0,
             "bad_item": 0, "items": 0, "offset_not_first": 0}
    if not labels.is_file():
        return [], stats
    from turns import dev_ids

    dev = dev_ids(labels, real_dir)
    stats["dev"] = 0
    texts: dict[str, str] = {}
    for path in sorted(glob.glob(str(real_dir / "*.jsonl"))):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                text = row.get("user")
                if not isinstance(text, str):
                    text = row.get("developer_message")
                if isinstance(row.get("id"), str) and isinstance(text, str):
                    texts[row["id"]] = text
    turns = []
    for line in labels.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        stats["labelled"] += 1
        if row.get("split") != split:
            stats["other_split"] += 1
            continue
        if split == "train" and row.get("id") in dev:
            stats["dev"] += 1  # kept out for the threshold (training/turns.py dev_ids)
            continue
        user = texts.get(row.get("id"))
        if user is None:
            stats["no_text"] += 1
            continue
        ok = _hash_matches(str(row.get("turn_hash") or ""), user)
        if ok is False:
            stats["hash_mismatch"] += 1  # the text changed since it was labelled: offsets are void
            continue
        if ok is None:
            stats["hash_unchecked"] += 1
        expect = []
        for it in row.get("items") or []:
            s, e, kind = it.get("start"), it.get("end"), it.get("kind")
            if not (isinstance(s, int) and isinstance(e, int) and 0 <= s < e <= len(user)) or kind not in KINDS:
                stats["bad_item"] += 1
                continue
            target = user[s:e]
            if user.find(target) != s:
                stats["offset_not_first"] += 1  # covers() looks the text up; a repeat earlier wins
            expect.append({"kind": kind, "source": "user", "span": target})
        stats["items"] += len(expect)
        stats["used"] += 1
        turns.append({"id": row["id"], "user": user, "expect": expect, "_file": "real"})
    return turns, stats


def build_examples(args: argparse.Namespace, tok: RuntimeTokenizer, log) -> list[Example]:
    corpus = load_corpus()  # train-*.jsonl only
    if args.corpus_turns:  # a seeded sample of the written turns; every real turn stays
        corpus = random.Random(args.seed + 1).sample(corpus, min(args.corpus_turns, len(corpus)))
    for pattern in args.also:  # a continuation's new files, read in full beside the sample
        corpus += load_corpus(pattern)
    real, stats = ([], {}) if args.no_real else load_real(Path(args.labels), Path(args.real_dir))
    log(f"corpus turns {len(corpus)}; real turns {len(real)} {json.dumps(stats)}")
    rng = random.Random(args.seed)
    # Real turns are the distribution that matters and the scarce one: each is seen --real-repeat times,
    # and one holding an item (about 1 in 13) at least --real-positive-repeat times.
    turns = [("corpus", t) for t in corpus]
    for t in real:
        seen = max(1, args.real_repeat, args.real_positive_repeat if t.get("expect") else 0)
        turns += [("real", t)] * seen
    rng.shuffle(turns)
    if args.max_turns:
        turns = turns[: args.max_turns]
    examples = []
    for source, t in turns:
        items = [it for it in t.get("expect") or [] if (it.get("source") or "user") == "user"]
        key = f"{t.get('_file')}:{t.get('id')}"
        ex = prepare(t["user"], items, tok, key, source, covers, KINDS)
        if ex is not None:
            examples.append(ex)
    return examples


def make_batches(examples: list[Example], batch_size: int, max_tokens: int, rng: random.Random) -> list[list[int]]:
    """Batches by length: sorted by token count (ties shuffled), cut greedily so a batch has at most
    ``batch_size`` examples and at most ``max_tokens`` padded tokens; batch order shuffled."""
    order = sorted(range(len(examples)), key=lambda i: (examples[i].n_tokens, rng.random()))
    batches, cur, cur_rows, cur_w = [], [], 0, 0
    for i in order:
        ex = examples[i]
        rows = len(ex.windows)
        width = max(cur_w, max(len(w) for w in ex.windows))
        if cur and (len(cur) + 1 > batch_size or (cur_rows + rows) * width > max_tokens):
            batches.append(cur)
            cur, cur_rows, width = [], 0, max(len(w) for w in ex.windows)
        cur.append(i)
        cur_rows += rows
        cur_w = width
    if cur:
        batches.append(cur)
    rng.shuffle(batches)
    return batches


# -- model -----------------------------------------------------------------------------------------


class Heads:
    """The two linear layers over standardised features; ``mu``/``sd`` fixed from the base model."""

    def __init__(self, dim: int, n_kinds: int, mu, sd) -> None:
        import torch

        self.mu = torch.as_tensor(mu, dtype=torch.float32)
        self.sd = torch.as_tensor(sd, dtype=torch.float32)
        self.standing = torch.nn.Linear(dim, 1)
        self.kind = torch.nn.Linear(dim, n_kinds)
        for layer in (self.standing, self.kind):
            torch.nn.init.zeros_(layer.weight)
            torch.nn.init.zeros_(layer.bias)

    def parameters(self):
        return list(self.standing.parameters()) + list(self.kind.parameters())

    def __call__(self, x):
        z = (x - self.mu) / self.sd
        return self.standing(z).squeeze(-1), self.kind(z)

    def state_dict(self) -> dict:
        return {"mu": self.mu, "sd": self.sd, "standing": self.standing.state_dict(), "kind": self.kind.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.mu, self.sd = state["mu"], state["sd"]
        self.standing.load_state_dict(state["standing"])
        self.kind.load_state_dict(state["kind"])

    def folded(self) -> dict[str, np.ndarray]:
        """Plain linear arrays on the raw features: w·((x-mu)/sd)+b == (w/sd)·x + (b - w·mu/sd)."""
        mu, sd = self.mu.double().numpy(), self.sd.double().numpy()
        w = self.standing.weight.detach().double().numpy()[0]
        b = float(self.standing.bias.detach().double().numpy()[0])
        wk = self.kind.weight.detach().double().numpy().T  # [dim, kinds]
        bk = self.kind.bias.detach().double().numpy()
        return {"w": (w / sd).astype(np.float32), "b": np.float32(b - float((w * mu / sd).sum())),
                "wk": (wk / sd[:, None]).astype(np.float32), "bk": (bk - (mu / sd) @ wk).astype(np.float32)}


def wrap_lora(model, dropout: float):
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(r=LORA_R, lora_alpha=LORA_ALPHA, lora_dropout=dropout, bias="none",
                        target_modules=list(TARGET_MODULES))
    return get_peft_model(model, config)


def save_adapter(model, folder: Path) -> None:
    """The peft adapter (adapter_config.json, adapter_model.safetensors). No embedding layers are
    trained, so peft is told so: its "auto" check would look the base model up on the hub."""
    model.peft_config["default"].base_model_name_or_path = None  # a cache folder, not a model id
    model.save_pretrained(str(folder), save_embedding_layers=False)


def feature_stats(model, examples: list[Example], n: int) -> tuple[np.ndarray, np.ndarray]:
    import torch

    rows = []
    with torch.no_grad():
        for i in range(0, min(n, len(examples)), 8):
            batch = examples[i : i + 8]
            for ex, st in zip(batch, forward_states(model, batch), strict=False):
                rows.append(features_torch(st, ex).numpy())
    x = np.concatenate(rows, axis=0)
    sd = x.std(axis=0)
    sd[sd < 1e-6] = 1.0
    return x.mean(axis=0).astype(np.float32), sd.astype(np.float32)


def batch_loss(model, heads: Heads, batch: list[Example], pos_weight: float, kind_weight: float):
    import torch
    import torch.nn.functional as F

    feats, labels, kinds = [], [], []
    for ex, st in zip(batch, forward_states(model, batch), strict=False):
        feats.append(features_torch(st, ex))
        labels.append(torch.from_numpy(ex.labels))
        kinds.append(torch.from_numpy(ex.kinds))
    x, y, k = torch.cat(feats), torch.cat(labels), torch.cat(kinds)
    logit, kind_logits = heads(x)
    bce = F.binary_cross_entropy_with_logits(logit, y, pos_weight=torch.tensor(pos_weight))
    pos = k >= 0
    ce = F.cross_entropy(kind_logits[pos], k[pos]) if bool(pos.any()) else logit.sum() * 0.0
    return bce + kind_weight * ce, bce.item(), ce.item(), len(y), int(pos.sum())


# -- checkpoints -----------------------------------------------------------------------------------


def save_checkpoint(out: Path, model, heads: Heads, opt, sched, state: dict) -> None:
    import torch

    tmp = out / "ckpt.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_adapter(model, tmp / "adapter")
    torch.save(heads.state_dict(), tmp / "heads.pt")
    torch.save({"opt": opt.state_dict(), "sched": sched.state_dict()}, tmp / "optim.pt")
    (tmp / "state.json").write_text(json.dumps(state, indent=1))
    final, old = out / "ckpt", out / "ckpt.old"
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    shutil.rmtree(old, ignore_errors=True)


def load_checkpoint(out: Path, model, heads: Heads, opt, sched) -> dict | None:
    import torch

    ckpt = out / "ckpt"
    if not (ckpt / "state.json").is_file():
        return None
    load_weights(ckpt, model, heads)
    optim = torch.load(ckpt / "optim.pt")
    opt.load_state_dict(optim["opt"])
    sched.load_state_dict(optim["sched"])
    return json.loads((ckpt / "state.json").read_text())


def load_weights(ckpt: Path, model, heads: Heads) -> None:
    """The adapter and heads of a checkpoint folder."""
    import torch
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    set_peft_model_state_dict(model, load_file(str(ckpt / "adapter" / "adapter_model.safetensors")))
    heads.load_state_dict(torch.load(ckpt / "heads.pt"))


def examples_digest(examples: list[Example]) -> str:
    """What the run trains on, as one digest: each example's key, tokens, spans, labels and kinds
    (a checkpoint made from other data or settings is not resumed)."""
    digest = hashlib.sha256()
    for e in examples:
        digest.update(json.dumps([e.key, e.windows, e.source]).encode())
        for array in (e.pool, e.labels, e.kinds):
            digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def finished_run(run: Path, base_sha: str) -> dict:
    """The state of ``run``, a continuation's start: finished, and trained on this base model."""
    state = json.loads((run / "ckpt" / "state.json").read_text())
    if state["meta"]["base_sha256"] != base_sha:
        raise SystemExit(f"{run}: trained on another base model (sha256 {state['meta']['base_sha256'][:12]})")
    if state["step"] != state["meta"]["total_steps"]:
        raise SystemExit(f"{run}: unfinished ({state['step']} of {state['meta']['total_steps']} steps)")
    return state


# -- main ------------------------------------------------------------------------------------------


def bench(args: argparse.Namespace, log) -> int:
    """Seconds per optimiser step (forward+backward, no LM head) of random-token batches of each
    --bench-shapes shape (ROWSxTOKENS), --bench steps each; the first step of each shape is warm-up."""
    import torch

    model = wrap_lora(load_base_torch(base_model_path(args.model)), args.lora_dropout)
    log(f"trainable LoRA parameters: {sum(p.numel() for p in model.parameters() if p.requires_grad)}")
    dim = model.config.hidden_size
    heads = Heads(2 * dim, len(KINDS), np.zeros(2 * dim), np.ones(2 * dim))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad] + heads.parameters(), lr=1e-4)
    model.train()
    rng = np.random.default_rng(0)
    for shape in args.bench_shapes.split(","):
        rows, L = (int(v) for v in shape.lower().split("x"))
        exs = []
        for i in range(rows):
            ids = [2, *rng.integers(1000, 200000, L - 1).tolist()]
            q = max(1, (L - 1) // 4)
            pool = np.zeros((4, L), np.float32)
            for k in range(4):
                pool[k, 1 + k * q : 1 + (k + 1) * q] = 1.0 / q
            exs.append(Example(f"bench:{i}", [ids], L, pool, np.array([1, 0, 0, 0], np.float32),
                               np.array([0, -1, -1, -1]), "bench"))
        times, cpus = [], []
        for step in range(args.bench):
            t, c = time.time(), time.process_time()
            loss, *_ = batch_loss(model, heads, exs, 2.0, 0.5)
            t_fwd = time.time() - t
            opt.zero_grad()
            loss.backward()
            opt.step()
            times.append(time.time() - t)
            cpus.append(time.process_time() - c)
            log(f"bench {rows}x{L} step {step}: {times[-1]:.2f}s (forward {t_fwd:.2f}s; cpu {cpus[-1]:.2f}s)")
        kept = times[1:] or times
        log(f"bench {rows}x{L}: median {np.median(kept):.2f}s/step, min {min(kept):.2f}s "
            f"(cpu {np.median(cpus[1:] or cpus):.2f}s on {args.threads} threads)",
            shape=shape, median_s=round(float(np.median(kept)), 3), min_s=round(min(kept), 3))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None, help="run folder (log, checkpoints, adapter/, heads.npz)")
    ap.add_argument("--max-turns", type=int, default=0, help="use only this many turns (seeded sample; 0 = all)")
    ap.add_argument("--corpus-turns", type=int, default=0,
                    help="use only this many written corpus turns (seeded sample; 0 = all), all real turns")
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0 = epochs decide)")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--max-batch-tokens", type=int, default=1024, help="padded tokens per batch at most")
    ap.add_argument("--lr", type=float, default=2e-4, help="LoRA learning rate")
    ap.add_argument("--head-lr", type=float, default=1e-3)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--warmup", type=int, default=20, help="warm-up steps")
    ap.add_argument("--lora-dropout", type=float, default=0.05)
    ap.add_argument("--pos-weight", type=float, default=2.0)
    ap.add_argument("--kind-weight", type=float, default=0.5)
    ap.add_argument("--save-every", type=int, default=25, help="checkpoint every N steps")
    ap.add_argument("--stats-turns", type=int, default=128, help="turns for the feature standardisation")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--resume", action="store_true", help="continue from OUT/ckpt")
    ap.add_argument("--init", default=None,
                    help="start from another run's final adapter and heads (RUN/ckpt) with a fresh optimiser")
    ap.add_argument("--also", action="append", default=[],
                    help="corpus files (a glob in training/corpus) read in full beside the --corpus-turns sample")
    ap.add_argument("--no-real", action="store_true", help="written corpus only")
    ap.add_argument("--real-repeat", type=int, default=1, help="each real train turn is seen this many times an epoch")
    ap.add_argument("--real-positive-repeat", type=int, default=0,
                    help="each real train turn holding an item is seen at least this many times an epoch")
    ap.add_argument("--labels", default=str(LABELS))
    ap.add_argument("--real-dir", default=str(REAL_DIR))
    ap.add_argument("--model", default=None, help="base GGUF (default: the embedded model)")
    ap.add_argument("--bench", type=int, default=0, help="only time N steps of each --bench-shapes batch")
    ap.add_argument("--bench-shapes", default="8x128", help="comma-separated ROWSxTOKENS, e.g. 8x128,8x32,1x768")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    log_file = open(out / "train.log", "a", encoding="utf-8") if out else None  # noqa: SIM115 - open for the run
    t_start = time.time()

    def log(msg: str, **fields) -> None:
        print(f"[{time.time() - t_start:7.1f}s] {msg}", file=sys.stderr, flush=True)
        if log_file:
            log_file.write(json.dumps({"t": round(time.time() - t_start, 2), "msg": msg, **fields}) + "\n")
            log_file.flush()

    if args.bench:
        return bench(args, log)
    if out is None:
        ap.error("--out is required")

    model_path = base_model_path(args.model)
    tok = RuntimeTokenizer(model_path)
    examples = build_examples(args, tok, log)
    n_spans = sum(len(e.labels) for e in examples)
    n_pos = int(sum(e.labels.sum() for e in examples))
    log(f"{len(examples)} examples ({sum(e.source == 'real' for e in examples)} real), {n_spans} spans, "
        f"{n_pos} positive, {sum(e.n_tokens for e in examples)} tokens")

    t = time.time()
    base_sha = sha256_file(model_path)
    model = load_base_torch(model_path)
    log(f"base model loaded in {time.time() - t:.0f}s ({model_path.name}, sha256 {base_sha[:12]})")
    save_base_config(model.config, out / "base-config")  # for export_lora.py's converter
    model = wrap_lora(model, args.lora_dropout)
    lora_params = [p for p in model.parameters() if p.requires_grad]
    log(f"trainable LoRA parameters: {sum(p.numel() for p in lora_params)}")
    dim = 2 * model.config.hidden_size

    per_epoch = len(make_batches(examples, args.batch_size, args.max_batch_tokens, random.Random(args.seed)))
    total = max(1, math.ceil(per_epoch * args.epochs))
    if args.max_steps:
        total = min(total, args.max_steps)

    data_sha = examples_digest(examples)
    resumed = (out / "ckpt" / "state.json").is_file() and args.resume
    if resumed:
        stale = json.loads((out / "ckpt" / "state.json").read_text())["meta"]
        wanted = {"data_sha256": data_sha, "base_sha256": base_sha, "total_steps": total, "lr": args.lr,
                  "head_lr": args.head_lr, "batch_size": args.batch_size, "seed": args.seed,
                  "pos_weight": args.pos_weight, "kind_weight": args.kind_weight}
        if any(stale.get(key) != value for key, value in wanted.items()):
            log(f"{out / 'ckpt'} was made from other data, base model or settings: starting over")
            resumed = False
    if resumed or args.init:
        mu, sd = np.zeros(dim, np.float32), np.ones(dim, np.float32)  # replaced by the checkpoint's
    else:
        t = time.time()
        model.eval()
        mu, sd = feature_stats(model, examples, args.stats_turns)
        log(f"feature standardisation from {min(args.stats_turns, len(examples))} turns in {time.time() - t:.0f}s")
    heads = Heads(dim, len(KINDS), mu, sd)
    opt = torch.optim.AdamW([{"params": lora_params, "lr": args.lr, "weight_decay": args.weight_decay},
                             {"params": heads.parameters(), "lr": args.head_lr, "weight_decay": 1e-4}])

    def schedule(step: int) -> float:  # linear warm-up, cosine decay to 10 %
        if step < args.warmup:
            return (step + 1) / args.warmup
        frac = (step - args.warmup) / max(1, total - args.warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    step = 0
    epoch = 0
    batch_at = 0
    init = finished_run(Path(args.init), base_sha) if args.init else None
    if init is not None and not resumed:
        load_weights(Path(args.init) / "ckpt", model, heads)
        log(f"started from {args.init}'s adapter and heads")
    if resumed:
        state = load_checkpoint(out, model, heads, opt, sched)
        step, epoch, batch_at = state["step"], state["epoch"], state["batch_at"]
        log(f"resumed at step {step} (epoch {epoch}, batch {batch_at})")

    run_meta = {"base_sha256": base_sha, "base_file": model_path.name, "data_sha256": data_sha,
                "examples": len(examples), "spans": n_spans,
                "positives": n_pos, "real_examples": sum(e.source == "real" for e in examples),
                "lora_r": LORA_R, "lora_alpha": LORA_ALPHA, "targets": list(TARGET_MODULES), "lr": args.lr,
                "head_lr": args.head_lr, "batch_size": args.batch_size, "max_batch_tokens": args.max_batch_tokens,
                "pos_weight": args.pos_weight, "kind_weight": args.kind_weight, "seed": args.seed,
                "total_steps": total, "epochs": args.epochs, "max_turns": args.max_turns,
                "corpus_turns": args.corpus_turns, "real_repeat": args.real_repeat,
                "real_positive_repeat": args.real_positive_repeat, "also": args.also,
                "init": None if init is None else {  # what a continuation started from
                    "run": Path(args.init).name, "steps": init["step"],
                    **{k: init["meta"].get(k) for k in ("examples", "corpus_turns", "real_repeat", "lr", "seed",
                                                        "also")}}}
    model.train()
    recent: list[float] = []
    while step < total:
        batches = make_batches(examples, args.batch_size, args.max_batch_tokens, random.Random(args.seed + epoch))
        while batch_at < len(batches) and step < total:
            batch = [examples[i] for i in batches[batch_at]]
            t, c = time.time(), time.process_time()
            loss, bce, ce, ns, npos = batch_loss(model, heads, batch, args.pos_weight, args.kind_weight)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(lora_params + heads.parameters(), 1.0)
            opt.step()
            sched.step()
            dt, dc = time.time() - t, time.process_time() - c
            step += 1
            batch_at += 1
            loss_value = loss.item()
            recent = ([*recent, loss_value])[-20:]
            tokens = sum(e.n_tokens for e in batch)
            width = max(len(w) for e in batch for w in e.windows)
            log(f"step {step}/{total} ep {epoch} loss {loss_value:.4f} (bce {bce:.4f} ce {ce:.4f}) "
                f"avg20 {np.mean(recent):.4f} {dt:.2f}s/step ({len(batch)}x{width}, {tokens} tok, {ns} spans)",
                step=step, epoch=epoch, loss=round(loss_value, 5), bce=round(bce, 5), ce=round(ce, 5),
                s_step=round(dt, 3), cpu_s=round(dc, 3), batch=len(batch), width=width, tokens=tokens, spans=ns,
                pos=npos,
                lr=sched.get_last_lr()[0])
            if step % args.save_every == 0 or step == total:
                t = time.time()
                save_checkpoint(out, model, heads, opt, sched,
                                {"step": step, "epoch": epoch, "batch_at": batch_at, "meta": run_meta})
                log(f"checkpoint at step {step} ({time.time() - t:.1f}s)")
        if batch_at >= len(batches):
            epoch += 1
            batch_at = 0

    save_adapter(model, out / "adapter")
    arrays = heads.folded()
    meta = {**run_meta, "kinds": list(KINDS), "hidden_size": model.config.hidden_size, "feature_dim": dim,
            "pooling_version": POOLING_VERSION, "features": "span_mean(final_norm_states) ++ message_mean",
            "steps": step, "train_seconds": round(time.time() - t_start, 1)}
    with open(out / "heads.npz", "wb") as handle:
        np.savez(handle, **arrays, meta=np.asarray(json.dumps(meta, sort_keys=True)))
    log(f"done: {step} steps; wrote {out / 'adapter'} and {out / 'heads.npz'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

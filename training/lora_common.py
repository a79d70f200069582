"""Shared parts of the LoRA fine-tuning pipeline (finetune.py, export_lora.py, check_lora.py).

Training-time only: imports torch/transformers/peft (the `train` extra). The runtime
(gitmem/judge) never imports this module.

What is shared, and why it must be the runtime's:
- tokens: the runtime's own tokenizer (llama.cpp, via ``Encoder.tokens`` of gitmem/judge/encoder.py,
  run on a vocab-only load of the same GGUF), so token ids and each token's character range are
  exactly those the writer will see;
- windows: the runtime's windowing of long inputs (``MAX_TOKENS``, later windows restart with BOS);
- pooling: per-span mean over the tokens a span overlaps, BOS excluded (``head.pooled``, taken as a
  pooling matrix so the torch side pools with the very same weights), plus the whole-message mean
  over every row but BOS (``head.raw_features``).
"""

from __future__ import annotations

import json
import os
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitmem.base.files import sha256_file  # noqa: E402,F401  (used by the scripts)
from gitmem.judge.encoder import MAX_TOKENS, Encoder, resolve_model_path  # noqa: E402
from gitmem.judge.head import pooled  # noqa: E402
from gitmem.judge.spans import Span, candidate_spans, is_promotion, model_text  # noqa: E402

# Bump when the spans, the text the model reads, the pooling or the head's inputs change.
POOLING_VERSION = 1
# LoRA on every attention and MLP projection of every layer.
TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
LORA_R = 16
LORA_ALPHA = 32
# Layer prefix of the base model's modules as peft names them under Gemma3ForCausalLM.
HIDDEN_SIZE_KEY = "hidden_size"


def base_model_path(explicit: str | None = None) -> Path:
    return resolve_model_path(None, explicit)


# -- the runtime's tokenizer ---------------------------------------------------------------------


class RuntimeTokenizer:
    """Token ids and character ranges exactly as gitmem.judge.encoder.Encoder computes them."""

    def __init__(self, model_path: Path) -> None:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        from llama_cpp import Llama

        from gitmem.judge.encoder import _quiet_stderr

        with _quiet_stderr():
            llm = Llama(model_path=str(model_path), vocab_only=True, verbose=False)
        self._shim = types.SimpleNamespace(llm=llm)
        self.bos = int(llm.token_bos())

    def tokens(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        return Encoder.tokens(self._shim, text)  # type: ignore[arg-type]


def windows(ids: Sequence[int], bos: int) -> list[list[int]]:
    """The runtime's forward-pass windows (Encoder.states): MAX_TOKENS each, later ones led by BOS."""
    out = []
    for begin in range(0, len(ids), MAX_TOKENS):
        window = list(ids[begin : begin + MAX_TOKENS])
        out.append([bos, *window] if begin else window)
    return out


def pool_matrix(n_rows: int, ranges: Sequence[tuple[int, int]], where: Sequence[tuple[int, int]]) -> np.ndarray:
    """[n_spans, n_rows] weights with ``P @ states == head.pooled(states, ranges, where)``."""
    return pooled(np.eye(n_rows, dtype=np.float32), ranges, where)


def message_weights(n_rows: int) -> np.ndarray:
    """[n_rows] weights of the whole-message mean (head.raw_features: every row but BOS)."""
    w = np.zeros(n_rows, np.float32)
    if n_rows > 1:
        w[1:] = 1.0 / (n_rows - 1)
    elif n_rows == 1:
        w[0] = 1.0
    return w


@dataclass
class Example:
    """One user message prepared for the model: what the runtime would feed it, and labels."""

    key: str  # corpus file:id or real:id (no text: logs and checkpoints never hold texts)
    windows: list[list[int]]
    n_rows: int  # rows of the stitched states (BOS of later windows dropped)
    pool: np.ndarray  # [n_spans, n_rows]
    labels: np.ndarray  # [n_spans] 0/1
    kinds: np.ndarray  # [n_spans] kind index, -1 for negatives
    source: str  # "corpus" | "real"

    @property
    def n_tokens(self) -> int:
        return sum(len(w) for w in self.windows)


def prepare(user: str, items: list[dict], tok: RuntimeTokenizer, key: str, source: str,
            covers: Any, kinds_vocab: Sequence[str]) -> Example | None:
    """Spans as the runtime cuts them (candidate_spans minus promotions, as Judge.score_spans and
    training/train.py do), the model text, tokens/windows and per-span labels via ``covers``."""
    spans: list[Span] = [s for s in candidate_spans(user) if not is_promotion(s.text)]
    if not spans:
        return None
    text, where = model_text(user, spans)
    ids, ranges = tok.tokens(text)
    wins = windows(ids, tok.bos)
    n_rows = len(ids)
    labels = np.zeros(len(spans), np.float32)
    kinds = np.full(len(spans), -1, np.int64)
    for si, span in enumerate(spans):
        hit = next((it for it in items if covers(span.text, span.start, span.end, user, it)), None)
        if hit is not None:
            labels[si] = 1.0
            kinds[si] = kinds_vocab.index(hit["kind"]) if hit.get("kind") in kinds_vocab else -1
    return Example(key, wins, n_rows, pool_matrix(n_rows, ranges, where), labels, kinds, source)


# -- the torch model -----------------------------------------------------------------------------


def load_base_torch(model_path: Path) -> Any:
    """Gemma3ForCausalLM from the shipped GGUF, dequantised to float32 (the tokenizer is not
    needed: tokens come from the runtime's tokenizer). No weights come from anywhere else."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(model_path.parent), gguf_file=model_path.name,
                                                 dtype=torch.float32)
    model.config.architectures = [type(model).__name__]
    return model


def save_base_config(config: Any, folder: Path) -> None:
    """The base model's HF config.json, as llama.cpp's convert_lora_to_gguf.py needs it (--base):
    architecture named, no GGUF quantisation record (the weights it describes are the GGUF's)."""
    import copy

    config = copy.deepcopy(config)
    config.architectures = ["Gemma3ForCausalLM"]  # the converter picks its model class by this name
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    folder.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(str(folder))


def text_model(model: Any) -> Any:
    """The decoder stack without the LM head (works on the plain and the peft-wrapped model)."""
    inner = model
    if hasattr(inner, "get_base_model"):  # peft.PeftModel
        inner = inner.get_base_model()
    return inner.model  # Gemma3ForCausalLM.model: Gemma3TextModel, ends with the final norm


def forward_states(model: Any, batch: Sequence[Example]) -> list[Any]:
    """Final hidden states (after the final norm: Gemma3TextModel.last_hidden_state, what llama.cpp's
    embedding mode returns) of each example, its windows stitched as the runtime does."""
    import torch

    rows = [w for ex in batch for w in ex.windows]
    width = max(len(w) for w in rows)
    ids = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, w in enumerate(rows):  # right padding: causal attention never reads the pads
        ids[i, : len(w)] = torch.tensor(w)
        mask[i, : len(w)] = 1
    hidden = text_model(model)(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state
    out = []
    r = 0
    for ex in batch:
        parts = []
        for k, w in enumerate(ex.windows):
            h = hidden[r, : len(w)]
            parts.append(h[1:] if k else h)
            r += 1
        out.append(torch.cat(parts, dim=0))
    return out


def features_torch(states: Any, ex: Example) -> Any:
    """[n_spans, 2*dim]: span means, then the message mean (head.raw_features without lexical cues)."""
    import torch

    pool = torch.from_numpy(ex.pool)
    msg = torch.from_numpy(message_weights(ex.n_rows)) @ states
    return torch.cat([pool @ states, msg.unsqueeze(0).expand(pool.shape[0], -1)], dim=1)


def features_numpy(states: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """The same features from llama.cpp's states (no torch): what the runtime would compute."""
    msg = message_weights(len(states)) @ states
    return np.concatenate([pool @ states, np.repeat(msg[None, :], len(pool), axis=0)], axis=1).astype(np.float32)


# -- the exported heads (.npz, read with numpy alone) --------------------------------------------


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def load_heads_npz(path: Path) -> tuple[dict[str, np.ndarray], dict]:
    data = np.load(path, allow_pickle=False)
    return {k: data[k] for k in data.files if k != "meta"}, json.loads(str(data["meta"]))


def score_numpy(heads: dict[str, np.ndarray], x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(standing) per span and kind probabilities, from the exported arrays."""
    p = sigmoid(x @ heads["w"] + heads["b"])
    return p, softmax(x @ heads["wk"] + heads["bk"])

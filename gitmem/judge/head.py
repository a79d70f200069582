"""Features of candidate spans and the small trained head that scores them.

Per span: the mean of the encoder's hidden states over the span's tokens (one causal
pass over the message's prose, so each span is read in its left context), the mean over
the whole message (what kind of message it sits in: a bug report, a plan for the current
task, an aside in a request), and lexical cues from gitmem/judge/data/cues.json (scope words such as
"from now on" versus "for this one", questions, pasted context, ...).
The head is two logistic regressions over the standardised features: one says whether
the span is a standing constraint, the other which kind. Its weights, the threshold and
the digest of the cue file it was trained with live in gitmem/judge/data/head.npz, written by
training/train.py.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gitmem.base.files import sha256_file
from gitmem.errors import GitmemError
from gitmem.judge.shipped import DATA_DIR  # package data: the trained head and its cues
from gitmem.judge.spans import Span, all_spans, model_text
from gitmem.store.entry import KINDS

HEAD_FILE = "head.npz"
CUES_FILE = "cues.json"
FEATURE_VERSION = 3


class HeadError(GitmemError):
    """The trained head is missing or was trained with other features."""


# -- lexical cues ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cues:
    groups: tuple[tuple[str, tuple[re.Pattern[str], ...]], ...]
    digest: str
    veto: tuple[re.Pattern[str], ...] = ()
    explicit_markers: tuple[re.Pattern[str], ...] = ()
    explicit_bonus: float = 0.0

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.groups]

    def explicit(self, text: str) -> bool:
        """Words that say outright that a statement is standing ("from now on", "new rule:")."""
        return any(p.search(text) for p in self.explicit_markers)

    def vetoed(self, text: str) -> bool:
        """A question, hypothetical or task-scoped instruction: never a standing constraint."""
        return any(p.search(text) for p in self.veto)

    def hits(self, text: str) -> list[float]:
        return [1.0 if any(p.search(text) for p in patterns) else 0.0 for _, patterns in self.groups]


@functools.cache
def load_cues(path: Path | None = None) -> Cues:
    path = path or DATA_DIR / CUES_FILE
    raw = path.read_bytes()
    data = json.loads(raw)
    groups = tuple(
        (name, tuple(re.compile(p, re.IGNORECASE) for p in patterns))
        for name, patterns in data.items()
        if not name.startswith("_")
    )
    veto = tuple(re.compile(p, re.IGNORECASE) for p in data.get("_veto", ()))
    explicit = tuple(re.compile(p, re.IGNORECASE) for p in data.get("_explicit", ()))
    return Cues(groups, hashlib.sha1(raw).hexdigest()[:16], veto, explicit, float(data.get("_explicit_bonus", 0.0)))


def adjusted(message: str, span: Span, p: float, cues: Cues | None = None) -> float:
    """The head's score after the deterministic rules: 0 when vetoed, raised by explicit words."""
    cues = cues or load_cues()
    if vetoed(message, span, cues):
        return 0.0
    quoted = quoted_ranges(message)
    for pattern in cues.explicit_markers:
        for m in pattern.finditer(span.text):
            at = span.start + m.start()
            if not any(s <= at < e for s, e in quoted):  # the person's own words, not a quotation
                return min(1.0, p + cues.explicit_bonus)
    return p


_QUOTED = re.compile(r"[\"“]([^\"“”]{8,})[\"”]")
_INTRO = re.compile(r":\s*$")


# 'single quotes' open after a space or colon and close before a space or punctuation, so
# apostrophes ("don't") neither open nor close them.
_SINGLE_QUOTED = re.compile(r"(?:^|(?<=[\s:(]))[‘']((?:[^'‘’\n]|['’](?=[a-z]))+)['’](?=$|[\s.,;:!?)—-])")
_QUOTE_OPENS = re.compile(r":\s*[\"“'‘]")


def quoted_ranges(message: str) -> list[tuple[int, int]]:
    ranges = [(m.start(1), m.end(1)) for m in _QUOTED.finditer(message)]
    ranges += [(m.start(1), m.end(1)) for m in _SINGLE_QUOTED.finditer(message) if len(m.group(1)) >= 8]
    return ranges


def in_quotes(span: Span, quoted: Sequence[tuple[int, int]]) -> bool:
    """The span is (mostly) a quotation: someone else's words, not the person's own rule."""
    inside = sum(max(0, min(e, span.end) - max(s, span.start)) for s, e in quoted)
    if inside >= 0.5 * (span.end - span.start):
        return True
    opens = _QUOTE_OPENS.search(span.text)  # 'Ticket 219: "Going forward all services ...'
    return opens is not None and opens.end() < len(span.text) / 2


def vetoed(message: str, span: Span, cues: Cues | None = None) -> bool:
    """Never a standing constraint, whatever the head says: a question, a hypothetical, an
    instruction scoped to the current task (cues.json ``_veto``), or a quotation."""
    cues = cues or load_cues()
    return cues.vetoed(span.text) or in_quotes(span, quoted_ranges(message))


# The span-shape columns of `lexical`, in order (the trained heads' column layout).
SHAPE_FEATURES = ("quoted", "after_intro", "message_has_paste", "log_words", "first", "last", "position",
                  "log_spans", "question", "lowercase_start", "length_share")


def lexical(message: str, spans: Sequence[Span], cues: Cues) -> np.ndarray:
    """Lexical feature rows, one per span: cue hits in the span and around it, shape, position."""
    everything = all_spans(message)
    quoted = quoted_ranges(message)
    pasted_any = any(s.pasted for s in everything)
    n = len(spans)
    rows = []
    span_hits = [cues.hits(s.text) for s in spans]
    for i, span in enumerate(spans):
        own = span_hits[i]
        others = [0.0] * len(own)
        for j, h in enumerate(span_hits):
            if j != i:
                others = [max(a, b) for a, b in zip(others, h, strict=False)]
        prev = spans[i - 1].text if i else ""
        prev_line_intro = bool(_INTRO.search(prev)) or bool(
            re.search(r":\s*$", message[: span.start].rstrip(" \t").split("\n")[-1]
                      if "\n" in message[: span.start] else "")
        )
        quote = in_quotes(span, quoted)
        words = len(re.findall(r"\w+", span.text))
        shape = {
            "quoted": 1.0 if quote else 0.0,
            "after_intro": 1.0 if prev_line_intro else 0.0,
            "message_has_paste": 1.0 if pasted_any else 0.0,
            "log_words": math.log1p(words) / 4.0,
            "first": 1.0 if i == 0 else 0.0,
            "last": 1.0 if i == n - 1 else 0.0,
            "position": (i / (n - 1)) if n > 1 else 0.0,
            "log_spans": math.log1p(n) / 3.0,
            "question": 1.0 if span.text.rstrip().endswith("?") else 0.0,
            "lowercase_start": 1.0 if span.text[:1].islower() else 0.0,
            "length_share": len(span.text) / max(1, len(message)),
        }
        rows.append(own + others + [shape[name] for name in SHAPE_FEATURES])
    return np.asarray(rows, dtype=np.float32).reshape(n, -1)


# -- hidden-state pooling ----------------------------------------------------------------------


def lexical_width(cues: Cues) -> int:
    """Columns of `lexical`: cue hits in the span and in the other spans, then the shape features."""
    return 2 * len(cues.groups) + len(SHAPE_FEATURES)


def pooled(states: np.ndarray, ranges: Sequence[tuple[int, int]], where: Sequence[tuple[int, int]],
           lone_bos: bool = True) -> np.ndarray:
    """Per span, the mean of the hidden states of the tokens it overlaps, BOS (row 0) excluded;
    `lone_bos`: kept when it is the only token a span overlaps (the writer's heads were trained so)."""
    dim = states.shape[1]
    starts = np.asarray([r[0] for r in ranges])
    ends = np.asarray([r[1] for r in ranges])
    rows = []
    for s, e in where:
        idx = np.nonzero((starts < e) & (ends > s))[0]
        idx = idx[idx > 0] if len(idx) > 1 or not lone_bos else idx
        rows.append(states[idx].mean(axis=0) if len(idx) else np.zeros(dim, np.float32))
    return np.asarray(rows, dtype=np.float32).reshape(len(where), dim)


Ranges = list[tuple[int, int]]


def encode(encoder: Any, message: str, spans: Sequence[Span]) -> tuple[np.ndarray, Ranges, Ranges]:
    """One forward pass over the message's prose; returns states, token ranges, span ranges."""
    text, where = model_text(message, list(spans))
    states, ranges = encoder.encode(text)
    return np.asarray(states, dtype=np.float32), ranges, where


def raw_features(states: np.ndarray, ranges: Sequence[tuple[int, int]], where: Sequence[tuple[int, int]],
                 message: str, spans: Sequence[Span], cues: Cues) -> np.ndarray:
    whole = states[1:] if len(states) > 1 else states  # row 0 is BOS
    context = np.repeat(whole.mean(axis=0, keepdims=True), len(where), axis=0)
    return np.concatenate([pooled(states, ranges, where), context, lexical(message, spans, cues)], axis=1)


# -- the head ----------------------------------------------------------------------------------


def _sigmoid(z: np.ndarray) -> np.ndarray:
    out: np.ndarray = 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))
    return out


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    out: np.ndarray = e / e.sum(axis=1, keepdims=True)
    return out


@dataclass(slots=True)
class Head:
    mu: np.ndarray
    sd: np.ndarray
    w: np.ndarray  # standing-vs-not weights [d]
    b: float
    wk: np.ndarray  # kind weights [d, len(kinds)]
    bk: np.ndarray
    kinds: tuple[str, ...]
    threshold: float
    cue_digest: str
    # A second standing-vs-not regression over the lexical columns only (from column
    # ``lex_from``); the score is the mean of both, which generalises better than either.
    w_lex: np.ndarray | None = None
    b_lex: float = 0.0
    lex_from: int = 0
    mix: float = 1.0  # weight of the full regression in the score
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path | None = None) -> Head:
        path = path or DATA_DIR / HEAD_FILE
        try:
            data = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise HeadError(f"the writer's head is missing or unreadable ({path}): run training/train.py") from exc
        meta = json.loads(str(data["meta"]))
        if meta.get("feature_version") != FEATURE_VERSION:
            raise HeadError(f"{path} was trained for other features: run training/train.py")
        head = cls(
            mu=data["mu"], sd=data["sd"], w=data["w"], b=float(data["b"]), wk=data["wk"], bk=data["bk"],
            kinds=tuple(meta["kinds"]), threshold=float(meta["threshold"]), cue_digest=meta["cue_digest"],
            w_lex=data["w_lex"] if "w_lex" in data.files else None,
            b_lex=float(meta.get("b_lex", 0.0)), lex_from=int(meta.get("lex_from", 0)), mix=float(meta.get("mix", 1.0)),
            meta=meta,
        )
        if head.cue_digest != load_cues().digest:
            raise HeadError("gitmem/judge/data/cues.json changed since the head was trained: run training/train.py")
        if any(k not in KINDS for k in head.kinds):
            raise HeadError(f"{path} names kinds outside the vocabulary")
        return head

    def verify(self, model_path: Path, model_sha256: str) -> None:
        """Raise HeadError unless the head was trained on this model file's states."""
        want = self.meta.get("encoder_sha256")
        if want != model_sha256:
            trained_for = (f"{self.meta.get('encoder_file')} (sha256 {str(want)[:12]}…)" if want
                           else "an unrecorded model")
            raise HeadError(f"the writer's head was trained for {trained_for}, not {model_path.name} (sha256 "
                            f"{model_sha256[:12]}…): configure that model (writer.model) or run training/train.py")

    def save(self, path: Path, meta_extra: dict[str, Any] | None = None) -> None:
        meta = {"feature_version": FEATURE_VERSION, "kinds": list(self.kinds), "threshold": self.threshold,
                "cue_digest": self.cue_digest, "b_lex": self.b_lex, "lex_from": self.lex_from, "mix": self.mix,
                **(meta_extra or {})}
        arrays: dict[str, Any] = {
            "mu": self.mu.astype(np.float32), "sd": self.sd.astype(np.float32), "w": self.w.astype(np.float32),
            "b": np.float32(self.b), "wk": self.wk.astype(np.float32), "bk": self.bk.astype(np.float32),
            "meta": np.asarray(json.dumps(meta, sort_keys=True)),
        }
        if self.w_lex is not None:
            arrays["w_lex"] = self.w_lex.astype(np.float32)
        with open(path, "wb") as handle:
            np.savez_compressed(handle, **arrays)

    def features(self, encoder: Any, message: str, spans: Sequence[Span]) -> np.ndarray:
        states, ranges, where = encode(encoder, message, spans)
        return raw_features(states, ranges, where, message, spans, load_cues())

    def standing(self, x: np.ndarray) -> np.ndarray:
        z = (x - self.mu) / self.sd
        p = _sigmoid(z @ self.w + self.b)
        if self.w_lex is not None and self.mix < 1.0:
            p = self.mix * p + (1.0 - self.mix) * _sigmoid(z[:, self.lex_from :] @ self.w_lex + self.b_lex)
        return p

    def kind_probs(self, x: np.ndarray) -> np.ndarray:
        z = (x - self.mu) / self.sd
        return _softmax(z @ self.wk + self.bk)

    def predict(self, x: np.ndarray) -> tuple[np.ndarray, list[str]]:
        if len(x) == 0:
            return np.zeros(0), []
        probs = self.standing(x)
        kinds = [self.kinds[i] for i in self.kind_probs(x).argmax(axis=1)]
        return probs, kinds


# -- the fine-tuned judge ----------------------------------------------------------------------

TUNED_HEAD_FILE = "writer-head.npz"
ADAPTER_FILE = "writer-lora.gguf"


@dataclass(slots=True)
class TunedHead:
    """The fine-tuned judge's linear heads, read over the adapted encoder's states.

    training/finetune.py trains a LoRA adapter of the base model together with these heads:
    standing-vs-not and kind, over [mean of the span's states ; mean of the message's states]
    (the standardisation is folded into the weights). They only hold for the encoder they were
    trained with, so `verify` checks the base model's and the adapter's checksums.
    """

    w: np.ndarray
    b: float
    wk: np.ndarray
    bk: np.ndarray
    kinds: tuple[str, ...]
    threshold: float
    meta: dict[str, Any]
    folder: Path = DATA_DIR  # where the adapter lies

    @classmethod
    def load(cls, path: Path | None = None) -> TunedHead | None:
        """The shipped fine-tuned heads; None when this installation has none."""
        path = path or DATA_DIR / TUNED_HEAD_FILE
        if not path.is_file():
            return None
        try:
            data = np.load(path, allow_pickle=False)
            meta = json.loads(str(data["meta"]))
            head = cls(w=data["w"], b=float(data["b"]), wk=data["wk"], bk=data["bk"],
                       kinds=tuple(meta["kinds"]), threshold=float(meta["threshold"]), meta=meta,
                       folder=path.parent)
        except (OSError, ValueError, KeyError) as exc:
            raise HeadError(f"the writer's fine-tuned head is unreadable ({path}): run make train") from exc
        if any(k not in KINDS for k in head.kinds):
            raise HeadError(f"{path} names kinds outside the vocabulary")
        if head.w.shape != (int(meta.get("feature_dim", 0)),) or head.wk.shape[1] != len(head.kinds):
            raise HeadError(f"{path}: weights do not match their metadata: run make train")
        return head

    @property
    def adapter(self) -> Path:
        return self.folder / str(self.meta.get("adapter_file") or ADAPTER_FILE)

    def verify(self, model_path: Path, model_sha256: str) -> None:
        """Raise HeadError unless the heads and the adapter were trained for this model file."""
        want = self.meta.get("base_sha256")
        if want != model_sha256:
            raise HeadError(
                f"the writer's fine-tuned judge was trained for {self.meta.get('base_file')} "
                f"(sha256 {str(want)[:12]}…), not {model_path.name} (sha256 {model_sha256[:12]}…): "
                "configure that model (writer.model) or retrain with `make train`")
        adapter = self.adapter
        try:
            digest = sha256_file(adapter)
        except OSError as exc:
            raise HeadError(f"the writer's adapter is missing ({adapter}): reinstall gitmem or run make train") from exc
        if digest != self.meta.get("adapter_sha256"):
            raise HeadError(f"{adapter} is not the adapter its heads were trained with: run make train")

    def features(self, encoder: Any, message: str, spans: Sequence[Span]) -> np.ndarray:
        states, ranges, where = encode(encoder, message, spans)
        whole = states[1:] if len(states) > 1 else states  # row 0 is BOS
        context = np.repeat(whole.mean(axis=0, keepdims=True), len(where), axis=0)
        return np.concatenate([pooled(states, ranges, where), context], axis=1)

    def predict(self, x: np.ndarray) -> tuple[np.ndarray, list[str]]:
        if len(x) == 0:
            return np.zeros(0), []
        probs = _sigmoid(x @ self.w + self.b)
        kinds = [self.kinds[i] for i in (x @ self.wk + self.bk).argmax(axis=1)]
        return probs, kinds

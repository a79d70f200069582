"""The gate's learned detector: does this text address an AI to override, escalate or exfiltrate?

It reads meaning, not keywords, so it works across languages and scripts: the canonical text
(gitmem.judge.normalise) goes through the judge's model (Gemma 3 270M as an encoder,
gitmem.judge.encoder) with the gate's own fine-tuned LoRA adapter, the per-token hidden states
are mean-pooled over the whole text and over each sentence of it, and a logistic head scores
each pool; the text's score is the highest (an attack behind a harmless rule is not averaged
away). The adapter shares the loaded model with the judge's (one model in memory).

The head lives in gitmem/judge/data/gate.npz and the adapter beside it (gate-lora.gguf), both
written by training/gate/finetune_gate.py, with the SHA-256 of the encoder file and of the
adapter they were trained for; loading refuses any other (DetectorError), because the head's
weights mean nothing on another model's states. The detector always uses the embedded default
model (not ``writer.model``), so a repository's config cannot swap the model the gate depends on.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gitmem.errors import DetectorError
from gitmem.judge.head import pooled
from gitmem.judge.shipped import GATE_HEAD
from gitmem.judge.structure import MAX_CANONICAL

DATA = GATE_HEAD
ADAPTER_FILE = "gate-lora.gguf"  # the detector's fine-tuned adapter of the encoder, beside DATA
FEATURE_VERSION = 1
MAX_CHARS = MAX_CANONICAL  # longer texts are cut (the gate refuses a text longer than this once normalised)

# Sentence ends in Latin, CJK, Devanagari, Arabic and Greek scripts, and line breaks.
_SENTENCE_END = re.compile(r"(?<=[.!?;:。！？；।؟])\s+|(?<=[。！？；])|\s*\n+\s*|\s+(?=<)|(?<=>)\s+")


def segments(text: str) -> list[tuple[int, int]]:
    """[start, end) of each sentence-like piece of `text` (three words or six characters at least)."""
    out: list[tuple[int, int]] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        if match.start() > start:
            out.append((start, match.start()))
        start = match.end()
    if start < len(text):
        out.append((start, len(text)))
    return [(s, e) for s, e in out if len(text[s:e].split()) >= 3 or len(text[s:e].strip()) >= 6]


def features(states: Any, ranges: Sequence[tuple[int, int]], text: str) -> np.ndarray:
    """Rows to score: the whole text first, then each of its sentences when it has several."""
    where = [(0, len(text))]
    parts = segments(text)
    if len(parts) > 1:
        where += parts
    return pooled(np.asarray(states, dtype=np.float32), ranges, where, lone_bos=False)


def model_input(canonical_text: str) -> str:
    """What the encoder reads: the canonical text, cut to MAX_CHARS, and lower-cased when it is
    shouted (mostly capitals): capitals tokenize into other pieces, and shouting is not meaning."""
    from gitmem.judge.structure import code_spans

    text = canonical_text[:MAX_CHARS]
    for start, end in reversed(code_spans(text)):  # quoted markup is a reference to code, not prose
        if "<" in text[start:end] or ">" in text[start:end]:
            text = text[:start] + "`code`" + text[end:]
    letters = [ch for ch in text if ch.isalpha() and ch.lower() != ch.upper()]
    if letters and sum(ch.isupper() for ch in letters) > 0.6 * len(letters):
        text = text.lower()
    return text


def _sigmoid(z: np.ndarray) -> np.ndarray:
    out: np.ndarray = 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))
    return out


@dataclass(slots=True)
class Detector:
    mu: np.ndarray
    sd: np.ndarray
    w: np.ndarray
    b: float
    threshold: float
    encoder_sha256: str
    meta: dict[str, Any]
    digest: str = ""  # of the head file: cached scores are only reused for the same head

    @classmethod
    def load(cls, path: Path | None = None) -> Detector:
        path = path or DATA
        try:
            raw = path.read_bytes()
            data = np.load(io.BytesIO(raw), allow_pickle=False)
            meta = json.loads(str(data["meta"]))
        except (OSError, ValueError, KeyError) as exc:
            raise DetectorError(f"the gate's detector is missing or unreadable ({path}): "
                                "run training/gate/finetune_gate.py") from exc
        if meta.get("feature_version") != FEATURE_VERSION:
            raise DetectorError(f"{path} was trained for other features: run training/gate/finetune_gate.py")
        return cls(mu=data["mu"], sd=data["sd"], w=data["w"], b=float(data["b"]), threshold=float(meta["threshold"]),
                   encoder_sha256=str(meta["encoder_sha256"]), meta=meta, digest=hashlib.sha256(raw).hexdigest()[:16])

    def save(self, path: Path) -> None:
        meta = {**self.meta, "feature_version": FEATURE_VERSION, "threshold": self.threshold,
                "encoder_sha256": self.encoder_sha256}
        with open(path, "wb") as handle:
            np.savez_compressed(handle, mu=self.mu.astype(np.float32), sd=self.sd.astype(np.float32),
                                w=self.w.astype(np.float32), b=np.float32(self.b),
                                meta=np.asarray(json.dumps(meta, sort_keys=True)))

    def adapter(self) -> Path | None:
        """The fine-tuned adapter the head was trained with (None: the frozen encoder); DetectorError
        when it is missing or is not the file the head was trained with."""
        name = self.meta.get("adapter_file")
        if not name:
            return None
        from gitmem.base.files import sha256_file

        path = DATA.parent / str(name)
        try:
            digest = sha256_file(path)
        except OSError:
            raise DetectorError(f"the gate's adapter is missing ({path}): reinstall gitmem or run "
                                "training/gate/finetune_gate.py") from None
        if digest != self.meta.get("adapter_sha256"):
            raise DetectorError(f"{path} is not the adapter the gate's head was trained with: "
                                "run training/gate/finetune_gate.py")
        return path

    def scores(self, x: np.ndarray) -> np.ndarray:
        z = (np.asarray(x, np.float64) - self.mu) / self.sd
        return _sigmoid(z @ self.w + self.b)

    def score_states(self, states: Any, ranges: Sequence[tuple[int, int]], text: str) -> float:
        return float(self.scores(features(states, ranges, text)).max())


# -- the encoder the head was trained for ----------------------------------------------------------

class Scorer:
    """The detector with its encoder: score(text) -> P(attack) for canonical text."""

    def __init__(self, detector: Detector, encoder: Any) -> None:
        self.detector = detector
        self.encoder = encoder

    @property
    def threshold(self) -> float:
        return self.detector.threshold

    def score(self, canonical_text: str) -> float:
        text = model_input(canonical_text)
        if not text.strip():
            return 0.0
        states, ranges = self.encoder.encode(text)
        return self.detector.score_states(states, ranges, text)


_HEAD: Detector | None = None
_SCORER: Scorer | None = None


def head() -> Detector:
    """The shipped head alone, loaded once per process (cheap: no model); cached scores are keyed
    on its digest, so a store whose scores are all cached is judged without loading the encoder."""
    global _HEAD
    if _HEAD is None:
        _HEAD = Detector.load()
    return _HEAD


def reset() -> None:
    """Forget the loaded head and encoder (training/gate/finetune_gate.py has just rewritten them)."""
    global _HEAD, _SCORER
    _HEAD = _SCORER = None


def scorer() -> Scorer:
    """The detector and the embedded encoder, loaded once per process; DetectorError when either
    is unavailable or they do not belong together."""
    global _SCORER
    if _SCORER is None:
        from gitmem.judge.encoder import ModelError, default_model_path, load_encoder, model_sha256

        detector = head()
        try:
            path = default_model_path()
        except ModelError as exc:
            raise DetectorError(f"the gate's encoder is unavailable: {exc}") from None
        found = model_sha256(path)
        if found != detector.encoder_sha256:
            raise DetectorError(f"the gate's detector was trained for encoder {detector.encoder_sha256[:12]}, "
                                f"but {path} is {found[:12]}: run training/gate/finetune_gate.py")
        adapter = detector.adapter()
        try:
            encoder = load_encoder(path, adapter)
        except ModelError as exc:
            raise DetectorError(f"the gate's encoder is unavailable: {exc}") from None
        _SCORER = Scorer(detector, encoder)
    return _SCORER

"""The writer's judgement: which spans of a completed turn are standing constraints.

The model (Gemma 3 270M, a base model) is used as an encoder, never as a generator:
candidate spans are cut from the user's message (gitmem.judge.spans), encoded in one forward
pass, and scored by a small numpy head trained from training/corpus (training/train.py).
Bodies are always copied spans. Anchoring, consolidation against stored entries and
the deterministic checks live in gitmem.judge.validate and need no model.

The safety gate (instruction-override patterns, invisible Unicode) is the caller's job.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.base.paths import RepoPaths
from gitmem.judge.types import Candidate, Packet
from gitmem.store.entry import Entry

if TYPE_CHECKING:
    from gitmem.judge.encoder import Encoder
    from gitmem.judge.head import Head, TunedHead


class Judge:
    """Holds the encoder and the head; one instance per process, reused for every turn."""

    def __init__(self, repo: RepoPaths, model_path: str | None = None, tuned_head: Path | None = None) -> None:
        """`tuned_head`: another fine-tuned head file (training tools; its adapter lies beside it)."""
        self.repo = repo
        self._model_path = model_path
        self._tuned_head = tuned_head
        self._encoder: Encoder | None = None
        self._head: Head | TunedHead | None = None

    # -- lazily loaded parts ---------------------------------------------------------------

    @property
    def head(self) -> Head | TunedHead:
        """The fine-tuned heads when this installation ships them, else the frozen-encoder head."""
        if self._head is None:
            from gitmem.judge.head import Head, TunedHead

            self._head = TunedHead.load(self._tuned_head) or Head.load()
        return self._head

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            from gitmem.judge.encoder import load_encoder, model_sha256, resolve_model_path
            from gitmem.judge.head import TunedHead

            path = resolve_model_path(self.repo, self._model_path)
            head = self.head
            head.verify(path, model_sha256(path))  # a head's weights hold only for the states it was trained on
            self._encoder = load_encoder(path, head.adapter if isinstance(head, TunedHead) else None)
        return self._encoder

    def load(self) -> Judge:
        """Load model and head now (the daemon does this once at start)."""
        self.head, self.encoder  # noqa: B018 - properties load on access
        return self

    # -- judgement -------------------------------------------------------------------------

    def score_spans(self, packet: Packet) -> list[tuple[Any, float, str]]:
        """Every candidate span of the user's message with P(standing) and its best kind.

        Spans that promote the agent's proposal ("make that the rule") score 0 here; judge()
        handles them. Vetoed spans (questions, hypotheticals, task-scoped) score 0 too.
        """
        from gitmem.judge.head import adjusted, load_cues
        from gitmem.judge.spans import candidate_spans, is_promotion

        spans = candidate_spans(packet.user)
        plain = [s for s in spans if not is_promotion(s.text)]
        scores: dict[int, tuple[float, str]] = {}
        if plain:
            features = self.head.features(self.encoder, packet.user, plain)
            probs, kinds = self.head.predict(features)
            cues = load_cues()
            scores = {s.start: (adjusted(packet.user, s, float(p), cues), k)
                      for s, p, k in zip(plain, probs, kinds, strict=False)}
        return [(s, *scores.get(s.start, (0.0, "law"))) for s in spans]

    def judge(self, packet: Packet, stored: Sequence[Entry]) -> list[Candidate]:
        """Validated candidates for one completed turn; [] when it carries nothing standing."""
        from gitmem.judge import bodies

        if bodies.not_typed(packet.user):
            return []  # an approved plan or pasted hand-off: not the developer's own words
        return self.decide(packet, self.score_spans(packet), stored, self.head.threshold)

    def decide(self, packet: Packet, scored: list[tuple[Any, float, str]], stored: Sequence[Entry],
               threshold: float) -> list[Candidate]:
        """The entries a turn's scored spans make at `threshold` (training/eval.py chooses the
        shipped threshold by replaying this on scores it computed once)."""
        from gitmem.judge import bodies, validate
        from gitmem.judge.spans import continues, is_promotion

        before: dict[int, Any] = {scored[i][0].start: scored[i - 1][0] for i in range(1, len(scored))}
        raw: list[tuple[str, str, str, float]] = []  # (kind, source, body, score)
        promoted = False
        run: list[tuple[Any, float, str]] = []  # consecutive standing spans of one statement

        def flush() -> None:
            if run:
                best = max(run, key=lambda r: r[1])
                first = run[0][0]
                prior = before.get(first.start)
                if prior is not None and bodies.needs_referent(first.text) \
                        and not packet.user[prior.end : first.start].count("\n") > 1:
                    first = prior  # "Don't use it in anything new": the sentence naming "it" joins
                    if raw and raw[-1][2] == packet.user[prior.start : prior.end].strip():
                        # the sentence naming "it" was an entry of its own: one statement, one entry
                        kind, _, _, score = raw.pop()
                        best = max(best, (prior, score, kind), key=lambda r: r[1])
                body = packet.user[first.start : run[-1][0].end]
                raw.append((best[2], "user", body, best[1]))
                run.clear()

        previous: tuple[Any, float, str] | None = None
        for span, p, kind in scored:
            if is_promotion(span.text):
                if previous is not None and own_statement(packet.user, previous[0], previous[1], span):
                    # "Queue a job instead. That's our rule from now on.": the rule is the
                    # user's own sentence before it, made explicit; the marker joins its body.
                    if not run or run[-1][0] is not previous[0]:
                        flush()
                        run.append((previous[0], max(previous[1], threshold), previous[2]))
                    run.append((span, run[-1][1], run[-1][2]))
                else:
                    promoted = True  # "make that the rule": the rule is in the agent's words
                    flush()
                previous = None
                continue
            previous = (span, p, kind)
            if p < threshold:
                flush()
                continue
            if run and not continues(packet.user, run[-1][0], span):
                flush()
            run.append((span, p, kind))
        flush()
        if promoted and packet.assistant.strip():
            chosen = validate.pick_promoted(packet.assistant)
            if chosen is not None:
                features = self.head.features(self.encoder, packet.assistant, [chosen])
                probs, kinds = self.head.predict(features)
                raw.append((kinds[0], "agent", chosen.text, max(float(probs[0]), threshold)))
        return validate.finalize(self.repo, packet, raw, list(stored))


def own_statement(message: str, before: Any, score: float, marker: Any) -> bool:
    """Whether a promotion marker ("that's the rule from now on") right after `before` refers to
    that sentence of the user's rather than to the agent's proposal: `before` is adjacent, says
    something (four words or more), and is not a question or task-scoped (vetoed spans score 0)."""
    gap = message[before.end : marker.start]
    return not gap.strip() and gap.count("\n") <= 1 and score > 0 and len(re.findall(r"\w+", before.text)) >= 4

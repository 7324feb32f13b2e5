"""Speculative decoding's acceptance: how many draft tokens a step keeps, from a rate given
on the command line or from a model family's published mean accepted length."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

# Published mean accepted length (tokens a decode step emits, the verified one included)
# with 1, 2, 3, ... draft tokens, by model family. A deeper chain than published is taken
# to accept no more than the deepest published one.
PUBLISHED_ACCEPTANCE = {
    "deepseek": (
        (1.92, 2.58, 2.82, 2.99, 3.01),
        "TensorRT-LLM's DeepSeek-R1 B200 min-latency blog (blog1, 'Autoregressive MTP "
        "Layers'): 1.92, 2.58, 2.82, 2.99, 3.01 tokens per step with 1-5 MTP layers",
    ),
}


@dataclass(frozen=True)
class Acceptance:
    """How many draft tokens a step keeps: one chance per draft token (a chain: draft k
    counts only when drafts 1..k-1 did), constant or per position."""

    rate: float | None  # the same chance for every draft (given on the command line)
    rates: tuple[float, ...]  # per draft position (from a published accepted length)
    source: str


def chain_rates(lengths: tuple[float, ...], nextn: int) -> tuple[float, ...]:
    """Per-draft chances whose chain gives the published mean accepted length at every
    depth up to `nextn` (chance that drafts 1..k all hold = length(k) - length(k-1))."""
    held = [1.0] + [max(0.0, b - a) for a, b in itertools.pairwise((1.0, *lengths))]
    held += [0.0] * max(0, nextn + 1 - len(held))
    return tuple(
        min(1.0, held[k] / held[k - 1]) if held[k - 1] > 0 else 0.0 for k in range(1, nextn + 1)
    )


def published_acceptance(model: str, nextn: int) -> Acceptance | None:
    """The acceptance `model`'s family published, per draft position up to `nextn`."""
    lowered = model.lower()
    for family, (lengths, source) in PUBLISHED_ACCEPTANCE.items():
        if family in lowered:
            return Acceptance(None, chain_rates(lengths, nextn), source)
    return None

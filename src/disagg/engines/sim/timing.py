"""The simulated engine's timing model: how long a forward pass takes, as pure functions.

Prefill costs a base plus a per-token cost per chunk; a decode step a base (reading the
weights) plus a per-sequence and a per-cached-token share, so larger batches give more
tokens per GPU but fewer per user. Tensor parallel size N divides compute by
N**tp_efficiency; a decode batch is padded up to the next CUDA-graph size (eager, slower,
above the largest); speculative decoding makes a step dearer and emits 1 + accepted drafts.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Sequence

from disagg.engines.sim.args import EngineArgs

# SGLang's default capture list tops out around 160-256 on large GPUs.
DEFAULT_CUDA_GRAPH_MAX_BS = 256


class TimingModel:
    """Durations in seconds for one worker, derived from its engine args."""

    def __init__(self, args: EngineArgs) -> None:
        self.args = args
        sim = args.sim
        self.speedup = float(float(args.tp_size) ** sim.tp_efficiency)
        # DP attention (or plain DP replicas) splits the per-sequence attention work.
        self.attn_split = max(1, args.dp_size)
        graphs = sorted(set(args.cuda_graph_bs))
        max_bs = args.cuda_graph_max_bs or (graphs[-1] if graphs else DEFAULT_CUDA_GRAPH_MAX_BS)
        self.graph_sizes = [bs for bs in graphs if bs <= max_bs]
        self.graph_max_bs = max_bs
        steps = args.speculative_num_steps if args.speculative else 0
        self.draft_steps = steps
        self.step_factor = 1.0 + sim.draft_step_cost * steps
        self.kv_capacity: int | None = None  # KV tokens the worker holds; None: no limit
        self.kv_transfer_us_per_token = sim.kv_transfer_us_per_token
        # Pipeline stages that overlap prefill passes (the made-up curve has none).
        self.prefill_stages = 1
        self.request_s = 0.0  # the API server's host time per request (the curve has none)

    @property
    def accept_rate(self) -> float:
        return self.args.sim.accept_rate

    def prefill_batch_time(self, chunks: Sequence[tuple[int, int]]) -> float:
        """One prefill pass over (tokens this pass, tokens already prefilled) per request."""
        return self.prefill_time(sum(take for take, _ in chunks))

    def prefill_time(self, tokens: int) -> float:
        """One prefill forward pass over `tokens` prompt tokens (one chunk)."""
        sim = self.args.sim
        us = sim.prefill_us_per_token * tokens / self.speedup
        return (sim.prefill_base_ms * 1e-3) + us * 1e-6

    def padded_batch(self, batch: int) -> int:
        """CUDA graphs run at captured sizes: a batch of 5 with graphs [1, 2, 4, 8] costs 8."""
        if not self.graph_sizes or batch > self.graph_max_bs:
            return batch
        i = bisect.bisect_left(self.graph_sizes, batch)
        return self.graph_sizes[i] if i < len(self.graph_sizes) else batch

    def decode_step_time(self, batch: int, kv_tokens: int) -> float:
        """One decode step for `batch` running sequences holding `kv_tokens` cached tokens."""
        if batch <= 0:
            return 0.0
        sim = self.args.sim
        seqs = self.padded_batch(batch) / self.attn_split
        kv = kv_tokens / self.attn_split
        ms = (
            sim.decode_base_ms
            + sim.decode_ms_per_seq * seqs
            + sim.decode_us_per_kv_token * kv * 1e-3
        )
        ms = ms / self.speedup * self.step_factor
        if batch > self.graph_max_bs:
            ms *= sim.eager_penalty
        return ms * 1e-3

    def tokens_this_step(self, rng: random.Random) -> int:
        """Tokens one sequence emits in one step: 1, or 1 + accepted drafts when speculating."""
        accepted = 0
        rate = self.accept_rate
        while accepted < self.draft_steps and rng.random() < rate:
            accepted += 1
        return 1 + accepted

    def expected_tokens_per_step(self) -> float:
        rate = self.accept_rate
        return float(sum(rate**k for k in range(self.draft_steps + 1)))

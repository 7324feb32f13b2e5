"""Predicted against published: InferenceX's DeepSeek-R1-0528 FP4 1k/1k frontiers.

InferenceX's write-up "GB200 NVL72 vs B200 disagg on DeepSeek R1 FP4 (Dynamo TRT-LLM)"
publishes, for DeepSeek-R1-0528 FP4 1k/1k with Dynamo TRT-LLM + MTP, disaggregated:
941 tok/s/GPU on B200 and 4,130 on GB200 NVL72 at 125 tok/s/user, and peak
throughputs of 12,515 (B200) and 14,659 (GB200) tok/s/GPU at the low-interactivity end.
The recipes behind those frontiers are srt-slurm's `trtllm/{b200,gb200}-fp4/1k1k/mtp/`.

Each recipe is planned with `--predict` (the same mapping a predicted run uses) and each
of its concurrencies becomes a steady-state point from the predicted engine's own
timing: the decode batch per worker is the concurrency over the decode workers, TPOT
comes from the scheduler run on a virtual clock (`disagg.predict.fixed_point`), TTFT
from an idle prefill worker, and the request rate is the lesser of what the decode
workers sustain and what the prefill workers can prefill. The frontier over every
point of a family is interpolated at the published interactivity.

    PYTHONPATH=src python benchmarks/predict_accuracy.py [--recipes DIR] [--accept 0.85]

Needs the `predict` group. Prints the table docs/predict.md quotes.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

RECIPES = Path("/work/shared/recipes/srt-slurm-v1.0.68/trtllm")
MODEL = "deepseek-ai/DeepSeek-R1"  # the recipes name it `dsr1`, a cluster alias


@dataclass(frozen=True)
class Published:
    family: str  # recipe folder
    what: str
    interactivity: float | None  # tok/s/user the figure is read at; None: the peak
    tok_s_gpu: float


PUBLISHED = [
    Published("b200-fp4/1k1k/mtp", "B200, at 125 tok/s/user", 125.0, 941.0),
    Published("gb200-fp4/1k1k/mtp", "GB200 NVL72, at 125 tok/s/user", 125.0, 4130.0),
    Published("b200-fp4/1k1k/mtp", "B200, peak", None, 12515.0),
    Published("gb200-fp4/1k1k/mtp", "GB200 NVL72, peak", None, 14659.0),
]


@dataclass(frozen=True)
class Point:
    recipe: str
    conc: int
    tok_s_gpu: float  # input + output tokens per second per GPU (InferenceX's tput_per_gpu)
    tok_s_user: float


def predict_recipe(path: Path, accept: float | None) -> list[Point]:
    """Steady-state predicted points of every concurrency of one recipe."""
    from disagg.plan.from_recipe import plans_for
    from disagg.plan.model import RoleKind
    from disagg.predict.check import role_target
    from disagg.predict.fixed_point import decode_point, engine_args, prefill_point
    from disagg.predict.mapping import PredictOptions
    from disagg.predict.timing import PredictedTiming

    options = PredictOptions(accept_rate=accept, model=MODEL)
    points = []
    for plan in plans_for([str(path)], None, options):
        prefills = [r for r in plan.roles if r.kind is RoleKind.PREFILL]
        decodes = [r for r in plan.roles if r.kind is RoleKind.DECODE]
        prefill, decode = role_target(prefills[0].argv), role_target(decodes[0].argv)
        assert prefill is not None and decode is not None
        isl, osl = plan.bench.isl, plan.bench.osl
        ttft_ms, transfer_ms = prefill_point(prefill, isl)
        # What one prefill worker can take per second: its chunk budget of whole prompts.
        per_pass = max(1, 16384 // isl)
        timing = PredictedTiming(engine_args(prefill, "prefill", running=per_pass), prefill)
        pass_s = timing.prefill_batch_time([(isl, 0)] * per_pass)
        prefill_rps = len(prefills) * per_pass / pass_s
        for point in plan.bench.points:
            conc = point.concurrency or 1
            batch = max(1, math.ceil(conc / len(decodes)))
            tpot_ms = decode_point(decode, batch, isl, osl)
            latency_s = (ttft_ms + transfer_ms + (osl - 1) * tpot_ms) / 1e3
            rps = min(conc / latency_s, prefill_rps)
            points.append(
                Point(
                    recipe=path.stem,
                    conc=conc,
                    tok_s_gpu=rps * (isl + osl) / plan.total_gpus,
                    tok_s_user=1e3 / tpot_ms,
                )
            )
    return points


def frontier(points: list[Point]) -> list[Point]:
    """The upper-right frontier: no other point is both faster per user and per GPU."""
    best: list[Point] = []
    for p in sorted(points, key=lambda p: -p.tok_s_user):
        if not best or p.tok_s_gpu > best[-1].tok_s_gpu:
            best.append(p)
    return best


def at_interactivity(front: list[Point], x: float) -> float | None:
    """Throughput per GPU on the frontier at `x` tok/s/user (linear between its points)."""
    ordered = sorted(front, key=lambda p: p.tok_s_user)
    for a, b in itertools.pairwise(ordered):
        if a.tok_s_user <= x <= b.tok_s_user:
            t = (x - a.tok_s_user) / (b.tok_s_user - a.tok_s_user)
            return a.tok_s_gpu + t * (b.tok_s_gpu - a.tok_s_gpu)
    return None  # outside the predicted frontier


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", type=Path, default=RECIPES)
    parser.add_argument(
        "--accept", type=float, default=None, help="draft acceptance [the published default]"
    )
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    from disagg.predict import require

    require()
    started = time.perf_counter()
    fronts: dict[str, list[Point]] = {}
    for family in dict.fromkeys(p.family for p in PUBLISHED):
        points: list[Point] = []
        for path in sorted((args.recipes / family).glob("*.yaml")):
            try:
                points += predict_recipe(path, args.accept)
            except Exception as exc:  # a recipe the model cannot cover is listed, not fatal
                print(f"  {family}/{path.name}: not predicted: {exc}", file=sys.stderr)
        fronts[family] = frontier(points)
        for p in sorted(points, key=lambda p: -p.tok_s_user):
            print(
                f"  {family}/{p.recipe} conc {p.conc}: {p.tok_s_gpu:,.0f} tok/s/GPU at "
                f"{p.tok_s_user:,.1f} tok/s/user",
                file=sys.stderr,
            )
    print("| published point | published tok/s/GPU | predicted tok/s/GPU | error |")
    print("| --- | ---: | ---: | ---: |")
    for pub in PUBLISHED:
        front = fronts[pub.family]
        if pub.interactivity is None:
            predicted = max((p.tok_s_gpu for p in front), default=None)
        else:
            predicted = at_interactivity(front, pub.interactivity)
        if predicted is None:
            print(f"| {pub.what} | {pub.tok_s_gpu:,.0f} | outside the frontier | - |")
            continue
        error = (predicted - pub.tok_s_gpu) / pub.tok_s_gpu * 100
        print(f"| {pub.what} | {pub.tok_s_gpu:,.0f} | {predicted:,.0f} | {error:+.0f}% |")
    print(f"\n{time.perf_counter() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

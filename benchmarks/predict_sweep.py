"""How long a predicted 8-point sweep of a 1P1D DeepSeek-R1 recipe takes on this machine.

Runs `disagg run RECIPE --local --predict` end to end (real router, real load generator,
two predicted workers) over eight concurrencies and prints the wall time, the time
spent starting the workers (the model is built once per worker process) and each
point's predicted numbers. The recipe is examples/predict/dsr1-h200-1p1d.yaml with its
benchmark section swapped for an 8-point sweep; `--time-scale` is the speed-up the
predicted engines run at (results are stretched back to the model's time).

    PYTHONPATH=src python benchmarks/predict_sweep.py [--time-scale 20] [--osl 256]

Needs the `predict` group.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ruamel.yaml import YAML

RECIPE = Path(__file__).resolve().parents[1] / "examples" / "predict" / "dsr1-h200-1p1d.yaml"
CONCURRENCIES = "1x2x4x8x16x32x64x128"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-scale", type=float, default=20.0)
    parser.add_argument("--isl", type=int, default=1024)
    parser.add_argument("--osl", type=int, default=256)
    parser.add_argument("--recipe", type=Path, default=RECIPE)
    args = parser.parse_args()

    yaml = YAML()
    recipe = yaml.load(args.recipe.read_text())
    recipe["benchmark"] = {
        "type": "sa-bench",
        "isl": args.isl,
        "osl": args.osl,
        "concurrencies": CONCURRENCIES,
        "req_rate": "inf",
        "num_prompts_mult": 2,
        "num_warmup_mult": 0,
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sweep.yaml"
        with path.open("w") as out:
            yaml.dump(recipe, out)
        argv = [sys.executable, "-m", "disagg", "run", str(path), "--local", "--predict"]
        argv += ["--predict-time-scale", str(args.time_scale), "--out", f"{tmp}/run", "--json"]
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            print(done.stderr[-3000:], file=sys.stderr)
            return done.returncode
        result = json.loads(done.stdout)
        log = (Path(tmp) / "run" / "logs").glob("orchestrator*")
        healthy = [line for f in log for line in f.read_text().splitlines() if "healthy" in line]
    points = result["points"]
    print(f"{len(points)} points in {wall:.1f} s wall (time scale {args.time_scale:g})")
    for line in healthy:
        print("  " + line.strip())
    for point in points:
        m = point.get("headline") or {}
        print(
            f"  {point['key']}: TTFT {m.get('median_ttft_ms', 0):.0f} ms, "
            f"TPOT {m.get('median_tpot_ms', 0):.1f} ms, "
            f"{m.get('output_throughput', 0):.0f} output tok/s, "
            f"{point.get('seconds') or 0:.1f} s wall"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How long `disagg --help`, `disagg lint FILE` and `disagg plan FILE` take to start and finish.

Runs each command N times in a fresh interpreter and prints the median wall time and
the median CPU time of the child (user + system: steadier than wall time on a busy
machine). Targets: `--help` under 0.1 s, `plan FILE` under 0.2 s, `lint FILE` under
0.3 s (figures: benchmarks/README.md). `python -c pass` is printed as the floor, and
`libraries` as the floor of a plan: importing what `disagg plan` cannot do without
(typer with the pydantic coercion it runs on a command's parameters, pydantic's models,
PyYAML), before disagg's own modules or any work. `plan imports` is the next floor: every
module `disagg plan RECIPE` imports (found by running it once), imported and nothing run,
so that `disagg plan FILE` minus it is what planning the file itself costs.

Two columns of CPU time, because most of a short command's time is reading Python
modules: `cached` writes and reads bytecode in a private cache (the first, uncounted run
fills it, so the checkout's own `__pycache__` is left alone); `no-write` is a shell with
PYTHONDONTWRITEBYTECODE=1, which reads the bytecode scripts/bootstrap compiled (the
environment and disagg's own src/) and writes none: a module edited since is compiled
from source on every run.

With `--instructions`, each command also runs once under valgrind's callgrind, which
counts the instructions it executes (`cached` environment, hash seed 0): unlike
seconds, the count does not move with the machine's load, so before/after comparisons
hold on a shared machine (there, about 5,000 M instructions took a CPU second).

`--against SRC` runs every command also with the disagg under SRC (another checkout's
`src/`, e.g. a `git worktree` of an earlier commit), the two alternating run by run, so
that a before/after comparison shares the machine's load.

    .venv/bin/python benchmarks/startup.py [RECIPE] [-n 7] [--instructions] [--against SRC]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_RECIPE = (
    Path(__file__).resolve().parents[2]
    / "shared/recipes/srt-slurm-v1.0.68/h200/1k1k/bs128-agg-tp-mtp.yaml"
)


def _once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = os.times()
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env)
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu


def _environments(cache: str, src: Path | None = None) -> dict[str, dict[str, str]]:
    """`cached`: bytecode written to and read from `cache`; `no-write`: none written.
    With `src`, disagg is imported from there."""
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX", "PYTHONPATH")
    }
    if src is not None:
        base["PYTHONPATH"] = str(src)
    return {
        "cached": {**base, "PYTHONPYCACHEPREFIX": cache},
        "no-write": {**base, "PYTHONDONTWRITEBYTECODE": "1"},
    }


_IMPORTED = """
import contextlib, io, runpy, sys
sys.argv = ["disagg", "plan", sys.argv[1]]
try:
    with contextlib.redirect_stdout(io.StringIO()):
        runpy.run_module("disagg", run_name="__main__")
except SystemExit as exc:  # the plan must succeed, or the row would time an error
    if exc.code not in (0, None):
        raise
print(",".join(sorted(name for name in sys.modules if not name.startswith("__"))))
"""


def _plan_imports(python: str, recipe: Path, env: dict[str, str]) -> list[str]:
    """A command importing every module `disagg plan RECIPE` imports, in a fresh interpreter,
    without planning: the modules are found by running the plan once under `env`."""
    done = subprocess.run(
        [python, "-c", _IMPORTED, str(recipe)], env=env, capture_output=True, text=True
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise SystemExit(f"could not list what `disagg plan` imports:\n{done.stderr[-2000:]}")
    names = done.stdout.strip().splitlines()[-1]
    # by name, in the order listed; a name only an import inside another creates is skipped
    program = f"import importlib\nfor name in {names!r}.split(','):\n"
    program += "    try: importlib.import_module(name)\n    except ImportError: pass"
    return [python, "-c", program]


def _instructions(argv: list[str], env: dict[str, str]) -> float:
    """Millions of instructions `argv` executes (valgrind --tool=callgrind).

    With a fixed hash seed: a random one moves the count by about 1% from run to run
    (set and dict layouts), as much as the changes it is read to compare."""
    env = {**env, "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/callgrind.out", *argv],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            env=env,
        )
    for line in done.stderr.splitlines():
        if "Collected :" in line:
            return int(line.split(":")[-1]) / 1e6
    raise SystemExit(f"valgrind gave no instruction count:\n{done.stderr[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipe", nargs="?", type=Path, default=DEFAULT_RECIPE)
    parser.add_argument("-n", type=int, default=7, help="runs per command")
    parser.add_argument(
        "--instructions", action="store_true", help="also count instructions (needs valgrind)"
    )
    parser.add_argument("--against", type=Path, help="also run the disagg under this src/")
    args = parser.parse_args()
    if args.instructions and shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind on PATH")
    python = sys.executable
    sides: dict[str, Path | None] = {"": None}
    if args.against is not None:
        if not (args.against / "disagg" / "__init__.py").is_file():
            raise SystemExit(f"--against {args.against}: no disagg package there (name a src/)")
        sides = {"this": Path(__file__).resolve().parents[1] / "src", "other": args.against}
        for side, src in sides.items():
            print(f"{side}: {src}")
    with tempfile.TemporaryDirectory() as cache:
        envs = {
            side: _environments(f"{cache}/{side or 'this'}", src) for side, src in sides.items()
        }
        commands = {
            "python -c pass": [python, "-c", "pass"],
            "libraries": [python, "-c", "import typer, typer._adapters, pydantic.main, yaml"],
            "disagg --help": [python, "-m", "disagg", "--help"],
            "disagg lint FILE": [python, "-m", "disagg", "lint", str(args.recipe)],
            "plan imports": None,  # per side: what that side's plan imports
            "disagg plan FILE": [python, "-m", "disagg", "plan", str(args.recipe)],
        }
        imports = {
            side: _plan_imports(python, args.recipe, env["cached"]) for side, env in envs.items()
        }
        count = f" {'instr.':>9}" if args.instructions else ""
        print(f"{'command':<26} {'wall':>8} {'CPU':>8} {'CPU':>10}{count}   (median of {args.n})")
        print(
            f"{'':<26} {'cached':>8} {'cached':>8} {'no-write':>10}" + (" " * 10 if count else "")
        )
        for label, command in commands.items():
            argvs = {side: command or imports[side] for side in envs}
            for side, env in envs.items():
                _once(argvs[side], env["cached"])  # fills the bytecode cache; not counted
            cached: dict[str, list[tuple[float, float]]] = {side: [] for side in envs}
            no_write: dict[str, list[float]] = {side: [] for side in envs}
            for _ in range(args.n):  # the sides alternate, so they share the machine's load
                for side, env in envs.items():
                    cached[side].append(_once(argvs[side], env["cached"]))
                    no_write[side].append(_once(argvs[side], env["no-write"])[1])
            for side, env in envs.items():
                wall = statistics.median(r[0] for r in cached[side])
                cpu = statistics.median(r[1] for r in cached[side])
                name = f"{label} ({side})" if side else label
                line = (
                    f"{name:<26} {wall:7.3f}s {cpu:7.3f}s {statistics.median(no_write[side]):9.3f}s"
                )
                if args.instructions:
                    line += f" {_instructions(argvs[side], env['cached']):8.0f}M"
                print(line, flush=True)


if __name__ == "__main__":
    main()

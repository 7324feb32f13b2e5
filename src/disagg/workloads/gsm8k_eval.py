"""`python -m disagg.workloads.gsm8k_eval`: disagg's own GSM8K evaluator for `/v1/completions`.

disagg does not ship srtctl's bundled vLLM GSM8K script, so this does the same
evaluation from its described contract: `train.jsonl` / `test.jsonl` read from a local
directory (a compute node may have no network); the first `num_shots` training items
as `Question: Q\\nAnswer: A\\n\\n` before each test question; `POST /v1/completions` with
seed 42 and the reference's stop sequences; the answer is the last run of digits once
commas are dropped. One JSON file per repeat (`gsm8k_run{i}.json`) with the
reference's fields and `score` (= accuracy). Unlike the reference, a failed request
fails the run instead of counting as wrong (compat row `gsm8k-vllm-evaluator`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from disagg.atomic import write_json
from disagg.errors import DisaggError

INVALID = -9999999  # the answer of a text with no usable number
STOP = ["Question", "Assistant:", "<|separator|>"]
SEED = 42
IN_FLIGHT = 100  # requests open at once: the reference client's HTTP connection pool
REQUEST_TIMEOUT_S = 600.0
DATA_FILES = ("train.jsonl", "test.jsonl")
NO_DATA_EXIT = 3
FAILED_EXIT = 4


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The items of a GSM8K file (`#` lines and blank lines skipped), each with a string
    `question` and `answer`; anything else is an error naming the file and line."""
    if not path.is_file():
        raise DisaggError(
            f"GSM8K data file {path} does not exist",
            hint="set benchmark.dataset_path to a directory holding train.jsonl and "
            "test.jsonl (grade_school_math/data of the GSM8K release)",
        )
    items: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip() or line.startswith("#"):
                continue
            try:
                item = json.loads(line)
            except ValueError as exc:
                raise DisaggError(f"{path}:{number}: not JSON ({exc})") from None
            ok = isinstance(item, dict) and all(
                isinstance(item.get(key), str) for key in ("question", "answer")
            )
            if not ok:
                raise DisaggError(
                    f"{path}:{number}: expected an object with string `question` and `answer`"
                )
            items.append(item)
    return items


def answer_value(text: str) -> int:
    """The last number in `text` (commas dropped), or INVALID."""
    runs = re.findall(r"\d+", text.replace(",", ""))
    if not runs or (len(runs[-1]) > 1 and runs[-1].startswith("0")):
        return INVALID  # a leading zero is no integer literal to the reference either
    return int(runs[-1])


@dataclass(frozen=True)
class Questions:
    prompts: list[str]
    labels: list[int]


def build_prompts(
    train: Sequence[dict[str, Any]],
    test: Sequence[dict[str, Any]],
    num_questions: int,
    num_shots: int,
) -> Questions:
    """The few-shot prompts and the expected answers of the first `num_questions` tests."""
    if num_shots > len(train):
        raise DisaggError(f"{num_shots} shots asked for, but train.jsonl has {len(train)} items")
    shots = "".join(
        f"Question: {item['question']}\nAnswer: {item['answer']}\n\n" for item in train[:num_shots]
    )
    chosen = test[:num_questions]
    prompts = [f"{shots}Question: {item['question']}\nAnswer:" for item in chosen]
    labels = [answer_value(item["answer"]) for item in chosen]
    bad = [i for i, label in enumerate(labels, start=1) if label == INVALID]
    if bad:
        raise DisaggError(f"test.jsonl item {bad[0]} has no numeric answer")
    return Questions(prompts, labels)


def score(texts: Sequence[str], labels: Sequence[int]) -> tuple[float, float]:
    """(accuracy, invalid rate) of the answers in `texts` against `labels`."""
    preds = [answer_value(text) for text in texts]
    count = len(labels) or 1
    correct = sum(pred == label for pred, label in zip(preds, labels, strict=True))
    return correct / count, sum(pred == INVALID for pred in preds) / count


@dataclass(frozen=True)
class Settings:
    url: str
    model: str | None
    max_tokens: int
    temperature: float


def complete(settings: Settings, prompt: str) -> tuple[str, int]:
    """One completion: its text and completion token count."""
    body: dict[str, Any] = {
        "prompt": prompt,
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
        "stop": STOP,
        "seed": SEED,
    }
    if settings.model:
        body["model"] = settings.model
    request = urllib.request.Request(
        f"{settings.url.rstrip('/')}/v1/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
        answer = json.loads(response.read())
    text = answer["choices"][0]["text"]
    if not isinstance(text, str):
        raise ValueError("choices[0].text is not a string")
    usage = answer.get("usage") or {}
    tokens = usage.get("completion_tokens", 0) if isinstance(usage, dict) else 0
    return text, tokens if isinstance(tokens, int) else 0


def evaluate(settings: Settings, questions: Questions) -> dict[str, Any]:
    """Ask every question at once (up to IN_FLIGHT open) and score the answers; a failed
    request raises, naming how many failed."""
    failures: list[str] = []
    lock = threading.Lock()

    def ask(prompt: str) -> tuple[str, int]:
        try:
            return complete(settings, prompt)
        except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
            with lock:
                failures.append(f"{type(exc).__name__}: {exc}")
            return "", 0

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=IN_FLIGHT) as pool:
        answers = list(pool.map(ask, questions.prompts))
    latency = time.perf_counter() - started
    if failures:
        raise DisaggError(
            f"{len(failures)} of {len(answers)} requests to {settings.url}/v1/completions "
            f"failed (first: {failures[0]}); no score is given for a partial evaluation"
        )
    accuracy, invalid_rate = score([text for text, _ in answers], questions.labels)
    tokens = sum(count for _, count in answers)
    return {
        "accuracy": accuracy,
        "score": accuracy,
        "invalid_rate": invalid_rate,
        "latency": latency,
        "questions_per_second": len(answers) / latency if latency > 0 else 0.0,
        "total_output_tokens": tokens,
        "tokens_per_second": tokens / latency if latency > 0 else 0.0,
        "num_questions": len(answers),
        "max_tokens": settings.max_tokens,
        "timestamp": time.time(),
        "model": settings.model,
        "temperature": settings.temperature,
        "seed": SEED,
    }


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m disagg.workloads.gsm8k_eval", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--url", required=True, help="the frontend, e.g. http://host:8000")
    parser.add_argument("--model", default="", help="served model name (omitted when empty)")
    parser.add_argument("--num-questions", type=int, default=1319)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--num-shots", type=int, default=5)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--data-dir", type=Path, default=None, help="holds train/test.jsonl")
    parser.add_argument("--out", type=Path, required=True, help="where gsm8k_run{i}.json go")
    args = parser.parse_args(argv)
    for name in ("num_questions", "max_tokens", "repeat"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be > 0")
    if args.num_shots < 0:
        parser.error("--num-shots must be >= 0")
    return args


def run(args: argparse.Namespace) -> int:
    # by default where the reference caches the files it downloads
    data_dir: Path = args.data_dir or Path(tempfile.gettempdir())
    print(f"gsm8k: reading {data_dir / DATA_FILES[0]} and {data_dir / DATA_FILES[1]}", flush=True)
    try:
        train, test = (read_jsonl(data_dir / name) for name in DATA_FILES)
        questions = build_prompts(train, test, args.num_questions, args.num_shots)
    except DisaggError as exc:
        print(f"gsm8k: {exc.message}" + (f" ({exc.hint})" if exc.hint else ""), file=sys.stderr)
        print("gsm8k: nothing was evaluated", file=sys.stderr)
        return NO_DATA_EXIT
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    for stale in sorted(out.glob("gsm8k_run*.json")):  # an earlier attempt's: not this run's
        print(f"gsm8k: removing {stale} (written before this run)", flush=True)
        stale.unlink()
    settings = Settings(args.url, args.model or None, args.max_tokens, args.temperature)
    for run_index in range(1, args.repeat + 1):
        print(
            f"gsm8k: run {run_index}/{args.repeat}: {len(questions.prompts)} questions, "
            f"{args.num_shots}-shot, max_tokens {args.max_tokens}, "
            f"temperature {args.temperature}",
            flush=True,
        )
        try:
            result = evaluate(settings, questions)
        except DisaggError as exc:
            print(f"gsm8k: run {run_index}: {exc.message}", file=sys.stderr)
            return FAILED_EXIT
        result["num_shots"] = args.num_shots
        result["data_dir"] = str(data_dir)
        target = out / f"gsm8k_run{run_index}.json"
        write_json(target, result)
        print(
            f"gsm8k: run {run_index}: accuracy {result['accuracy']:.3f}, invalid "
            f"{result['invalid_rate']:.3f}, {result['latency']:.1f}s -> {target}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(run(parse(None)))

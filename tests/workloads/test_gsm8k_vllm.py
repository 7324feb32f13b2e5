"""`gsm8k` with `backend.type: vllm`: srtctl's arguments and defaults rendered for disagg's
own evaluator, the evaluator's prompt, answer extraction and scoring, and one evaluation
against a loopback `/v1/completions` server whose answers are known, judged exactly."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from disagg.errors import DisaggError
from disagg.launch.state import PointStatus, RunStatus, RunSummary
from disagg.plan.model import Plan, RoleKind
from disagg.plan.placement import place
from disagg.plan.show import render_plan
from disagg.recipe.variants import load_variants
from disagg.workloads import BenchInputs, adapter_for
from disagg.workloads.accuracy import collect_accuracy
from disagg.workloads.gsm8k_eval import (
    INVALID,
    answer_value,
    build_prompts,
    read_jsonl,
    score,
)

from .test_accuracy import inputs
from .workload_support import disagg

RECIPE = """\
name: "gsm8k-vllm"
model:
  path: "hf:Qwen/Qwen3-0.6B"
  container: "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.8.0"
  precision: "fp16"
resources:
  gpu_type: "h100"
  gpus_per_node: 8
  agg_nodes: 1
  agg_workers: 1
  gpus_per_agg: 1
frontend:
  type: dynamo
backend:
  type: vllm
  vllm_config:
    aggregated:
      served-model-name: "Qwen/Qwen3-0.6B"
      tensor-parallel-size: 1
benchmark:
  type: gsm8k
"""

TRAIN = [
    {"question": "Tom has 3 apples and buys 2. How many?", "answer": "3 + 2 = 5\n#### 5"},
    {"question": "A box holds 1,200 pens; 200 are sold.", "answer": "1,200 - 200\n#### 1,000"},
]
TEST = [
    {"question": "Natalia sold 48 clips in April and half as many in May.", "answer": "#### 72"},
    {"question": "Weng earns $12 an hour for 50 minutes.", "answer": "#### 10"},
    {"question": "Betty needs $100 and has half of it.", "answer": "#### 5"},
]
# What the loopback server answers each test question with: right, no number, right.
REPLIES = {
    TEST[0]["question"]: " She sold 48 + 24 = 72 clips.",
    TEST[1]["question"]: " I cannot tell.",
    TEST[2]["question"]: " Betty needs 5 more dollars.",
}


def write_data(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, items in (("train.jsonl", TRAIN), ("test.jsonl", TEST)):
        lines = ["# a comment line, skipped", *(json.dumps(item) for item in items)]
        (folder / name).write_text("\n".join(lines) + "\n")
    return folder


def planned(tmp_path: Path, **fields: object) -> Plan:
    extra = "".join(f"  {key}: {json.dumps(value)}\n" for key, value in fields.items())
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(RECIPE + extra)
    return place(load_variants(recipe)[0])


def bench_role_argv(plan: Plan) -> list[str]:
    return next(r for r in plan.roles if r.kind is RoleKind.BENCH).argv


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_the_evaluator_gets_srtctls_vllm_defaults_in_the_bench_role(tmp_path: Path) -> None:
    plan = planned(tmp_path)
    argv = bench_role_argv(plan)
    assert argv[:3] == ["${run.python}", "-m", "disagg.workloads.gsm8k_eval"]
    assert flag(argv, "--url") == f"${{{plan.serving_role}.url}}"
    assert flag(argv, "--model") == "Qwen/Qwen3-0.6B"
    assert [flag(argv, f) for f in ("--num-questions", "--max-tokens", "--num-shots")] == [
        *("1319", "256", "5")
    ]
    assert flag(argv, "--temperature") == "0.0" and flag(argv, "--repeat") == "1"
    assert "--data-dir" not in argv and flag(argv, "--out") == "${run.dir}/bench-results"
    bench = next(r for r in plan.roles if r.kind is RoleKind.BENCH)
    assert bench.container_image is None  # disagg's own Python, not the engine's image
    assert plan.bench.command is not None and plan.bench.command.accuracy == "gsm8k"
    ids = [row["id"] for row in plan.differs]
    assert "gsm8k-vllm-evaluator" in ids and "accuracy-result" not in ids
    shown = "\n".join(render_plan(plan, 200))
    assert "bench node's temporary directory" in shown


def test_the_recipes_fields_and_dataset_path_reach_the_evaluator(tmp_path: Path) -> None:
    plan = planned(
        tmp_path,
        num_examples=50,
        max_tokens=512,
        num_shots=0,
        temperature=0.6,
        repeat=3,
        dataset_path="data/gsm8k",
        top_p=0.9,
    )
    argv = bench_role_argv(plan)
    assert [flag(argv, f) for f in ("--num-questions", "--max-tokens", "--num-shots")] == [
        *("50", "512", "0")
    ]
    assert flag(argv, "--temperature") == "0.6" and flag(argv, "--repeat") == "3"
    data = str((tmp_path / "data" / "gsm8k").absolute())
    assert flag(argv, "--data-dir") == data
    assert "top-p" not in " ".join(argv)
    assert any(item["field"] == "benchmark.top_p" for item in plan.ignored)
    assert f"{data}/{{train,test}}.jsonl" in "\n".join(render_plan(plan, 200))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"repeat": 0}, r"benchmark\.repeat must be > 0"),
        ({"num_examples": -1}, r"benchmark\.num_examples must be > 0"),
        ({"max_tokens": 0}, r"benchmark\.max_tokens must be > 0"),
        ({"num_shots": -1}, r"benchmark\.num_shots must be >= 0"),
    ],
)
def test_bad_values_are_positioned_errors(fields: dict[str, object], message: str) -> None:
    with pytest.raises(DisaggError, match=message):
        adapter_for("gsm8k").plan(inputs("vllm", type="gsm8k", **fields))


def test_a_named_dataset_path_without_the_files_fails_before_any_role(tmp_path: Path) -> None:
    plan = planned(tmp_path, dataset_path=str(tmp_path / "absent"))
    with pytest.raises(DisaggError, match=r"absent/train\.jsonl does not exist"):
        adapter_for("gsm8k").resolve(plan.bench)
    write_data(tmp_path / "absent")
    adapter_for("gsm8k").resolve(plan.bench)


def test_the_sglang_path_is_unchanged_and_lists_repeat_as_ignored() -> None:
    plan = adapter_for("gsm8k").plan(inputs("sglang", type="gsm8k", repeat=2))
    assert plan.command is not None and "sglang.test.run_eval" in plan.command.argv
    assert "repeat" in plan.ignored


def test_prompts_are_few_shot_question_answer_blocks(tmp_path: Path) -> None:
    folder = write_data(tmp_path / "d")
    train, test = read_jsonl(folder / "train.jsonl"), read_jsonl(folder / "test.jsonl")
    questions = build_prompts(train, test, num_questions=2, num_shots=2)
    shots = (
        f"Question: {TRAIN[0]['question']}\nAnswer: {TRAIN[0]['answer']}\n\n"
        f"Question: {TRAIN[1]['question']}\nAnswer: {TRAIN[1]['answer']}\n\n"
    )
    assert questions.prompts == [
        f"{shots}Question: {TEST[0]['question']}\nAnswer:",
        f"{shots}Question: {TEST[1]['question']}\nAnswer:",
    ]
    assert questions.labels == [72, 10]
    zero = build_prompts(train, test, num_questions=99, num_shots=0)
    assert zero.prompts[2] == f"Question: {TEST[2]['question']}\nAnswer:" and len(zero.labels) == 3
    with pytest.raises(DisaggError, match=r"3 shots asked for, but train\.jsonl has 2"):
        build_prompts(train, test, num_questions=1, num_shots=3)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("so 48 + 24 = 72", 72),
        ("#### 1,000", 1000),
        ("costs $3.50", 50),  # digits only: the last run, as the reference reads it
        ("answer: -7", 7),
        ("it is 07", INVALID),  # a leading zero is no integer literal
        ("no idea", INVALID),
        ("0", 0),
    ],
)
def test_the_answer_is_the_last_number(text: str, value: int) -> None:
    assert answer_value(text) == value


def test_scoring_counts_right_and_invalid_answers() -> None:
    accuracy, invalid = score(["72", "none", "6", "it is 5"], [72, 10, 5, 5])
    assert accuracy == 0.5 and invalid == 0.25


def test_a_malformed_data_line_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "test.jsonl"
    path.write_text('{"question": "q", "answer": "#### 1"}\n{"question": 3}\n')
    with pytest.raises(DisaggError, match=r"test\.jsonl:2: expected an object"):
        read_jsonl(path)


class Completions(BaseHTTPRequestHandler):
    """`/v1/completions` answering each test question with its canned reply."""

    seen: ClassVar[list[dict[str, Any]]] = []
    fail_on: ClassVar[str | None] = None

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append({"path": self.path, **body})
        question = body["prompt"].rsplit("Question: ", 1)[1].removesuffix("\nAnswer:")
        if question == self.fail_on:
            self.send_response(500)
            self.end_headers()
            return
        reply = {"choices": [{"text": REPLIES[question]}], "usage": {"completion_tokens": 4}}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    Completions.seen = []
    Completions.fail_on = None
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Completions)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def evaluator(*args: str | Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "disagg.workloads.gsm8k_eval", *map(str, args)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def test_an_evaluation_is_scored_and_each_repeat_judged(server: str, tmp_path: Path) -> None:
    data = write_data(tmp_path / "gsm8k")
    out = tmp_path / "results"
    out.mkdir()
    (out / "gsm8k_run7.json").write_text('{"score": 1.0}')  # an earlier attempt's file
    done = evaluator(
        *("--url", server, "--model", "Qwen/Qwen3-0.6B", "--num-questions", "1319"),
        *("--max-tokens", "256", "--num-shots", "1", "--temperature", "0.0", "--repeat", "2"),
        *("--data-dir", data, "--out", out),
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["gsm8k_run1.json", "gsm8k_run2.json"]
    first = json.loads((out / "gsm8k_run1.json").read_text())
    assert first["score"] == first["accuracy"] == pytest.approx(2 / 3)
    assert first["invalid_rate"] == pytest.approx(1 / 3)
    assert first["num_questions"] == 3 and first["num_shots"] == 1
    assert first["total_output_tokens"] == 12 and first["seed"] == 42
    assert len(Completions.seen) == 6  # 3 questions, twice
    request = Completions.seen[0]
    assert request["path"] == "/v1/completions" and request["model"] == "Qwen/Qwen3-0.6B"
    assert request["stop"] == ["Question", "Assistant:", "<|separator|>"]
    assert (request["max_tokens"], request["temperature"], request["seed"]) == (256, 0.0, 42)
    assert request["prompt"].startswith(f"Question: {TRAIN[0]['question']}\nAnswer: ")

    plan = planned(tmp_path, repeat=2)
    found = collect_accuracy(out, plan, tmp_path / "run")
    assert [p.key for p in found.points] == ["accuracy_gsm8k_run1", "accuracy_gsm8k_run2"]
    assert all(
        p.valid and p.headline["score"] == pytest.approx(0.667, abs=5e-4) for p in found.points
    )
    judged = json.loads((tmp_path / "run" / "accuracy" / "gsm8k_run2.json").read_text())
    assert judged["valid"] and judged["point"] == "accuracy_gsm8k_run2"


def test_absent_data_fails_by_name_before_any_request(server: str, tmp_path: Path) -> None:
    out = tmp_path / "results"
    done = evaluator("--url", server, "--data-dir", tmp_path / "nowhere", "--out", out)
    assert done.returncode == 3
    assert f"{tmp_path / 'nowhere' / 'train.jsonl'} does not exist" in done.stderr
    assert "benchmark.dataset_path" in done.stderr and "nothing was evaluated" in done.stderr
    assert Completions.seen == [] and not out.exists()


def test_a_failed_request_fails_the_run_without_a_score(server: str, tmp_path: Path) -> None:
    Completions.fail_on = TEST[1]["question"]
    out = tmp_path / "results"
    data = write_data(tmp_path / "d")
    done = evaluator("--url", server, "--num-shots", "0", "--data-dir", data, "--out", out)
    assert done.returncode == 4
    assert "1 of 3 requests" in done.stderr and "HTTP Error 500" in done.stderr
    assert not list(out.glob("gsm8k_run*.json"))


SIM_RECIPE = """\
base:
  name: "sim-gsm8k-vllm"
  model: {path: "sim/tiny-model", container: "none", precision: "bf16"}
  resources:
    gpu_type: "sim"
    gpus_per_node: 8
    agg_nodes: 1
    agg_workers: 1
    gpus_per_agg: 1
  backend:
    type: vllm
    engine: sim
    vllm_config:
      aggregated: {served-model-name: "sim/tiny-model", tensor-parallel-size: 1}
  benchmark:
    type: gsm8k
    num_examples: 3
    max_tokens: 8
    num_shots: 1
    repeat: 2
    dataset_path: gsm8k
"""


def sim_run(tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(SIM_RECIPE)
    run_dir = tmp_path / "run"
    return disagg("run", f"{recipe}:base", "--local", "--out", run_dir), run_dir


def test_a_local_run_on_the_simulated_vllm_engine_judges_each_repeat(tmp_path: Path) -> None:
    write_data(tmp_path / "gsm8k")
    done, run_dir = sim_run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = RunSummary.read(run_dir)
    assert summary is not None and summary.status is RunStatus.COMPLETED
    measured = [p.key for p in summary.points if p.status is PointStatus.MEASURED]
    assert measured == ["accuracy_gsm8k_run1", "accuracy_gsm8k_run2"]
    for name in ("gsm8k_run1.json", "gsm8k_run2.json"):
        judged = json.loads((run_dir / "accuracy" / name).read_text())
        assert judged["valid"] and 0.0 <= judged["score"] <= 1.0
        assert judged["metrics"]["num_questions"] == 3 and judged["simulated"]
    log = next((run_dir / "logs").glob("bench*")).read_text()
    assert f"reading {tmp_path / 'gsm8k' / 'train.jsonl'}" in log


def test_a_local_run_without_the_data_fails_before_the_engines_start(tmp_path: Path) -> None:
    done, run_dir = sim_run(tmp_path)
    assert done.returncode != 0
    summary = RunSummary.read(run_dir)
    assert summary is not None and summary.status is RunStatus.FAILED
    assert summary.reason is not None
    assert f"{tmp_path / 'gsm8k' / 'train.jsonl'} does not exist" in summary.reason
    # no role was started: the orchestrator's own log is the only one
    assert [p.name for p in (run_dir / "logs").iterdir()] == ["orchestrator.log"]


def test_a_dataset_path_inside_a_container_mount_is_read_from_its_host_side() -> None:
    section = inputs("vllm", type="gsm8k", dataset_path="/data/gsm8k").section
    mounted = BenchInputs(
        section=section,
        model_name="m",
        simulated=False,
        recipe_dir=Path("."),
        fail=lambda message, where, hint: DisaggError(message),
        resolve_container=lambda written: written,
        mounts={"/lustre/datasets": "/data"},
        engine="vllm",
    )
    plan = adapter_for("gsm8k").plan(mounted)
    assert plan.command is not None
    assert flag(plan.command.argv, "--data-dir") == "/lustre/datasets/gsm8k"

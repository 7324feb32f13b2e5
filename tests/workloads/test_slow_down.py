"""sa-bench's `slow_down_sleep_time` / `slow_down_wait_time`: planned and run as srtctl
runs them (SGLang's `/slow_down` on each decode worker behind the sglang frontend), and
listed as ignored with srtctl's reason wherever srtctl skips them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .workload_support import disagg, one_measured_point

RECIPE = Path(__file__).parent / "data" / "sim-slowdown.yaml"
PROFILE = Path(__file__).parent / "data" / "slowdown-profile.yaml"  # a real-engine recipe
FIELDS = ("benchmark.slow_down_sleep_time", "benchmark.slow_down_wait_time")


def _plan(recipe: Path) -> dict[str, Any]:
    done = disagg("plan", "--json", recipe)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    variants: list[dict[str, Any]] = json.loads(done.stdout)["variants"]
    return variants[0]


def _variant(tmp_path: Path, *edits: tuple[str, str]) -> Path:
    text = RECIPE.read_text()
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "variant.yaml"
    path.write_text(text)
    return path


def _ignored(plan: dict[str, Any]) -> dict[str, str]:
    return {item["field"]: item["why"] for item in plan["ignored"]}


def test_a_profiled_slowdown_recipe_plans_posts_to_its_decode_worker() -> None:
    plan = _plan(PROFILE)
    assert plan["bench"]["slow_down"] == {
        "sleep_s": 20.0,
        "wait_s": 90.0,
        "urls": ["${decode-0.url}/slow_down"],
    }
    assert "slow-down-failure" in [row["id"] for row in plan["differs"]]
    assert not set(FIELDS) & set(_ignored(plan))


def test_every_decode_worker_is_slowed_down_and_the_prefill_workers_are_not(
    tmp_path: Path,
) -> None:
    plan = _plan(_variant(tmp_path, ("decode_workers: 1", "decode_workers: 2")))
    assert plan["bench"]["slow_down"]["urls"] == [
        "${decode-0.url}/slow_down",
        "${decode-1.url}/slow_down",
    ]


@pytest.mark.parametrize(
    ("edits", "why"),
    [
        ((("slow_down_sleep_time: 0.05", "slow_down_sleep_time: 0"),), "positive"),
        ((("  slow_down_wait_time: 0.3\n", ""),), "both"),
    ],
    ids=["zero-sleep", "one-field"],
)
def test_where_srtctl_skips_the_slow_down_it_is_listed_as_ignored(
    tmp_path: Path, edits: tuple[tuple[str, str], ...], why: str
) -> None:
    plan = _plan(_variant(tmp_path, *edits))
    assert plan["bench"]["slow_down"] is None
    ignored = _ignored(plan)
    set_fields = [f for f in FIELDS if f.split(".")[1] in _variant(tmp_path, *edits).read_text()]
    assert set_fields and all(why in ignored[f] for f in set_fields)
    assert "slow-down-failure" not in [row["id"] for row in plan["differs"]]


def test_behind_dynamos_frontend_it_is_skipped_as_srtctl_does(tmp_path: Path) -> None:
    text = PROFILE.read_text()
    old = 'frontend:\n  type: "sglang"'
    assert old in text
    recipe = tmp_path / "dynamo.yaml"
    recipe.write_text(text.replace(old, 'frontend:\n  type: "dynamo"'))
    plan = _plan(recipe)
    assert plan["bench"]["slow_down"] is None
    assert all("sglang frontend (this one: dynamo)" in _ignored(plan)[f] for f in FIELDS)
    assert "slow-down-failure" not in [row["id"] for row in plan["differs"]]


def test_an_aggregated_job_has_no_decode_worker_to_slow_down(tmp_path: Path) -> None:
    recipe = _variant(
        tmp_path,
        (
            "  prefill_nodes: 1\n  prefill_workers: 1\n  decode_nodes: 0\n  decode_workers: 1\n"
            "  gpus_per_prefill: 2\n  gpus_per_decode: 2\n",
            "  agg_nodes: 1\n  agg_workers: 1\n",
        ),
        (
            '    prefill:\n      served-model-name: "sim/tiny-model"\n      tp-size: 2\n'
            '      disaggregation-mode: "prefill"\n    decode:\n      served-model-name: '
            '"sim/tiny-model"\n      tp-size: 2\n      disaggregation-mode: "decode"\n',
            '    aggregated:\n      served-model-name: "sim/tiny-model"\n      tp-size: 2\n',
        ),
    )
    plan = _plan(recipe)
    assert plan["bench"]["slow_down"] is None
    assert all("decode workers" in _ignored(plan)[f] for f in FIELDS)


@pytest.mark.slow
def test_a_simulated_run_slows_the_decode_worker_down_for_the_window(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    done = disagg("run", RECIPE, "--local", "--out", run_dir)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(one_measured_point(run_dir, "conc2").read_text())
    decode = json.loads((run_dir / "plan.json").read_text())
    posts = result["slow_down_posts"]
    assert [(p["forward_sleep_time"], p["ok"]) for p in posts] == [(0.05, True), (None, True)]
    assert posts[0]["url"] == posts[1]["url"] and posts[0]["url"].endswith("/slow_down")
    assert posts[1]["at_s"] >= 0.3  # cleared by the timer, not before
    assert decode["bench"]["slow_down"]["urls"] == ["${decode-0.url}/slow_down"]
    # the simulated SGLang worker honoured both calls; the prefill worker got none
    log = (run_dir / "logs" / "decode-0.log").read_text()
    assert "slow_down: forward_sleep_time=0.05" in log
    assert "slow_down: forward_sleep_time=None" in log
    assert "slow_down" not in (run_dir / "logs" / "prefill-0.log").read_text()

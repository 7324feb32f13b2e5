"""Simulated workers behind the REAL smg router: PD (1 prefill + 2 decode) and regular mode."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from disagg.engines.sim.testing import SimCluster, post_json, sse_events

FAST = ["--sim-decode-base-ms", "2", "--sim-prefill-base-ms", "1"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def pd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimCluster]:
    with SimCluster(
        tmp_path_factory.mktemp("pd"), prefill=1, decode=2, worker_args=FAST
    ) as cluster:
        yield cluster
    assert not any(_alive(p.pid) for p in cluster.procs), "a process outlived the cluster"


def _stream(url: str, i: int) -> dict[str, object]:
    status, raw = post_json(
        url + "/v1/completions",
        {
            "model": "sim-model",
            "prompt": " tok" * (64 + i),
            "max_tokens": 12,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    )
    assert status == 200, raw[:300]
    events = sse_events(raw)
    assert events[-1] == "[DONE]"
    texts = [e["choices"][0]["text"] for e in events[:-2]]
    return {"chunks": len(texts), "usage": events[-2]["usage"], "prompt": 64 + i}


def test_pd_requests_stream_through_the_router_with_usage(pd: SimCluster) -> None:
    before = {name: pd.stats(name) for name in pd.workers}
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda i: _stream(pd.url, i), range(24)))
    for result in results:
        usage = result["usage"]
        assert isinstance(usage, dict)
        assert usage["completion_tokens"] == 12 == result["chunks"]
        assert usage["prompt_tokens"] == result["prompt"]
    after = {name: pd.stats(name) for name in pd.workers}
    # the counters only (`mode` and the current `forward_sleep_time` are settings)
    delta = {
        n: {k: v - before[n][k] for k, v in after[n].items() if isinstance(v, int)} for n in after
    }
    # decode work is spread over both decode workers
    per_decode = [delta[n]["requests"] for n in ("decode-0", "decode-1")]
    assert sum(per_decode) == 24 and min(per_decode) > 0, per_decode
    assert sum(delta[n]["output_tokens"] for n in ("decode-0", "decode-1")) == 24 * 12
    # the prefill worker saw every room and handed each over through its bootstrap port
    assert delta["prefill-0"]["rooms_published"] == 24
    assert delta["prefill-0"]["handovers_served"] == 24
    assert sum(delta[n]["handovers_received"] for n in ("decode-0", "decode-1")) == 24


def test_pd_chat_and_non_streaming_go_through_too(pd: SimCluster) -> None:
    status, raw = post_json(
        pd.url + "/v1/chat/completions",
        {"model": "sim-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5},
    )
    assert status == 200, raw[:300]
    body = json.loads(raw)
    assert body["usage"]["completion_tokens"] >= 1
    assert body["choices"][0]["message"]["content"].startswith(" tok")


def test_regular_mode_routes_to_aggregated_workers(tmp_path: Path) -> None:
    with SimCluster(tmp_path, aggregated=2, worker_args=FAST) as cluster:
        results = [_stream(cluster.url, i) for i in range(6)]
        assert all(r["chunks"] == 12 for r in results)
        served = [cluster.stats(n)["requests"] for n in ("aggregated-0", "aggregated-1")]
        assert sum(served) == 6 and min(served) > 0
    assert not any(_alive(p.pid) for p in cluster.procs)


def test_pd_batch_of_prompts_gets_per_prompt_bootstrap_fields(pd: SimCluster) -> None:
    """The router sends bootstrap_host/port/room as lists for a list of prompts."""
    status, raw = post_json(
        pd.url + "/v1/completions",
        {"model": "sim-model", "prompt": [" tok tok", " tok"], "max_tokens": 3, "ignore_eos": True},
    )
    assert status == 200, raw[:300]
    body = json.loads(raw)
    assert [c["index"] for c in body["choices"]] == [0, 1]
    assert body["usage"]["prompt_tokens"] == 3


def test_router_refuses_token_id_prompts(pd: SimCluster) -> None:
    """A fact the load generator must respect: send text through the router, not token ids."""
    status, _ = post_json(pd.url + "/v1/completions", {"model": "sim-model", "prompt": [1, 2]})
    assert status == 400  # smg; sglang-router 0.3.2 answers 422

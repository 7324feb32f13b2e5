"""One simulated worker over real HTTP: the OpenAI surface a load generator relies on."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from disagg.engines.sim.testing import (
    Proc,
    free_port,
    http_get,
    post_json,
    sse_events,
    start_worker,
    wait_ready,
)

FAST = ["--sim-decode-base-ms", "1", "--sim-prefill-base-ms", "0.5"]


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    proc = start_worker(
        "aggregated-0",
        "aggregated",
        tmp_path_factory.mktemp("logs"),
        model="/models/sim-llama",
        args=[*FAST, "--served-model-name", "llama", "--unknown-flag", "x"],
    )
    try:
        wait_ready(proc, "/health")
        yield proc
    finally:
        proc.stop()


def _complete(proc: Proc, path: str = "/v1/completions", **body: object) -> tuple[int, bytes]:
    return post_json(proc.url + path, {"model": "llama", **body})


def test_streamed_completion_has_one_chunk_per_token_and_usage(worker: Proc) -> None:
    status, raw = _complete(
        worker,
        prompt=" tok tok tok tok",
        max_tokens=6,
        ignore_eos=True,
        stream=True,
        stream_options={"include_usage": True},
    )
    assert status == 200
    events = sse_events(raw)
    assert events[-1] == "[DONE]"
    usage_event = events[-2]
    assert usage_event["choices"] == []
    assert usage_event["usage"] == {"prompt_tokens": 4, "completion_tokens": 6, "total_tokens": 10}
    content = events[:-2]
    assert [e["choices"][0]["text"] for e in content] == [" tok"] * 6
    assert [e["choices"][0]["finish_reason"] for e in content][-2:] == [None, "length"]
    assert {e["model"] for e in events[:-1]} == {"llama"}


def test_stream_without_include_usage_has_no_usage_chunk(worker: Proc) -> None:
    _, raw = _complete(worker, prompt="hi", max_tokens=3, ignore_eos=True, stream=True)
    events = sse_events(raw)
    assert all("usage" not in e for e in events[:-1])
    assert len(events) == 4


def test_token_id_prompts_count_exactly_and_lists_give_one_choice_each(worker: Proc) -> None:
    status, raw = _complete(worker, prompt=list(range(37)), max_tokens=2, ignore_eos=True)
    assert status == 200
    assert json.loads(raw)["usage"]["prompt_tokens"] == 37
    _, raw = _complete(worker, prompt=["a b", "c d e f"], max_tokens=3, ignore_eos=True)
    body = json.loads(raw)
    assert [c["index"] for c in body["choices"]] == [0, 1]
    assert body["usage"] == {"prompt_tokens": 6, "completion_tokens": 6, "total_tokens": 12}


def test_chat_streams_deltas_with_role_first(worker: Proc) -> None:
    status, raw = _complete(
        worker,
        "/v1/chat/completions",
        messages=[{"role": "user", "content": "hello there"}],
        max_tokens=4,
        ignore_eos=True,
        stream=True,
        stream_options={"include_usage": True},
    )
    assert status == 200
    events = sse_events(raw)
    deltas = [e["choices"][0]["delta"] for e in events[:-2]]
    assert deltas[0] == {"role": "assistant", "content": " tok"}
    assert all(d == {"content": " tok"} for d in deltas[1:])
    assert events[0]["object"] == "chat.completion.chunk"
    assert events[-2]["usage"]["completion_tokens"] == 4


def test_non_streaming_responses_always_carry_usage(worker: Proc) -> None:
    _, raw = _complete(
        worker, "/v1/chat/completions", messages=[{"role": "user", "content": "x"}], max_tokens=2
    )
    body = json.loads(raw)
    assert body["object"] == "chat.completion"
    assert body["usage"]["completion_tokens"] == len(body["choices"][0]["message"]["content"]) // 4


def test_eos_is_pseudo_random_deterministic_and_respects_min_tokens(worker: Proc) -> None:
    lengths = []
    for i in range(12):
        _, raw = _complete(worker, prompt=f"prompt {i}", max_tokens=40, min_tokens=5)
        body = json.loads(raw)
        lengths.append(body["usage"]["completion_tokens"])
        reason = body["choices"][0]["finish_reason"]
        assert reason == ("length" if lengths[-1] == 40 else "stop")
    assert all(5 <= n <= 40 for n in lengths)
    assert len(set(lengths)) > 3  # not all the same length
    _, again = _complete(worker, prompt="prompt 3", max_tokens=40, min_tokens=5)
    assert json.loads(again)["usage"]["completion_tokens"] == lengths[3]


def test_native_generate_endpoint(worker: Proc) -> None:
    status, raw = post_json(
        worker.url + "/generate",
        {"input_ids": [1, 2, 3], "sampling_params": {"max_new_tokens": 3, "ignore_eos": True}},
    )
    assert status == 200
    body = json.loads(raw)
    assert body["meta_info"]["completion_tokens"] == 3
    assert body["meta_info"]["prompt_tokens"] == 3


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"prompt": 5}, "prompt must be"),
        ({"prompt": "x", "max_tokens": -1}, "max_tokens"),
        ({"prompt": "x", "n": 2}, "n > 1"),
        ({}, "prompt is required"),
    ],
)
def test_bad_requests_get_400_with_a_message(
    worker: Proc, body: dict[str, object], needle: str
) -> None:
    status, raw = post_json(worker.url + "/v1/completions", body)
    assert status == 400
    assert needle in json.loads(raw)["message"]


def test_info_endpoints_describe_the_worker(worker: Proc) -> None:
    for path in ("/health", "/health_generate"):
        assert http_get(worker.url + path)[0] == 200
    for path in ("/server_info", "/get_server_info"):
        info = json.loads(http_get(worker.url + path)[1])
        assert info["model_path"] == "/models/sim-llama"
        assert info["simulated"] is True
        assert info["disaggregation_mode"] == "null"
    for path in ("/model_info", "/get_model_info"):
        info = json.loads(http_get(worker.url + path)[1])
        assert info["is_generation"] is True and info["served_model_name"] == "llama"
    models = json.loads(http_get(worker.url + "/v1/models")[1])
    assert [m["id"] for m in models["data"]] == ["llama"]


def test_speculative_decoding_sends_several_tokens_per_chunk(tmp_path: Path) -> None:
    args = [*FAST, "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3"]
    proc = start_worker("spec", "aggregated", tmp_path, args=[*args, "--sim-accept-rate", "0.9"])
    try:
        wait_ready(proc, "/health")
        _, raw = post_json(
            proc.url + "/v1/completions",
            {"prompt": "x", "max_tokens": 60, "ignore_eos": True, "stream": True,
             "stream_options": {"include_usage": True}},
        )  # fmt: skip
        events = sse_events(raw)
        sizes = [len(e["choices"][0]["text"]) // 4 for e in events[:-2]]
        assert sum(sizes) == 60 == events[-2]["usage"]["completion_tokens"]
        assert max(sizes) == 4 and len(sizes) < 40
    finally:
        proc.stop()


def test_decode_worker_refuses_requests_without_a_room_and_times_out_a_missing_one(
    tmp_path: Path,
) -> None:
    prefill = start_worker("prefill-0", "prefill", tmp_path, args=FAST)
    decode = start_worker("decode-0", "decode", tmp_path, args=["--sim-handover-timeout-s", "0.5"])
    try:
        wait_ready(prefill, "/health")
        wait_ready(decode, "/health")
        status, raw = post_json(decode.url + "/v1/completions", {"prompt": "x"})
        assert status == 400 and b"bootstrap_room" in raw
        room = {
            "bootstrap_host": "127.0.0.1",
            "bootstrap_port": prefill.ports["bootstrap"],
            "bootstrap_room": 12345,
        }
        started = time.monotonic()
        status, raw = post_json(decode.url + "/v1/completions", {"prompt": "x", **room})
        assert status == 503 and b"12345" in raw
        assert time.monotonic() - started >= 0.4  # it waited out the handover timeout
        # the same room succeeds once the prefill worker has seen it (either order works)
        assert post_json(prefill.url + "/v1/completions", {"prompt": "x", **room})[0] == 200
        status, raw = post_json(decode.url + "/v1/completions", {"prompt": "x", **room})
        assert status == 200 and json.loads(raw)["usage"]["prompt_tokens"] == 1
    finally:
        decode.stop()
        prefill.stop()


def test_non_head_node_rank_idles_until_sigterm(tmp_path: Path) -> None:
    port = free_port()
    proc = start_worker(
        "decode-0-rank1", "decode", tmp_path, args=["--node-rank", "1", "--nnodes", "2"]
    )
    try:
        time.sleep(0.8)
        assert proc.popen.poll() is None
        assert proc.url and port  # it serves nothing: the head node does
        proc.popen.send_signal(signal.SIGTERM)
        assert proc.popen.wait(5) == 0
    finally:
        proc.stop()


def test_slow_down_sleeps_every_forward_step_until_cleared_as_sglang_does(worker: Proc) -> None:
    """SGLang's `/slow_down`: `forward_sleep_time` seconds more per forward step, null clears."""

    def stats() -> dict[str, object]:
        return dict(json.loads(http_get(worker.url + "/sim/stats")[1]))

    try:
        status, _ = post_json(worker.url + "/slow_down", {"forward_sleep_time": 0.05})
        assert status == 200
        assert stats()["forward_sleep_time"] == 0.05
        before = int(str(stats()["slowed_steps"]))
        started = time.monotonic()
        status, _ = _complete(worker, prompt=" tok tok", max_tokens=4, ignore_eos=True)
        assert status == 200
        # one prefill and at least three decode steps, each sleeping 50 ms more
        assert time.monotonic() - started >= 4 * 0.05
        slowed = int(str(stats()["slowed_steps"]))
        assert slowed - before >= 4
    finally:
        status, _ = post_json(worker.url + "/slow_down", {"forward_sleep_time": None})
    assert status == 200
    assert stats()["forward_sleep_time"] is None
    assert _complete(worker, prompt=" tok", max_tokens=3, ignore_eos=True)[0] == 200
    assert stats()["slowed_steps"] == slowed
    status, raw = post_json(worker.url + "/slow_down", {"forward_sleep_time": "fast"})
    assert status == 400 and b"forward_sleep_time" in raw

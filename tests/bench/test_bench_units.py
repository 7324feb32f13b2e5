"""The SSE parser, percentiles and the arrival schedule on their own."""

from __future__ import annotations

import json
import statistics

import pytest

from disagg.bench.metrics import percentile, summarize
from disagg.bench.runner import arrival_offsets
from disagg.bench.sse import StreamParser
from disagg.errors import DisaggError


def _ev(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _text(t: str) -> bytes:
    return _ev({"choices": [{"index": 0, "text": t, "finish_reason": None}], "usage": None})


def test_events_split_across_reads_get_one_timestamp_each() -> None:
    p = StreamParser(chat=False)
    one = len(_text("a"))
    stream = _text("a") + _text("b") + _text("c")
    p.feed(stream[:10], 1.0)
    p.feed(stream[10 : one + 5], 2.0)  # the first event completes here
    p.feed(stream[one + 5 :], 3.0)  # the second and third arrive in one read
    assert p.chunks == 3 and p.first == 2.0 and p.itls == [1.0, 0.0]


def test_empty_text_role_chunks_and_usage_are_not_tokens() -> None:
    p = StreamParser(chat=True)
    p.feed(_ev({"choices": [{"delta": {"role": "assistant", "content": ""}}]}), 1.0)
    p.feed(_ev({"choices": [{"delta": {"content": None, "reasoning_content": "x"}}]}), 2.0)
    p.feed(_ev({"choices": [{"delta": {"content": "hi"}}]}), 3.0)
    p.feed(_ev({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}), 4.0)
    p.feed(b"data: [DONE]\n\n", 4.0)
    assert p.chunks == 2 and p.first == 2.0 and p.last == 3.0
    assert p.usage_tokens == 2 and p.prompt_tokens == 5 and p.done


def test_crlf_comments_and_huge_events() -> None:
    p = StreamParser(chat=False)
    big = "x" * 2_000_000  # far beyond any line-length limit
    data = (b": keep-alive\r\n\r\n" + _text(big) + _text("y")).replace(b"\n\n", b"\r\n\r\n")
    for i in range(0, len(data), 65536):
        p.feed(data[i : i + 65536], float(i))
    assert p.chunks == 2 and p.error is None


def test_error_event_is_reported() -> None:
    p = StreamParser(chat=False)
    p.feed(_ev({"error": {"message": "out of memory"}}), 1.0)
    assert p.error is not None and "out of memory" in p.error


def test_text_fallback_reassembles_the_output() -> None:
    stream = _text("hello") + _text(" world") + b"data: [DONE]\n\n"
    p = StreamParser(chat=False, keep_text=True)
    p.feed(stream, 1.0)
    assert p.text() == "hello world"
    lean = StreamParser(chat=False)  # without a tokenizer nothing would read the text
    lean.feed(stream, 1.0)
    assert lean.text() is None and lean.chunks == 2


def test_percentiles_match_linear_interpolation() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 10.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 90) == pytest.approx(7.6)
    assert percentile([], 99) == 0.0
    stats = summarize(values, "ttft")
    assert stats["mean_ttft_ms"] == 4.0
    assert stats["std_ttft_ms"] == pytest.approx(statistics.pstdev(values))
    assert stats["p99_ttft_ms"] == pytest.approx(9.76)


@pytest.mark.parametrize("arrival", ["poisson", "gamma", "constant"])
def test_schedule_offers_the_requested_rate(arrival: str) -> None:
    offsets = arrival_offsets(4000, 50.0, arrival, burstiness=0.5, seed=3)  # type: ignore[arg-type]
    assert offsets[0] == 0.0 and offsets == sorted(offsets)
    assert 4000 / offsets[-1] == pytest.approx(50.0, rel=0.1)


def test_schedule_rejects_a_zero_rate() -> None:
    with pytest.raises(DisaggError):
        arrival_offsets(10, 0.0, "poisson")

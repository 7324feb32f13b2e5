"""The SSE parser: every event decoded, events split however the reads fall, a size cap."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disagg.bench.sse import StreamParser


def event(text: str, *, chat: bool = False) -> bytes:
    choice = {"delta": {"content": text}} if chat else {"text": text}
    return b"data: " + json.dumps({"choices": [choice], "usage": None}).encode() + b"\n\n"


USAGE = b'data: {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}\n\n'
DONE = b"data: [DONE]\n\n"
STREAM = event(" a") + b": keep-alive\n\n" + event(" b") + event(" c") + USAGE + DONE


def parse(reads: list[bytes], *, chat: bool = False, cap: int = 1 << 20) -> StreamParser:
    parser = StreamParser(chat, max_event_bytes=cap)
    for i, data in enumerate(reads):
        parser.feed(data, float(i))
    return parser


def test_a_whole_stream_in_one_read_counts_its_tokens_and_usage() -> None:
    parser = parse([STREAM])
    assert (parser.chunks, parser.usage_tokens, parser.prompt_tokens) == (3, 3, 7)
    assert parser.done and parser.error is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12), st.booleans())
def test_any_split_of_the_reads_gives_the_same_events(cuts: list[int], crlf: bool) -> None:
    stream = STREAM.replace(b"\n", b"\r\n") if crlf else STREAM
    bounds = sorted({0, len(stream), *(min(c, len(stream)) for c in cuts)})
    reads = [stream[a:b] for a, b in itertools.pairwise(bounds)]
    parser = parse(reads)
    assert (parser.chunks, parser.usage_tokens, parser.done, parser.error) == (3, 3, True, None)


@pytest.mark.parametrize(
    "bad",
    [
        b'data: {"choices": [{"text": " tok"',  # truncated JSON
        b"data: not json at all",
        b'data: ["a list", " tok"]',
    ],
)
def test_an_event_that_does_not_decode_is_an_error_not_a_token(bad: bytes) -> None:
    parser = parse([event(" a") + bad + b"\n\n" + event(" b") + DONE])
    assert parser.error is not None and "not a JSON object" in parser.error


def test_a_chat_stream_counts_content_and_reasoning_but_not_the_role_chunk() -> None:
    role = b'data: {"choices": [{"delta": {"role": "assistant", "content": ""}}]}\n\n'
    reasoning = b'data: {"choices": [{"delta": {"reasoning_content": "hm"}}]}\n\n'
    parser = parse([role + reasoning + event(" x", chat=True) + DONE], chat=True)
    assert parser.chunks == 2 and parser.error is None


def test_an_error_event_names_the_server_message() -> None:
    parser = parse([event(" a") + b'data: {"error": {"message": "out of memory"}}\n\n'])
    assert parser.error == "server error event: out of memory"


def test_an_event_over_the_cap_is_an_error_and_the_rest_is_ignored() -> None:
    big = b'data: {"choices": [{"text": "' + b"x" * 5000 + b'"}]}\n\n'
    reads = [event(" a"), *(big[i : i + 512] for i in range(0, len(big), 512)), event(" b")]
    parser = parse(reads, cap=4096)
    assert parser.error is not None and "over 4,096 bytes" in parser.error
    assert parser.chunks == 1  # the event before; nothing after the over-size one


def test_an_event_over_the_cap_in_one_read_is_an_error_too() -> None:
    big = b'data: {"choices": [{"text": "' + b"x" * 5000 + b'"}]}\n\n'
    parser = parse([big], cap=4096)
    assert parser.error is not None and parser.chunks == 0


def test_multi_line_data_is_joined_before_decoding() -> None:
    parser = parse([b'data: {"choices":\ndata: [{"text": " a"}]}\n\n' + DONE])
    assert parser.chunks == 1 and parser.error is None

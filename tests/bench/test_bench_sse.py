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


# Every event checked: whatever shape a stream's events take and however its reads fall,
# the parser says what decoding each event in full says (the shape only makes it cheaper).

TEXTS = st.one_of(
    st.sampled_from([" tok", "", 'a"b', "\\", "é", "\u2028", "\n", "tab\there", "\x00"]),
    st.text(max_size=6),
)
# raw JSON string bodies, some of them not valid: a bad escape, a raw control character,
# an unescaped quote, a lone backslash, bytes that are not UTF-8
RAW_TEXTS = st.sampled_from(
    [b"ok", b"\\x", b"a\x01b", b'a"b', b"a\\", b"\xff", b"\\u12", b"\\u00e9", b"\\\\", b""]
)


def reference(stream: bytes, chat: bool) -> tuple[int, int | None, bool, bool]:
    """(token events, usage tokens, [DONE] seen, any error) by decoding every event."""
    chunks, usage, done, error = 0, None, False, False
    for block in stream.replace(b"\r\n", b"\n").split(b"\n\n")[:-1]:
        lines = [line[5:].strip() for line in block.split(b"\n") if line.startswith(b"data:")]
        data = b"\n".join(lines)
        if not lines or not data:
            continue
        if data == b"[DONE]":
            done = True
            continue
        try:
            obj = json.loads(data.decode())
        except ValueError:
            obj = None
        if not isinstance(obj, dict):
            error = True
            continue
        choices = obj.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            holder = choices[0].get("delta") if chat else choices[0]
            if isinstance(holder, dict):
                text = (
                    holder.get("content") or holder.get("reasoning_content")
                    if chat
                    else holder.get("text")
                )
                chunks += isinstance(text, str) and text != ""
        if isinstance(obj.get("usage"), dict):
            usage = obj["usage"].get("completion_tokens")
        error = error or obj.get("error") is not None
    return chunks, usage, done, error


def token_event(text: str | bytes, ident: str, chat: bool) -> bytes:
    """A token event as servers write them; a bytes text goes in raw, valid or not."""
    body = text if isinstance(text, bytes) else json.dumps(text)[1:-1].encode()
    field = b'"delta":{"content":"%s"}' if chat else b'"text":"%s"'
    return (
        b'data: {"id":"%s","object":"chunk","choices":[{"index":0,' % ident.encode()
        + field % body
        + b',"finish_reason":null}],"usage":null}\n\n'
    )


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, bool]:
    chat = draw(st.booleans())
    ident = draw(st.sampled_from(["cmpl-1", "cmpl-2"]))
    events = []
    for _ in range(draw(st.integers(min_value=0, max_value=12))):
        kind = draw(st.sampled_from(["token"] * 6 + ["raw", "other", "comment", "bad", "id"]))
        if kind == "token":
            events.append(token_event(draw(TEXTS), ident, chat))
        elif kind == "raw":
            events.append(token_event(draw(RAW_TEXTS), ident, chat))
        elif kind == "other":  # the same text in another shape of event
            events.append(event(draw(TEXTS), chat=chat))
        elif kind == "comment":
            events.append(b": keep-alive\n\n")
        elif kind == "bad":
            events.append(b'data: {"choices": [{"text": " tok"\n\n')
        else:  # a server that changes its id mid-stream
            ident = draw(st.sampled_from(["cmpl-1", "cmpl-2", "x"]))
    stream = b"".join(events) + USAGE + DONE
    return (stream.replace(b"\n", b"\r\n") if draw(st.booleans()) else stream), chat


@settings(max_examples=400, deadline=None)
@given(streams(), st.lists(st.integers(min_value=0, max_value=4000), max_size=8), st.booleans())
def test_the_parser_says_what_decoding_every_event_says(
    drawn: tuple[bytes, bool], cuts: list[int], learnt: bool
) -> None:
    stream, chat = drawn
    bounds = sorted({0, len(stream), *(min(c, len(stream)) for c in cuts)})
    reads = [stream[a:b] for a, b in itertools.pairwise(bounds)]
    shape = None
    if learnt:  # a shape learnt by an earlier stream, as the client hands it on
        earlier = StreamParser(chat)
        earlier.feed(token_event(" x", "cmpl-1", chat), 0.0)
        shape = earlier.shape
        assert shape is not None
    parser = StreamParser(chat, max_event_bytes=1 << 20, shape=shape)
    for i, data in enumerate(reads):
        parser.feed(data, float(i))
    chunks, usage, done, error = reference(stream, chat)
    assert (parser.chunks, parser.usage_tokens, parser.done) == (chunks, usage, done)
    assert (parser.error is not None) == error
    assert len(parser.itls) == max(0, chunks - 1)


def test_an_event_of_the_learnt_shape_with_a_bad_text_is_an_error_in_any_read() -> None:
    good = token_event(" a", "cmpl-1", False)
    for bad in (b"\\x", b"a\x01", b'a"b', b"\xff\xfe"):
        broken = token_event(bad, "cmpl-1", False)
        for reads in ([good + good + broken + good], [good, good, broken, good]):
            parser = parse([*reads, DONE])
            assert parser.error is not None, (bad, reads)
            assert "not a JSON object" in parser.error
            assert parser.chunks == 3  # the good events only


def test_a_whole_answer_in_one_read_times_its_tokens_with_that_read() -> None:
    events = b"".join(token_event(f" t{i}", "cmpl-1", False) for i in range(50))
    parser = parse([token_event(" first", "cmpl-1", False), events + USAGE + DONE])
    assert parser.chunks == 51 and parser.error is None
    assert (parser.first, parser.last) == (0.0, 1.0)
    assert parser.itls == [1.0] + [0.0] * 49  # one gap per event, not per read


def test_a_chat_answer_in_one_read_after_its_role_chunk_counts_with_a_learnt_shape() -> None:
    role = b'data: {"choices": [{"delta": {"role": "assistant", "content": ""}}]}\n\n'
    answer = b"".join(token_event(f" t{i}", "chat-1", True) for i in range(40))
    first = StreamParser(True)
    first.feed(token_event(" x", "chat-1", True), 0.0)  # an earlier stream learnt the shape
    parser = StreamParser(True, shape=first.shape)
    parser.feed(role + answer + USAGE + DONE, 1.0)
    assert (parser.chunks, parser.usage_tokens, parser.done, parser.error) == (40, 3, True, None)
    assert parser.itls == [0.0] * 39

"""The HTTP/1.1 client's chunked decoding: the body whole and exact, however the chunks
are cut and the reads fall, and a malformed chunk size an error, not a misread body."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disagg.bench.http1 import HttpError, _Exchange

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


class Sink:
    last = 0.0
    abandoned = False
    error = None

    def __init__(self) -> None:
        self.body: list[bytes] = []

    def feed(self, data: bytes, now: float) -> None:
        self.body.append(data)


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def receive(loop: asyncio.AbstractEventLoop, reads: list[bytes]) -> tuple[bytes, int]:
    """The body the sink got, and how many bytes it took until the exchange said the
    response was complete (-1: never); nothing is fed after that, as on a connection."""
    sink = Sink()
    exchange = _Exchange(sink, loop.create_future())
    taken = 0
    for data in reads:
        taken += len(data)
        if exchange.feed(data, 0.0):
            return b"".join(sink.body), taken
    return b"".join(sink.body), -1


def chunked(pieces: list[bytes], extensions: list[bool]) -> bytes:
    out = b""
    for piece, extension in zip(pieces, itertools.cycle(extensions or [False]), strict=False):
        out += b"%x%s\r\n%s\r\n" % (len(piece), b";name=x" if extension else b"", piece)
    return out + b"0\r\n\r\n"


PIECES = st.lists(
    st.one_of(
        st.binary(min_size=1, max_size=40),
        st.sampled_from([b"data: {}\n\n", b"a\r\nb", b"\r\n", b"0\r\n\r\n", b"ff\r\n"]),
    ),
    max_size=60,  # past the size from which a read is de-chunked in a few calls
)


@settings(max_examples=300, deadline=None)
@given(
    PIECES,
    st.lists(st.booleans(), max_size=3),
    st.lists(st.integers(min_value=0, max_value=3000), max_size=6),
)
def test_any_chunks_in_any_reads_give_the_body_and_end_with_the_last_chunk(
    loop: asyncio.AbstractEventLoop, pieces: list[bytes], extensions: list[bool], cuts: list[int]
) -> None:
    response = HEAD + chunked(pieces, extensions)
    bounds = sorted({0, len(response), *(min(c, len(response)) for c in cuts)})
    reads = [response[a:b] for a, b in itertools.pairwise(bounds)]
    body, taken = receive(loop, reads)
    assert body == b"".join(pieces)
    # complete with the read that brought the last chunk's size line, `0` CRLF
    assert taken == min(b for b in bounds if b >= len(response) - 2)


def test_a_whole_answer_in_one_read_with_trailers_after_the_last_chunk(
    loop: asyncio.AbstractEventLoop,
) -> None:
    pieces = [b'data: {"choices": []}\n\n'] * 100
    response = HEAD + chunked(pieces, [])[:-2] + b"X-Trailer: 1\r\n\r\n"
    body, taken = receive(loop, [response])
    assert body == b"".join(pieces) and taken == len(response)


@pytest.mark.parametrize("size", [b"-5", b"zz", b"", b"1 2"])
@pytest.mark.parametrize("many", [False, True])
def test_a_malformed_chunk_size_is_an_error(
    loop: asyncio.AbstractEventLoop, size: bytes, many: bool
) -> None:
    good = b"5\r\nhello\r\n" * (300 if many else 1)
    with pytest.raises(HttpError, match="malformed chunked encoding"):
        receive(loop, [HEAD + good + size + b"\r\nhello\r\n" + good + b"0\r\n\r\n"])


@pytest.mark.parametrize("sizes", [[1], [5, 300, 2], [4000, 1, 70]])
def test_one_chunk_per_read_as_a_server_writing_each_token_sends_them(
    loop: asyncio.AbstractEventLoop, sizes: list[int]
) -> None:
    pieces = [bytes([65 + i]) * size for i, size in enumerate(sizes)]
    framed = [b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces]
    body, taken = receive(loop, [HEAD, *framed, b"0\r\n\r\n"])
    assert body == b"".join(pieces)
    assert taken == len(HEAD) + sum(map(len, framed)) + 5

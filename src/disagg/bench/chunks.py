"""HTTP/1.1 chunked transfer coding, as the load generator's client reads it.

Each chunk is `SIZE (hex digits, optional ;extensions) CRLF PAYLOAD CRLF`; a chunk of
size 0 ends the body (trailers after it are ignored).
"""

from __future__ import annotations

from itertools import repeat

MALFORMED = "malformed chunked encoding from the server"


def whole_chunks(data: bytes, out: list[bytes]) -> tuple[int, bool]:
    """The whole chunks at the start of `data` in a few calls, not a step per chunk:
    (where they end, whether the last chunk was among them). Each chunk is `SIZE CRLF
    PAYLOAD CRLF`, so splitting at CRLF gives sizes and payloads in turn where no
    payload holds a CRLF; a size that is not that of its payload (a payload holding a
    CRLF, a chunk extension) leaves every chunk to the step-by-step way."""
    lines = data.split(b"\r\n")
    pairs = (len(lines) - 1) // 2  # a size line and a payload, each followed by CRLF
    if not pairs:
        return 0, False
    sizes = lines[0 : 2 * pairs : 2]
    payloads = lines[1 : 2 * pairs : 2]
    try:
        lengths = list(map(int, sizes, repeat(16)))
    except ValueError:
        return 0, False
    last = 0 in lengths
    if last:  # the last chunk: what follows it (trailers) is ignored
        pairs = lengths.index(0)
        del lengths[pairs:], payloads[pairs:]
    if lengths != list(map(len, payloads)):  # a negative size never matches a length
        return 0, False
    out += payloads
    return sum(map(len, lines[: 2 * pairs])) + 4 * pairs, last


def chunk_size(line: bytes) -> int:
    """The size on a chunk-size line (hex digits, then optional `;extensions`)."""
    try:
        length = int(line, 16)
    except ValueError:
        try:
            length = int(line.split(b";", 1)[0], 16)
        except ValueError as exc:
            raise ValueError(MALFORMED) from exc
    if length < 0:  # `int` takes a sign; a chunk size has none
        raise ValueError(MALFORMED)
    return length

"""How fast does the SSE parser take bytes in? Prints rates; asserts nothing.

Two inputs, each fed in 64 KiB reads as a socket delivers them:
- one large event (a server that sends a whole answer, or garbage, as one event):
  the parser before this one grew its buffer by concatenation and searched it again
  on every read, so its time grew with the square of the event's size; it is shown
  here, reimplemented in a few lines (`concatenating`), at sizes it can finish;
- many ordinary token events (the hot path), where every event is now decoded.

    .venv/bin/python benchmarks/sse_parse.py [--mb 64]
"""

from __future__ import annotations

import argparse
import json
import time

from disagg.bench.sse import StreamParser

READ = 64 * 1024


class Concatenating:
    """The earlier buffer handling: the unfinished event is joined with every new read."""

    def __init__(self) -> None:
        self.tail = b""
        self.events = 0

    def feed(self, data: bytes, now: float) -> None:
        data = self.tail + data
        start = 0
        while (end := data.find(b"\n\n", start)) >= 0:
            self.events += 1
            start = end + 2
        self.tail = data[start:]


def big_event(size: int) -> bytes:
    return b'data: {"choices": [{"text": "' + b"x" * size + b'"}]}\n\n'


def rate(parser: object, stream: bytes) -> float:
    feed = parser.feed  # type: ignore[attr-defined]
    t0 = time.perf_counter()
    for at in range(0, len(stream), READ):
        feed(stream[at : at + READ], 0.0)
    return len(stream) / (time.perf_counter() - t0) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=64, help="size of the largest single event")
    args = ap.parse_args()
    print(f"{'input':<34} {'parser':<14} {'MB/s':>9}")
    for mb in (1, 4, 16, args.mb):
        stream = big_event(mb * 1024 * 1024)
        uncapped = StreamParser(False, max_event_bytes=len(stream))
        print(f"{f'one {mb} MB event':<34} {'linear':<14} {rate(uncapped, stream):>9.1f}")
        if mb <= 16:
            print(f"{'':<34} {'concatenating':<14} {rate(Concatenating(), stream):>9.1f}")
        capped = StreamParser(False)
        print(f"{'':<34} {'capped':<14} {rate(capped, stream):>9.1f}  ({capped.error})")
    token = b"data: " + json.dumps({"choices": [{"text": " tok"}], "usage": None}).encode()
    stream = (token + b"\n\n") * 200_000
    parser = StreamParser(False)
    mbs = rate(parser, stream)
    events_s = parser.chunks / (len(stream) / mbs / 1e6)
    print(f"{'200,000 token events':<34} {'linear':<14} {mbs:>9.1f}  ({events_s:,.0f} events/s)")


if __name__ == "__main__":
    main()

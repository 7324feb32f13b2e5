"""What a simulated worker's scheduler serves: requests, the streams they feed, counters."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field


class Stream:
    """Where one HTTP handler receives its requests' events: a list plus one wake-up future."""

    __slots__ = ("_loop", "_waiter", "events")

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._waiter: asyncio.Future[None] | None = None
        self.events: list[Event] = []

    def push(self, event: Event) -> None:
        self.events.append(event)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def take(self) -> list[Event]:
        """Every event since the last call; waits until there is at least one."""
        if not self.events:
            self._waiter = self._loop.create_future()
            await self._waiter
        events, self.events = self.events, []
        return events


@dataclass(slots=True)
class Event:
    """`tokens` new output tokens for choice `index`; `finish` set on the last one."""

    index: int
    tokens: int
    finish: str | None = None


@dataclass(slots=True, eq=False)
class SimRequest:
    """One sequence inside the engine."""

    index: int
    prompt_tokens: int
    max_tokens: int  # the request's limit ("length")
    stop_at: int  # where the pseudo-random EOS falls ("stop"), >= 1
    stream: Stream
    remaining_prefill: int = 0
    generated: int = 0
    reported: int = 0  # tokens the stream has been sent
    sent_at: float = 0.0  # loop time of the stream's last chunk
    start_step: int = 0  # the decode step count when it joined the batch
    cancelled: bool = False
    done: bool = False
    room: int | None = None

    @property
    def target(self) -> int:
        return min(self.max_tokens, self.stop_at)

    @property
    def finish_reason(self) -> str:
        return "length" if self.max_tokens <= self.stop_at else "stop"


@dataclass
class Stats:
    """Counters exposed on `/sim/stats`: how much work this worker actually did."""

    requests: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    prefill_steps: int = 0
    decode_steps: int = 0
    slowed_steps: int = 0  # steps that slept SGLang's `/slow_down` forward_sleep_time
    busy_s: float = 0.0
    max_batch: int = 0
    first_step_at: float | None = None  # loop time the first step started
    last_step_at: float = 0.0  # loop time the last step ended
    extra: dict[str, int] = field(default_factory=dict)

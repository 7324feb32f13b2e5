"""The simulated worker's HTTP server (aiohttp on uvloop): what the router and clients talk to.

Besides generation and SGLang's info endpoints: SGLang's `/slow_down`, `/start_profile` and
`/stop_profile` (`sim.profile`), and `/sim/stats` (work counters, which tests read to see
which worker did what). Response headers go out only with the first token, so a decode
worker's hand-over that times out is a plain HTTP 503.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import signal
import time
from functools import partial
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMessage

from disagg.engines.sim import info
from disagg.engines.sim.args import EngineArgs
from disagg.engines.sim.handover import BootstrapServer, HandoverClient, HandoverError
from disagg.engines.sim.profile import Profiler
from disagg.engines.sim.protocol import BadRequest, GenRequest, Kind, Renderer, error_body, parse
from disagg.engines.sim.scheduler import Scheduler, SimRequest, Stream
from disagg.engines.sim.timing import TimingModel

log = logging.getLogger("disagg.sim")

SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}


class _DropHttp2Probe(logging.Filter):
    """sglang-router first probes workers for gRPC (an HTTP/2 preface), which aiohttp logs
    with a traceback: one debug line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, BadHttpMessage):
            log.debug("rejected a non-HTTP/1.1 probe (the router's gRPC detection)")
            return False
        return True


def make_timing(args: EngineArgs) -> TimingModel:
    """The made-up timing curve, or AIConfigurator's model when the worker is predicted."""
    if args.predict is None:
        return TimingModel(args)
    from disagg.predict import require
    from disagg.predict.timing import PredictedTiming

    require()
    return PredictedTiming(args, args.predict)


class SimWorker:
    """One simulated worker: scheduler, optional bootstrap side, HTTP handlers."""

    def __init__(self, args: EngineArgs) -> None:
        self.args = args
        self.timing = make_timing(args)
        self.bootstrap: BootstrapServer | None = None
        self.handover: HandoverClient | None = None
        if args.mode == "prefill":
            self.bootstrap = BootstrapServer(
                us_per_token=self.timing.kv_transfer_us_per_token,
                ttl_s=max(args.sim.handover_timeout_s * 2, 30.0),
            )
        if args.mode == "decode":
            self.handover = HandoverClient(timeout_s=args.sim.handover_timeout_s)
        self.scheduler = Scheduler(self.timing, on_prefilled=self._publish)
        self.started = time.time()
        self.failed_handovers = 0
        stats = self.scheduler.stats
        self.profiler = Profiler(lambda: stats.prefill_steps + stats.decode_steps)
        self._task: asyncio.Task[None] | None = None

    def _publish(self, req: SimRequest) -> None:
        if self.bootstrap is not None and req.room is not None:
            self.bootstrap.publish(req.room, req.prompt_tokens)

    def app(self) -> web.Application:
        app = web.Application(client_max_size=512 * 1024**2)
        get, post = app.router.add_get, app.router.add_post
        post("/v1/completions", partial(self._handle, kind="completions"))
        post("/v1/chat/completions", partial(self._handle, kind="chat"))
        post("/generate", partial(self._handle, kind="generate"))
        for path in ("/health", "/health_generate", "/flush_cache"):
            get(path, self._health)
        post("/flush_cache", self._health)
        for path in ("/server_info", "/get_server_info"):
            get(path, self._server_info)
        for path in ("/model_info", "/get_model_info"):
            get(path, self._model_info)
        get("/v1/models", self._models)
        for add in (get, post):
            add("/slow_down", self._slow_down)
            add("/start_profile", self._start_profile)
            add("/stop_profile", self._stop_profile)
        get("/sim/stats", self._stats)
        app.on_startup.append(self._on_startup)
        app.on_cleanup.append(self._on_cleanup)
        return app

    async def _on_startup(self, _app: web.Application) -> None:
        self._task = asyncio.create_task(self.scheduler.run())
        if self.bootstrap is not None:
            await self.bootstrap.start(self.args.host, self.args.bootstrap_port)

    async def _on_cleanup(self, _app: web.Application) -> None:
        if self._task is not None:
            self._task.cancel()
        if self.bootstrap is not None:
            await self.bootstrap.close()
        if self.handover is not None:
            await self.handover.close()

    async def _health(self, _request: web.Request) -> web.Response:
        return web.Response(text="")

    async def _server_info(self, _request: web.Request) -> web.Response:
        return web.json_response(info.server_info(self.args, self.timing))

    async def _model_info(self, _request: web.Request) -> web.Response:
        return web.json_response(info.model_info(self.args))

    async def _models(self, _request: web.Request) -> web.Response:
        return web.json_response(info.models(self.args, self.started))

    def stats(self) -> dict[str, Any]:
        s = self.scheduler.stats
        return {
            "mode": self.args.mode,
            "requests": s.requests,
            "prompt_tokens": s.prompt_tokens,
            "output_tokens": s.output_tokens,
            "prefill_steps": s.prefill_steps,
            "decode_steps": s.decode_steps,
            "slowed_steps": s.slowed_steps,
            "forward_sleep_time": self.scheduler.forward_sleep_s,
            "max_batch": s.max_batch,
            "busy_s": round(s.busy_s, 6),
            # wall time from the first step's start to the last step's end
            "active_s": round(s.last_step_at - s.first_step_at, 6) if s.first_step_at else 0.0,
            "running": len(self.scheduler.running),
            "queued": self.scheduler.queued,
            "rooms_published": self.bootstrap.published if self.bootstrap else 0,
            "handovers_served": self.bootstrap.served if self.bootstrap else 0,
            "handovers_received": self.handover.received if self.handover else 0,
            "handovers_failed": self.failed_handovers,
            **self.profiler.stats(),
        }

    async def _stats(self, _request: web.Request) -> web.Response:
        return web.json_response(self.stats())

    async def _slow_down(self, request: web.Request) -> web.Response:
        """SGLang's testing endpoint: `forward_sleep_time` seconds of sleep per forward
        step from now on; null (or absent) clears it."""
        try:
            body = await request.json() if request.can_read_body else {}
        except ValueError as exc:
            return _error(f"invalid JSON: {exc}", 400)
        value = body.get("forward_sleep_time") if isinstance(body, dict) else None
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or value < 0
        ):
            message = f"forward_sleep_time must be a non-negative number or null, not {value!r}"
            return _error(message, 400)
        self.scheduler.forward_sleep_s = float(value) if value is not None else None
        log.info("slow_down: forward_sleep_time=%s", value)
        return web.json_response(None)

    async def _start_profile(self, request: web.Request) -> web.Response:
        try:
            body = await request.json() if request.can_read_body else {}
        except ValueError as exc:
            return _error(f"invalid JSON: {exc}", 400)
        status, text = self.profiler.start(body)
        if status == 200:
            log.info("start_profile: %s", json.dumps(body, sort_keys=True))
        return web.Response(status=status, text=text)

    async def _stop_profile(self, _request: web.Request) -> web.Response:
        status, text = self.profiler.stop()
        log.info("stop_profile: HTTP %d %s", status, text.strip())
        return web.Response(status=status, text=text)

    async def _handle(self, request: web.Request, kind: Kind) -> web.StreamResponse:
        try:
            body = await request.json()
            req = parse(
                kind,
                body,
                default_max_tokens=self.args.sim.default_max_tokens,
                model=self.args.model_name,
            )
            if self.args.mode == "decode" and (
                req.rooms is None or req.bootstrap_hosts is None or req.bootstrap_ports is None
            ):
                raise BadRequest(
                    "a decode worker needs bootstrap_host, bootstrap_port and bootstrap_room "
                    "(send requests through the router)"
                )
        except BadRequest as exc:
            return _error(str(exc), 400)
        except ValueError as exc:
            return _error(f"invalid JSON: {exc}", 400)

        stream = Stream()
        seqs = self._sequences(req, stream)
        try:
            if self.handover is not None:
                try:
                    await self._receive_kv(req, seqs)
                except HandoverError as exc:
                    self.failed_handovers += 1
                    log.warning("%s", exc)
                    return _error(str(exc), 503)
                for seq in seqs:
                    self.scheduler.submit_prefilled(seq)
            else:
                for seq in seqs:
                    self.scheduler.submit(seq)
            if req.stream:
                return await self._stream(request, req, seqs, stream)
            return await self._whole(req, seqs, stream)
        finally:
            for seq in seqs:
                if not seq.done:
                    seq.cancelled = True

    def _sequences(self, req: GenRequest, stream: Stream) -> list[SimRequest]:
        prefill_only = self.args.mode == "prefill"
        return [
            SimRequest(
                index=i,
                prompt_tokens=prompt.tokens,
                max_tokens=1 if prefill_only else req.max_tokens,
                stop_at=1 if prefill_only else req.stop_at(i, self.args.sim.seed),
                stream=stream,
                room=req.rooms[i] if req.rooms else None,
            )
            for i, prompt in enumerate(req.prompts)
        ]

    async def _receive_kv(self, req: GenRequest, seqs: list[SimRequest]) -> None:
        handover, hosts, ports = self.handover, req.bootstrap_hosts, req.bootstrap_ports
        assert handover is not None and hosts is not None and ports is not None
        counts = await asyncio.gather(
            *(handover.fetch(hosts[i], ports[i], seq.room or 0) for i, seq in enumerate(seqs))
        )
        for seq, tokens in zip(seqs, counts, strict=True):
            seq.prompt_tokens = tokens

    async def _stream(
        self, request: web.Request, req: GenRequest, seqs: list[SimRequest], stream: Stream
    ) -> web.StreamResponse:
        render = Renderer(req)
        generated = [0] * len(seqs)
        open_choices = len(seqs)
        response: web.StreamResponse | None = None
        try:
            while open_choices:
                events = await stream.take()
                parts = []
                for ev in events:
                    generated[ev.index] += ev.tokens
                    if ev.finish is not None:
                        open_choices -= 1
                    if ev.tokens or ev.finish is not None:
                        parts.append(
                            render.chunk(ev.index, ev.tokens, ev.finish, generated[ev.index])
                        )
                if response is None:
                    response = web.StreamResponse(headers=SSE_HEADERS)
                    await response.prepare(request)
                await response.write(b"".join(parts))
            tail = render.usage_chunk(sum(generated)) if req.include_usage else b""
            assert response is not None
            await response.write(tail + b"data: [DONE]\n\n")
            await response.write_eof()
        except (ConnectionResetError, asyncio.CancelledError):
            log.debug("client went away mid-stream")
            raise
        return response

    async def _whole(self, req: GenRequest, seqs: list[SimRequest], stream: Stream) -> web.Response:
        generated = [0] * len(seqs)
        reasons = ["length"] * len(seqs)
        open_choices = len(seqs)
        while open_choices:
            for ev in await stream.take():
                generated[ev.index] += ev.tokens
                if ev.finish is not None:
                    reasons[ev.index] = ev.finish
                    open_choices -= 1
        return web.json_response(Renderer(req).whole(generated, reasons))


def _error(message: str, status: int) -> web.Response:
    return web.json_response(error_body(message, status), status=status)


async def serve(args: EngineArgs, *, ready: asyncio.Event | None = None) -> None:
    """Run the worker until SIGTERM/SIGINT (or cancellation)."""
    logging.getLogger("aiohttp.server").addFilter(_DropHttp2Probe())
    worker = SimWorker(args)
    runner = web.AppRunner(worker.app(), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, args.host, args.port, backlog=4096, shutdown_timeout=0.5)
    await site.start()
    # Start-up objects never die; keep the collector from re-scanning them on every pass.
    gc.freeze()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    bootstrap = f" bootstrap={args.host}:{args.bootstrap_port}" if args.mode == "prefill" else ""
    log.info(
        "simulated %s worker ready on http://%s:%d%s (model %s, tp=%d dp=%d, %d GPU(s))",
        args.mode,
        args.host,
        args.port,
        bootstrap,
        args.model_name,
        args.tp_size,
        args.dp_size,
        args.gpus,
    )
    if ready is not None:
        ready.set()
    try:
        await stop.wait()
    finally:
        await runner.cleanup()

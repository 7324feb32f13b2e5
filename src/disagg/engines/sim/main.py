"""Entry point of the simulated worker: `disagg sim-engine` or `python -m disagg.engines.sim`.

`python -m disagg.engines.sim` starts faster (it skips the CLI's other commands), which
is why plans for the simulated engine use it.
"""

from __future__ import annotations

import logging
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from disagg.engines.sim.args import EngineArgs, parse_args
from disagg.errors import DisaggError

log = logging.getLogger("disagg.sim")


def _standby(args: EngineArgs) -> int:
    """A non-head node of a multi-node worker: nothing to serve, stay alive until told to stop."""
    log.info(
        "node rank %d of %d: standing by for the head node (%s); SIGTERM stops it",
        args.node_rank,
        args.nnodes,
        args.dist_init_addr or "no --dist-init-addr",
    )

    def stop(_sig: int, _frame: FrameType | None) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while True:
        signal.pause()


def run(argv: Sequence[str]) -> int:
    """Parse SGLang-style flags and serve; returns the process exit code."""
    try:
        args = parse_args(argv)
    except DisaggError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if args.ignored:
        log.debug("ignored flags: %s", " ".join(args.ignored))
    if args.node_rank > 0:
        return _standby(args)

    import uvloop

    from disagg.engines.sim.server import serve

    try:
        uvloop.run(serve(args))
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    except DisaggError as exc:  # a predicted worker whose model cannot be built
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0

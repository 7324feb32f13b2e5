"""`python -m disagg.engines.sim [SGLang launch_server flags] [--sim-* flags]`."""

import sys

from disagg.engines.sim.main import run

sys.exit(run(sys.argv[1:]))

"""`python -m disagg.engines.sim [SGLang launch_server flags] [--sim-* flags]`."""

from disagg.engines.sim.main import main

main()

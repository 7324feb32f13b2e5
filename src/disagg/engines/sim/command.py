"""The simulated worker's command for any engine, from its adapter's reading of the worker.

A simulated vLLM or TRT-LLM worker gets the simulated engine's own flags (SGLang's
spellings, see `args`) carrying what the adapter read from the engine's settings:
parallel sizes, batch limits, chunk size, speculative decoding, context length.
"""

from __future__ import annotations

from disagg.engines.worker import SimReading, WorkerSpec

SIM_PREFIX = ("${run.python}", "-m", "disagg", "sim-engine")


def sim_worker_argv(
    reading: SimReading, spec: WorkerSpec, *, served_name: str, host: str
) -> list[str]:
    par = reading.parallel
    argv = [*SIM_PREFIX, "--model-path", "${model.path}", "--served-model-name", served_name]
    if spec.mode is not None:
        argv += ["--disaggregation-mode", spec.mode]
    argv += ["--tp-size", str(par.tp), "--dp-size", str(par.dp), "--ep-size", str(par.ep)]
    argv += ["--pp-size", str(par.pp)]
    # The simulator counts data-parallel ranks as GPUs unless attention-DP shares them.
    if par.dp_attention or (par.dp > 1 and not par.replicas_use_gpus):
        argv.append("--enable-dp-attention")
    optional = {
        "--max-running-requests": reading.max_running_requests,
        "--chunked-prefill-size": reading.chunked_prefill_size,
        "--max-prefill-tokens": reading.max_prefill_tokens,
        "--cuda-graph-max-bs": reading.cuda_graph_max_bs,
        "--context-length": reading.context_length,
    }
    for flag, value in optional.items():
        if value is not None:
            argv += [flag, str(value)]
    if reading.speculative_algorithm:
        argv += ["--speculative-algorithm", reading.speculative_algorithm]
        if reading.speculative_num_steps is not None:
            argv += ["--speculative-num-steps", str(reading.speculative_num_steps)]
    argv += ["--host", host, "--port", "${self.http_port}"]
    if spec.mode == "prefill":
        argv += ["--disaggregation-bootstrap-port", "${self.bootstrap_port}"]
    if spec.multi_node:
        argv += ["--dist-init-addr", "${self.addr}", "--nnodes", "${self.nnodes}"]
        argv += ["--node-rank", "${self.node_rank}"]
    return argv

"""The plan's benchmark side: the load points and how the load generator runs them."""

# No `from __future__ import annotations` here: pydantic would compile and evaluate
# each field's annotation string when the class is made, a cost every command pays.

from typing import Literal

from pydantic import Field

from disagg.model_defaults import empty_dict, empty_list
from disagg.plan.role_model import Strict


class PointPlan(Strict):
    """One measured load level."""

    concurrency: int | None = None
    request_rate: float | None = None  # requests/s; None = as fast as concurrency allows
    num_prompts: int
    warmup_requests: int = 0
    label: str | None = None  # a point that is not a load level (a trace replay): its key

    @property
    def key(self) -> str:
        """Stable identifier used in result file names and for resume."""
        if self.label is not None:
            return self.label
        if self.request_rate is not None:
            rate = f"rate{self.request_rate:g}"
            return f"{rate}_conc{self.concurrency}" if self.concurrency else rate
        return f"conc{self.concurrency}" if self.concurrency else "concinf"


class TracePlan(Strict):
    """A timestamped request trace to replay (Mooncake trace format, one JSON object a line)."""

    path: str  # as resolved at plan time (a mount's host side); read inside the job
    written: str | None = None  # `benchmark.trace_file` as the recipe gives it
    # On the cluster, not on the planning machine: read and checked only inside the job,
    # before any role starts; until then the points' `num_prompts` and isl/osl are 0.
    at_run_time: bool = False
    block_tokens: int = 512  # tokens each `hash_ids` entry stands for (Mooncake's block size)
    speedup: float = 1.0  # >1 replays faster than recorded


class SlowDownPlan(Strict):
    """sa-bench's SGLang `/slow_down` around each measured window (srtctl's
    `benchmark.slow_down_*`): after the point's warm-up, POST `{"forward_sleep_time":
    sleep_s}` to every target, then `{"forward_sleep_time": null}` after `wait_s`
    seconds or when the point ends, whichever comes first."""

    sleep_s: float = Field(gt=0)  # seconds each forward step of a target sleeps
    wait_s: float = Field(gt=0)  # seconds until the slow-down is cleared
    # `${decode-0.url}/slow_down`-style templates: one per decode worker's leader
    urls: list[str] = Field(default_factory=empty_list)


class ProfileTarget(Strict):
    """One worker leader the benchmark starts and stops a profile on (srtctl's
    `profiling.sh`: `start_profile_on_worker` / `stop_profile_on_worker`)."""

    role: str  # the worker role (`prefill-0`)
    mode: Literal["prefill", "decode", "agg"]
    # `${prefill-0.url}/start_profile` (SGLang's router), or the worker's system port's
    # `/engine/start_profile` (Dynamo); bound at run time
    start_url: str
    stop_url: str
    output_dir: str  # where the worker writes its trace, as the worker sees the run directory
    start_step: int
    num_steps: int


class ProfilingPlan(Strict):
    """The recipe's `profiling:` on the benchmark side: before the first point measured, POST
    `{"output_dir", "start_step", "num_steps", "activities"}` to every target; after the
    last (or when the sweep ends early), POST `{}` to each stop URL
    (`disagg.workloads.profiling`)."""

    type: Literal["nsys", "torch"]
    activities: list[str]  # torch: ["CPU", "GPU"]; nsys: ["CUDA_PROFILER"]
    targets: list[ProfileTarget] = Field(default_factory=empty_list)


class BenchCommand(Strict):
    """`benchmark.type: custom`: the recipe's own client, run in the bench role. `argv` is
    `bash -lc COMMAND`; the bench role carries the environment (the recipe's `benchmark.env`
    plus the documented contract variables, see docs/benchmarks.md)."""

    argv: list[str]
    results_dir: str  # `${run.dir}/...`: where the command is asked to write result files
    env: dict[str, str] = Field(default_factory=empty_dict)  # benchmark.env as written
    # sa-bench-style load fields the recipe set (REQ_RATE, NUM_PROMPTS_MULT, ...), for the command
    load_env: dict[str, str] = Field(default_factory=empty_dict)
    container_image: str | None = None  # benchmark.container_image, else the job's image
    # benchmark.expect_results: a command that ends well but wrote no point file fails the run
    expects_results: bool = True
    # An accuracy evaluation (gsm8k, gpqa): the score file it wrote is its one result,
    # judged by `disagg.workloads.accuracy` instead of as load points.
    accuracy: str | None = None
    # Where an evaluation disagg runs itself reads its data set (GSM8K on vLLM), for display.
    dataset: str | None = None
    # benchmark.aiperf_server_metrics: the command gets the workers' /metrics URLs
    # (AIPERF_SERVER_METRICS_URLS) for AIPerf's server-metrics scrape.
    server_metrics: bool = False


class BenchPlan(Strict):
    """The load generator's settings shared by every point of the run."""

    endpoint: Literal["completions", "chat"] = "completions"
    # Chosen by the frontend adapter: smg and the sglang-router accept only text
    # prompts (token-id lists get HTTP 400/422); Dynamo's frontend takes both.
    prompt_format: Literal["text", "token_ids"] = "text"
    model_name: str
    isl: int
    osl: int
    # As sa-bench and InferenceX (and so the recipe corpus): lengths are uniform in
    # [ratio * isl, isl]; 1.0 means every request has exactly isl/osl tokens.
    random_range_ratio: float = Field(default=1.0, ge=0.0, le=1.0)
    ignore_eos: bool = True
    use_chat_template: bool = False
    tokenizer: str | None = None  # path or `${model.path}`; needed for chat templates
    arrival: Literal["constant", "poisson", "gamma"] = "poisson"
    burstiness: float = 1.0
    max_failure_ratio: float = 0.01
    slo: dict[str, float] = Field(default_factory=empty_dict)  # ttft/tpot/e2el in ms
    seed: int = 0
    points: list[PointPlan]  # empty for a command benchmark: its results name their points
    type: str = "sa-bench"  # benchmark.type; picks the adapter in disagg.workloads
    concurrencies: list[int] = Field(default_factory=empty_list)  # as written, for command clients
    command: BenchCommand | None = None  # benchmark.type == custom
    trace: TracePlan | None = None  # trace replay types
    slow_down: SlowDownPlan | None = None  # sa-bench `benchmark.slow_down_*`
    profiling: ProfilingPlan | None = None  # the recipe's `profiling:`, on the benchmark side
    ignored: dict[str, str] = Field(default_factory=empty_dict)  # benchmark.<field> -> why
    # Predicted runs whose engines run this many times faster than modelled: arrival
    # offsets are compressed and every measured time is stretched back by it.
    time_scale: float = Field(default=1.0, ge=1.0)

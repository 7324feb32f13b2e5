"""Where a disagg job deliberately differs from the job srt-slurm's `srtctl` renders.

A user switching from srtctl must get the same job from the same recipe, or be told how
and why it differs. This table is the one list of such differences: each row says what
srtctl does, what disagg does and why. `docs/compat.md` shows the same rows (a test keeps
the two in step), and a plan names the rows it hits in `Plan.differs`, which
`disagg plan` prints on its `differs from srt-slurm` line. A difference that is not a row
here is a bug.
"""

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Difference:
    """One deliberate difference from srtctl."""

    id: str
    srtctl: str
    disagg: str
    why: str


_ROWS = (
    Difference(
        "smg-router",
        "runs the `sglang-router` package's `sglang_router.launch_router` for "
        "`frontend.type: sglang` (v1) / `sglang-router`",
        "runs smg 1.13.0 (`smg.launch_router`, the same flags), unless the recipe sets "
        "`frontend.package: sglang-router` (then sglang-router 0.3.2), from disagg's own "
        "environment on the host, adding `--tokenizer-path` (the model as the host sees it; "
        "for real workers), "
        "`--prometheus-port` / `--prometheus-host` (a port of its own on its node's address) "
        "and `--shutdown-grace-period-secs 1`",
        "sglang-router 0.3.2 is that package's last release; the project continues as smg. "
        "Outside the image the container's `/model` is not there to load the tokenizer from; "
        "every router on a node would otherwise share the exporter's port 29000; the router "
        "is stopped only once the load is over, and would wait up to 180 s for nothing",
    ),
    Difference(
        "config-dump-path",
        "passes `dynamo.sglang` / `dynamo.vllm` `--dump-config-to <log dir>/<node>_config.json`"
        " with its log directory's path on the host, which a container sees only if a "
        "cluster mount puts that path at the same place (srtctl mounts it at `/logs`)",
        "passes `--dump-config-to /logs/<node>_config.json`: the same file in the same "
        "directory, by the path the container mounts it at",
        "the dump lands in the run directory on every cluster, not only on those that mount "
        "the shared filesystem at the same path inside the container",
    ),
    Difference(
        "router-infra",
        "starts etcd and NATS on the infra node for an `sglang-router` job too, which no "
        "process of the job uses, and gives every worker `ETCD_ENDPOINTS` / `NATS_SERVER`",
        "starts neither for a router job; gives the workers the same `ETCD_ENDPOINTS` and "
        "`NATS_SERVER` values (srtctl's fixed ports on the infra node)",
        "SGLang's router and workers register nowhere; two idle servers on the head node "
        "change nothing but the job's footprint",
    ),
    Difference(
        "setup-script-missing",
        "runs `setup_script` from `/configs/<name>` (else `/configs/patches/<name>`) in every "
        "worker's and Dynamo frontend's container before its program; when neither exists it "
        "prints a warning and starts the program anyway",
        "runs it the same way, from the same places, but a task whose script is in neither "
        "place fails, naming both paths; the configs directory is the cluster config's "
        "`<srtctl_root>/configs` (or a mount at `/configs`), as srtctl mounts its own",
        "a setup script such as `rebuild-deepep.sh` changes the container the engine runs "
        "in: an engine started without it measures something else than the recipe asks",
    ),
    Difference(
        "mocker-environment",
        "runs a `backend.type: mocker` worker (`python3 -m dynamo.mocker`) and its frontend "
        "in the job's container image, discovering each other through etcd",
        "runs them from disagg's own environment (its pinned ai-dynamo) on the host, with "
        "`--model-name` the served name, discovering each other through files in the run "
        "directory unless the recipe names etcd or NATS",
        "the mocker is Dynamo's CPU engine simulator: it runs where disagg runs, without "
        "an image or GPUs, and the served name is the one the load generator asks for",
    ),
    Difference(
        "load-generator",
        "runs the sa-bench client script (`benchmark_serving.py`) in the benchmark container",
        "runs its own load generator with vLLM's metric definitions and sa-bench's request "
        "shape (lengths, warm-up, request rate), writing the same result fields",
        "one client for every benchmark type, validated results, resume and live progress",
    ),
    Difference(
        "client-node",
        "runs the benchmark client on the client's node: the head (the first worker node "
        "when etcd/NATS have a node of their own), a node reserved for it "
        "(`benchmark.client_dedicated_node`, schema 2 `placement.node: dedicated`) or the "
        "last decode node (`client_placement: last_decode`)",
        "reserves the same nodes (the same sbatch node count) and runs a `type: custom` "
        "command on that node, but its own load generator runs in the orchestrator, on node 0",
        "the load generator is part of the orchestrator, which runs on the first node",
    ),
    Difference(
        "dynamo-install",
        "pip-installs the requested Dynamo into each container's own environment, once per "
        "node (a lock and a marker in `sys.prefix`), from NVIDIA's package index as an extra "
        "index; stages a `wheel` version's wheels on the login node at submit; builds a "
        "commit with Rust installed by rustup when the image has none",
        "pip-installs it once per job into the run directory (a lock and a marker on the "
        "shared filesystem, on PYTHONPATH for every Dynamo process; the marker holds the "
        "installed version, which results record as `router_version`), from the indexes "
        "the cluster's pip configuration names; fetches a `wheel` version's wheels when the "
        "job starts; builds a commit (cached by commit next to the runs) with the image's "
        "Rust, failing with that reason when there is none",
        "one install per job that every node shares and the run directory records; no "
        "package host is written into the job",
    ),
    Difference(
        "dynamo-default",
        "installs ai-dynamo 0.8.0 (v1.0.68's `DynamoConfig.version` default) when the recipe "
        "names no Dynamo",
        "installs ai-dynamo 1.6.1",
        "the Dynamo whose frontend and worker flags disagg renders and tests",
    ),
    Difference(
        "mooncake-ports",
        "starts `mooncake_master` on the fixed ports 8700 (RPC), 8701 (HTTP metadata) and "
        "8702 (metrics/health)",
        "starts it with the same flags on ports picked at run time, like every role's; the "
        "workers' MOONCAKE_MASTER and MOONCAKE_TE_META_DATA_SERVER name those ports",
        "fixed ports collide with another job or a leftover master on a shared node",
    ),
    Difference(
        "custom-results",
        "a `type: custom` command's exit status alone decides the job",
        "a command that exits 0 but wrote no point file into `$DISAGG_RESULTS_DIR` fails the "
        "run, naming that directory, unless the recipe sets `benchmark.expect_results: false`",
        "a client pointed at the wrong directory, or one that did nothing, must not end as a "
        "completed run with no numbers",
    ),
    Difference(
        "vllm-device-ids",
        "gives each vLLM worker its GPUs as `--device-ids` and leaves `CUDA_VISIBLE_DEVICES` "
        "unset, so the worker sees every GPU of its node (`set_cuda_visible_devices: true`, "
        "2.x `set_visible_devices: true`, sets the variable instead)",
        "sets `CUDA_VISIBLE_DEVICES` to the worker's GPUs, as for every engine, and passes no "
        "`--device-ids`",
        "the launcher pins every worker's GPUs through the GPU vendor's visibility variables "
        "and checks them against the plan; vLLM builds before `--device-ids` take only those",
    ),
    Difference(
        "staged-hf-model",
        "gives the engines an `hf:` model (and a draft model named by repo id) as the repo id, "
        "so each worker downloads it at start-up; mounts no `/model` for it",
        "stages the snapshot into the cluster's shared model cache before the job starts and "
        "gives the engines its path as the container sees it through the cache mount",
        "one checked download per cluster instead of one per worker at start-up, and a job "
        "that starts without reaching the model hub",
    ),
    Difference(
        "predict-frontend",
        "runs Dynamo's frontend for `frontend.type: dynamo` (srtctl has no predicted mode: "
        "the workers are real engines)",
        "in a predicted run (`--predict`, `backend.engine: predict`) puts smg, the SGLang PD "
        "router, in front of the predicted workers instead",
        "predicted workers are disagg's simulated engine, which speaks SGLang's PD protocol, "
        "not Dynamo's; the router's own overhead is small beside the predicted step times, "
        "and the prediction is labelled as such everywhere",
    ),
    Difference(
        "ports",
        "gives every process a fixed port from per-kind bases in `srtctl/ports.py` (the "
        "public frontend 8000, etcd 2379, NATS 4222, SGLang HTTP 6100 + n, bootstrap 7200 + "
        "n, `--nccl-port` 17500 + n, vLLM NIXL 5400 + n, the Dynamo system port 7500 + n)",
        "gives every role the same kinds of ports, each picked at run time from a per-run "
        "base and checked free on every node of the role before it starts; the plan shows "
        "them as `${role.http_port}`-style fields and the run directory records the numbers",
        "two jobs, or a job and a leftover process, on one node never race for a fixed port; "
        "a port taken by someone else is a clear error before the role starts, not a bind "
        "failure deep in an engine's log",
    ),
    Difference(
        "listen-address",
        "starts servers listening on every interface (`--host 0.0.0.0`) and reaches them by "
        "the node's IP address",
        "starts servers listening on the address of the node they run on (`${self.bind_host}`),"
        " the same address the other roles reach them by",
        "an engine's or router's port on a shared login or compute node is not opened to "
        "every network the node is on",
    ),
    Difference(
        "accuracy-result",
        "runs SGLang's `sglang.test.run_eval` for `gsm8k` / `gpqa` and copies the score "
        "file it wrote under /tmp into the job's logs; the harness's exit status alone "
        "decides the job",
        "runs the same harness call with the same arguments, fails the run at once when the "
        "harness is not importable in the bench role, and judges the score file this run "
        "wrote: no file, no `score`, or a score outside 0..1 fails the run; the judged "
        "result is written to `accuracy/` in the run directory",
        "an evaluation that produced no score, or a stale score from an earlier run, must "
        "not end as a completed run",
    ),
    Difference(
        "mooncake-router",
        "for `mooncake-router` fetches the named `mooncake_workload` trace (default "
        "conversation) and replays it with AIPerf, pip-installing `aiperf` in the benchmark "
        "container when it is missing; never reads `trace_file`",
        "renders the same AIPerf calls (warm-up, then the trace with the same flags) but ends"
        " the run at once, saying so, when `aiperf` is not in the bench role's environment; "
        "keeps AIPerf's artifacts in the run directory without turning them into judged "
        "points; with `trace_file` set, replays that file with its own load generator",
        "the client is fixed before the job starts (an unpinned install changes what is "
        "measured from one run to the next, and a compute node may not reach a package "
        "index); a local trace is replayed with the validated results every other disagg "
        "benchmark writes",
    ),
    Difference(
        "static-router-command",
        "renders its own command for `frontend.type: atomesh` and `tilert-router` "
        "(srt-slurm 2.x's static routers; that code is not in the srt-slurm source this "
        "project follows)",
        "renders each router's own documented launch: `atomesh launch ... --backend atom` "
        "as ATOM's P/D jobs run it, `python3 -m tilert.pd_vllm.pd_router` as TileRT's "
        "README does, with the recipe's `frontend.args` as written; neither is run on this "
        "machine",
        "the routers' own projects document their command lines; srtctl's rendering of them "
        "could not be read, so golden files pin what disagg renders",
    ),
    Difference(
        "static-router-stand-in",
        "runs the router the recipe names (`atomesh`, `tilert-router`) in front of real "
        "ATOM / TileRT workers",
        "in a simulated run (`engine: sim`) puts smg in front of the simulated workers "
        "instead, and names it as standing in (plan `frontend`); a real run of either "
        "router locally is refused by name",
        "the simulated workers speak SGLang's PD protocol, which smg drives; neither router "
        "is installed here, and atomesh takes the SGLang gateway's command line",
    ),
    Difference(
        "service-log",
        "writes a `services:` entry's output to `service_<name>.out` in the job's log directory",
        "runs it as the role `service_<name>`, its output in `logs/service_<name>.log` "
        "(`logs/service_<name>.<node>.log` on several nodes) like every role's",
        "one log layout for every role: `disagg logs`, `disagg status` and the failure report "
        "find a service's log as they find a worker's",
    ),
    Difference(
        "mooncake-store",
        "runs its own command for a `type: mooncake-store` service (not in the srt-slurm "
        "source this project follows)",
        "runs Mooncake's standalone store process `mooncake_client` with the master's RPC and "
        "metadata addresses, its node's address and ports picked at run time, its HTTP health "
        "server on (the readiness gate), then the entry's `args`; one per worker node unless "
        "`placement.node` says otherwise",
        "the store the kind names, wired to the job's master as the schema describes; a flag "
        "in `args` overrides the default",
    ),
    Difference(
        "direct-frontend",
        "binds the one aggregated worker of a direct frontend (`frontend.type: vllm`, "
        "schema 2 `sglang`, aggregated `trtllm_serve`) to `0.0.0.0` on the public port 8000",
        "binds it to its node's own address on a port picked at run time, like every role's; "
        "the benchmark is given that address (`SRT_FRONTEND_HOST`, `SRT_FRONTEND_PORT`)",
        "a fixed port collides with another job or a leftover server on a shared node",
    ),
    Difference(
        "vllm-router-metrics",
        "starts `vllm-router` on `0.0.0.0` and the public port 8000, with its Prometheus "
        "exporter on its default 127.0.0.1:29000",
        "starts it on its node's own address and a port picked at run time, and gives it "
        "`--prometheus-port` and `--prometheus-host` (a port of its own on that address)",
        "every router on a node would otherwise share port 29000, and the job's roles all "
        "bind ports picked at run time",
    ),
    Difference(
        "vllm-per-gpu-written-ranks",
        "under `dp_launch_mode: per_gpu` passes a role's written `headless`, "
        "`data-parallel-size-local`, `data-parallel-start-rank`, "
        "`data-parallel-address` and `data-parallel-rank` on to every per-GPU process "
        "beside the rank flags it derives",
        "leaves them out (listed as ignored: set by the plan) and gives each process "
        "only its derived rank, the first rank's address and the worker's DP RPC port",
        "the layout decides each process's rank and meeting point; a written copy would "
        "contradict the derived one (vLLM takes the last of two) or make a rank "
        "headless",
    ),
    Difference(
        "trace-file",
        "passes `benchmark.trace_file` (a path inside the benchmark container) to AIPerf, "
        "which reads it when the job's benchmark starts; nothing reads it before",
        "reads a trace it can reach when planning (refusing a missing or malformed one then, "
        "and counting its requests in the plan); a trace inside a container mount whose host "
        "side is not on the planning machine (a cluster's filesystem) is read from that host "
        "side in the job, checked before any role starts (a missing or malformed one ends the"
        " run naming the file and line), and replayed by disagg's own load generator",
        "a bad trace is found before nodes are held where it can be; the load generator runs "
        "in the orchestrator on the first node's host, where the mount's host side is the "
        "trace the container would see",
    ),
    Difference(
        "slow-down-failure",
        "for sa-bench's `slow_down_sleep_time` / `slow_down_wait_time` POSTs SGLang's "
        "`/slow_down` to each decode worker's leader at every measured run's start and clears "
        "it after the wait (or at the run's end); a POST that fails or answers HTTP >= 400 is "
        "a printed warning and the run goes on",
        "makes the same POSTs at the same moments; one that fails or answers HTTP >= 400 "
        "makes the point invalid with the URL and the answer as its reason, which fails "
        "the run; the POSTs made are recorded in the point's result (`slow_down_posts`)",
        "a point measured without the slow-down it asked for (or with decode workers left "
        "slowed down) measures something else than the recipe says",
    ),
    Difference(
        "profiling-failure",
        "with `profiling.type` nsys or torch, sa-bench's and trace-replay's scripts POST each "
        "worker leader's `/start_profile` (Dynamo: `/engine/start_profile` on its system "
        "port) once before the first concurrency and `/stop_profile` after the last; a start "
        "that fails or answers HTTP >= 400 is a printed warning and the benchmark runs "
        "unprofiled; a phase whose stop_step is not after its start_step (unset: 0 and 50) "
        "is skipped with a warning; the stop's answer is ignored",
        "makes the same POSTs at the same moments around its own points (after the canary, "
        "before the first point measured; after the last, or when the sweep ends early); a "
        "start that fails or answers HTTP >= 400 fails the run before any point is measured, "
        "naming the worker and the answer; such a step range is refused at plan time; a "
        "failed stop is a warning in the log; every POST and its answer are recorded "
        "(`profile_posts` in each point's result, and in `state.json` / `summary.json`)",
        "a sweep measured without the profile the recipe asks for, or with none of the "
        "traces it was run for, has to be found in a log afterwards; SGLang answers a stop "
        "with HTTP 500 once a profile has taken its steps and ended itself, which is no "
        "failure",
    ),
    Difference(
        "profiling-trtllm",
        "sa-bench POSTs `/engine/start_profile` and `/engine/stop_profile` to TRT-LLM "
        "workers too, warning when they fail (trace-replay uses its no-op TRT-LLM library)",
        "POSTs nothing to TRT-LLM workers for any benchmark; they are profiled as srtctl "
        "starts them (`TLLM_PROFILE_START_STOP` under `nsys -c cudaProfilerApi`, or nsys's "
        "time window)",
        "TRT-LLM starts and stops its capture itself at the steps its environment names "
        "(srtctl's `profiling_trtllm.sh`: no HTTP call is needed), and a POST its worker "
        "does not serve would otherwise fail the run (`profiling-failure`)",
    ),
    Difference(
        "profiling-dynamo-route",
        "POSTs the profile start and stop to `/engine/start_profile` and "
        "`/engine/stop_profile` on a Dynamo worker's system port",
        "POSTs them there; a worker that answers HTTP 404 gets the same body at "
        "`/engine/control/start_profile` (`.../stop_profile`), and both POSTs are recorded",
        "Dynamo 1.x (1.6.1 is what a job installs when the recipe names none) serves its "
        "engine routes under `/engine/control/`; the recipe's own Dynamo (0.8.0 in srt-slurm's"
        " profiling recipes) answers at the first",
    ),
    Difference(
        "torch-profiler-dir",
        "sets `SGLANG_TORCH_PROFILER_DIR` to `<log dir>/profiles/<mode>` with its log "
        "directory's path on the host, which a container sees only if a cluster mount puts "
        "that path at the same place (srtctl mounts it at `/logs`)",
        "sets it to `/logs/profiles/<mode>`: the same directory, by the path the container "
        "mounts it at (the run directory's own path for a worker outside a container)",
        "the traces land in the run directory on every cluster, as the nsys reports do "
        "(srtctl writes those to `/logs/profiles/<mode>`)",
    ),
    Difference(
        "unknown-container-alias",
        "passes a `roles.<role>.container` that the cluster's `containers` map lacks to "
        "pyxis as written, so a bare name is pulled as an image of that name",
        "refuses, at the field's line, a role's bare image name (no registry, tag, digest or "
        "path) that the cluster profile's non-empty `containers` map lacks; a full reference "
        "or a squashfs path is used as written, and `model.container` keeps srtctl's rule",
        "on a cluster that names its images by alias such a name is a mistyped alias, which "
        "would otherwise fail only on the compute nodes after the job queued; recipes in use "
        "name bare `model.container` images the map lacks, so that field is left as srtctl has it",
    ),
    Difference(
        "gsm8k-vllm-evaluator",
        "for `gsm8k` with `backend.type: vllm` runs a copy of vLLM's `gsm8k_eval.py` that it "
        "bundles (`vllm-bench.sh`), which downloads GSM8K's train/test jsonl into the "
        "temporary directory unless they are already there, scores a request that failed as a"
        " wrong answer, and saves `gsm8k_run{i}.json` per repeat; its exit status alone "
        "decides the job",
        "runs its own evaluator (`python -m disagg.workloads.gsm8k_eval`, same prompt, "
        "request, answer extraction, scoring, arguments and defaults) from disagg's "
        "environment; reads `train.jsonl` / `test.jsonl` from `benchmark.dataset_path` (else "
        "the bench node's temporary directory) and never downloads, failing by name when they"
        " are absent; a failed request fails the run; each repeat's file carries `score` (= "
        "accuracy) and is judged as an accuracy result",
        "disagg does not ship srt-slurm's copy of another project's script; a compute node "
        "may have no network; a score with failed requests counted as wrong answers measures "
        "the serving failure, not the model",
    ),
)


DIFFERENCES: dict[str, Difference] = {row.id: row for row in _ROWS}


def differs(*ids: str) -> list[str]:
    """`ids` checked against the table (a typo is a bug, caught by the first plan that hits it)."""
    for name in ids:
        if name not in DIFFERENCES:
            raise KeyError(f"no srt-slurm difference {name!r} in disagg.plan.compat")
    return list(ids)


def rows(ids: list[str]) -> list[dict[str, str]]:
    """The table rows `ids` name, each once, in first-named order: what `Plan.differs` holds."""
    return [asdict(DIFFERENCES[name]) for name in dict.fromkeys(differs(*ids))]

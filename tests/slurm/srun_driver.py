"""Runs inside a Slurm batch job for test_srun_launcher: drives SrunLauncher, writes JSON.

Usage: python srun_driver.py OUT_JSON TOKEN
"""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path

from disagg.launch.executor import Task
from disagg.launch.srun import SrunLauncher
from disagg.plan.model import SlurmPlan

SHOW_ENV = (
    "import json, os; shown = {k: os.environ.get(k) for k in "
    "('SLURMD_NODENAME', 'CUDA_VISIBLE_DEVICES', 'MODEL_REPOS')}; "
    "shown['HF_TOKEN_LENGTH'] = len(os.environ.get('HF_TOKEN', '')); "
    "print('RESULT ' + json.dumps(shown))"
)
# A task with a child of its own, so that teardown must reach the whole tree.
TREE = (
    "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
    "'import time; time.sleep(300)', sys.argv[1]]); time.sleep(300)"
)


def main() -> None:
    out, token = Path(sys.argv[1]), sys.argv[2]
    logs = out.parent / "logs"
    launcher = SrunLauncher.from_environment(SlurmPlan(job_name="t", nodes=3, gpus_per_node=8))
    result: dict[str, object] = {
        "names": launcher.node_names(),
        "addresses": launcher.node_addresses(),
    }
    env = {"MODEL_REPOS": "a/x,b/y", "CUDA_VISIBLE_DEVICES": "2,3"}
    show = launcher.launch(
        Task(
            role="show",
            node_rank=1,
            argv=[sys.executable, "-c", SHOW_ENV],
            env=env,
            log_path=logs / "show.log",
        )
    )
    deadline = time.monotonic() + 30
    while show.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    result["show_exit"] = show.poll()
    tree = launcher.launch(
        Task(
            role="tree",
            node_rank=2,
            argv=[sys.executable, "-c", TREE, token],
            env={},
            log_path=logs / "tree.log",
        )
    )
    time.sleep(1.0)
    result["tree_running"] = tree.poll() is None
    holder = socket.socket()
    holder.bind(("0.0.0.0", 0))
    holder.listen()
    port = holder.getsockname()[1]
    result["probe_busy"] = sorted(launcher.busy_ports(1, range(port, port + 8)))
    result["probe_port"] = port
    result["local_probe_free"] = launcher.port_is_free(1, port)
    result["tree_exit"] = tree.stop(grace_s=2.0)  # returns once the whole tree is gone
    launcher.close()
    result["closed"] = True
    out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()

"""`disagg plan --bound`: every process as it will start, what srtctl's dry run shows.

Each task's argv and environment bound the way the orchestrator binds them at launch, on
nodes named node0..N-1 with ports from the allocator; JSON carries it in each variant's
`bound` (the shape `srtctl-diff` reads), text prints one pasteable line per task.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from engines.engine_support import recipe

from .recipe_helpers import invoke

PD = (
    "  gpus_per_node: 8\n  prefill_nodes: 1\n  prefill_workers: 1\n"
    "  decode_nodes: 1\n  decode_workers: 1\n"
)
ROLES = "    prefill:\n      tp-size: 8\n    decode:\n      tp-size: 8\n"


def _recipe(tmp_path: Path) -> Path:
    path = tmp_path / "r.yaml"
    path.write_text(recipe("sglang", ROLES, resources=PD, frontend="dynamo"))
    return path


def test_json_binds_every_task_on_named_nodes(tmp_path: Path) -> None:
    code, out, err = invoke("plan", "--json", "--bound", str(_recipe(tmp_path)))
    assert code == 0, err
    [variant] = json.loads(out)["variants"]
    bound = variant["bound"]
    prefill = bound["roles"]["prefill-0"]["tasks"]
    decode = bound["roles"]["decode-0"]["tasks"]
    assert [t["node"] for t in prefill] == ["node0"] and [t["node"] for t in decode] == ["node1"]
    assert prefill[0]["gpus"] == list(range(8)) and prefill[0]["error"] is None
    argv, env = prefill[0]["argv"], prefill[0]["env"]
    assert not any("${" in arg and "${run.dir}" not in arg for arg in argv)
    assert env["HEAD_NODE_IP"] == "node0"
    port = bound["ports"]["prefill-0"]
    assert argv[argv.index("--port") + 1] == str(port["http_port"])
    assert env["DYN_SYSTEM_PORT"] == str(port["system_port"]) != str(port["http_port"])
    # the model as the worker's container sees it, the frontend's address its own node
    assert argv[argv.index("--model-path") + 1] == bound["model_inside"]
    [frontend] = bound["roles"]["frontend"]["tasks"]
    assert frontend["argv"][frontend["argv"].index("--http-host") + 1] == frontend["node"]
    assert bound["roles"]["bench"]["tasks"] == []  # the in-process load generator


def test_text_prints_each_task_on_one_pasteable_line(tmp_path: Path) -> None:
    code, out, err = invoke("plan", "--bound", str(_recipe(tmp_path)))
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.startswith("  node")]
    roles = {line.split()[3].rstrip(":") for line in lines}
    assert {"prefill-0", "decode-0", "frontend", "etcd", "nats"} <= roles
    [prefill] = [line for line in lines if " prefill-0: " in line]
    words = shlex.split(prefill.split(": ", 1)[1])
    assert "HEAD_NODE_IP=node0" in words and "dynamo.sglang" in words


def test_without_the_option_nothing_is_bound(tmp_path: Path) -> None:
    code, out, _err = invoke("plan", "--json", str(_recipe(tmp_path)))
    assert code == 0 and "bound" not in json.loads(out)["variants"][0]

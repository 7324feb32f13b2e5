"""The router argv the plan renders: placeholders the orchestrator binds, real flags.

smg (the default) and the pinned sglang-router 0.3.2 take the same flags; only the
module differs."""

from __future__ import annotations

import pytest

from disagg.errors import DisaggError
from disagg.frontends.smg import ROUTER_HEALTH_PATH, ROUTER_PORTS, router_argv
from disagg.plan.templates import PLACEHOLDER, substitute_all


def test_pd_argv_names_every_worker_with_bootstrap_port() -> None:
    argv = router_argv(prefill=["prefill-0"], decode=["decode-0", "decode-1"])
    assert argv[:4] == ["${run.python}", "-m", "smg.launch_router", "--pd-disaggregation"]
    joined = " ".join(argv)
    assert "--prefill ${prefill-0.url} ${prefill-0.bootstrap_port}" in joined
    assert "--decode ${decode-0.url} --decode ${decode-1.url}" in joined
    assert "--port ${self.http_port}" in joined
    assert "--prometheus-port ${self.metrics_port}" in joined
    assert joined.count("--prometheus-host ${self.bind_host}") == 1  # smg's: 0.0.0.0:29000
    assert "--worker-urls" not in argv


def test_sglang_router_stays_selectable_with_the_same_flags() -> None:
    smg = router_argv(prefill=["prefill-0"], decode=["decode-0"], host="127.0.0.1")
    legacy = router_argv(
        prefill=["prefill-0"], decode=["decode-0"], host="127.0.0.1", package="sglang-router"
    )
    assert legacy[2] == "sglang_router.launch_router"
    assert legacy[3:] == smg[3:]


def test_regular_mode_lists_aggregated_urls() -> None:
    argv = router_argv(aggregated=["aggregated-0", "aggregated-1"], python="/usr/bin/python3")
    assert argv[0] == "/usr/bin/python3"
    i = argv.index("--worker-urls")
    assert argv[i + 1 : i + 3] == ["${aggregated-0.url}", "${aggregated-1.url}"]
    assert "--pd-disaggregation" not in argv


def test_every_placeholder_binds_to_known_fields() -> None:
    argv = router_argv(prefill=["prefill-0"], decode=["decode-0"])
    bindings = {
        "prefill-0": {"url": "http://127.0.0.1:1", "bootstrap_port": "2"},
        "decode-0": {"url": "http://127.0.0.1:3"},
        "router": {"http_port": "4", "metrics_port": "5", "bind_host": "127.0.0.1"},
        "run": {"python": "python3"},
    }
    bound = substitute_all(argv, bindings, self_name="router")
    assert not any(PLACEHOLDER.search(arg) for arg in bound)
    assert {"http", "metrics"} == set(ROUTER_PORTS)
    assert ROUTER_HEALTH_PATH == "/readiness"


def test_frontend_args_render_like_sglang_args_and_policy_comes_from_them() -> None:
    argv = router_argv(
        aggregated=["aggregated-0"],
        extra={
            "policy": "cache_aware",
            "request_timeout_secs": 60,
            "disable_retries": True,
            "dp_aware": False,
            "request_id_headers": ["x-a", "x-b"],
        },
    )
    assert argv[argv.index("--policy") + 1] == "cache_aware"
    assert argv.count("--policy") == 1
    assert argv[argv.index("--request-timeout-secs") + 1] == "60"
    assert "--disable-retries" in argv and "--dp-aware" not in argv
    i = argv.index("--request-id-headers")
    assert argv[i + 1 : i + 3] == ["x-a", "x-b"]


def test_explicit_policy_wins_and_tokenizer_path_is_passed() -> None:
    argv = router_argv(
        aggregated=["a"],
        policy="random",
        extra={"policy": "cache_aware"},
        tokenizer_path="/models/tok",
    )
    assert argv[argv.index("--policy") + 1] == "random"
    assert argv[argv.index("--tokenizer-path") + 1] == "/models/tok"


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"prefill": ["p"]}, "at least one prefill and one decode"),
        ({"prefill": ["p"], "decode": ["d"], "aggregated": ["a"]}, "cannot mix"),
        ({}, "at least one worker"),
        ({"aggregated": ["a"], "extra": {"port": 1}}, "frontend.args.port"),
        ({"aggregated": ["a"], "extra": {"prometheus-host": "x"}}, "prometheus-host"),
    ],
)
def test_bad_inputs_are_user_errors(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(DisaggError, match=needle):
        router_argv(**kwargs)  # type: ignore[arg-type]


def test_frontend_args_follow_sglang_rules_for_empty_lists_and_nested_values() -> None:
    extra = {"request_id_headers": [], "retry": {"max": 3}, "flags": [True, 1]}
    argv = router_argv(aggregated=["a"], extra=extra)
    assert "--request-id-headers" not in argv
    assert argv[argv.index("--retry") + 1] == '{"max": 3}'
    i = argv.index("--flags")
    assert argv[i + 1 : i + 3] == ["true", "1"]

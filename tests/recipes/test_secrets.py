"""Literal secrets in a recipe: redacted in printed plans, owner-only in plan.json, linted."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.plan.model import Plan
from disagg.recipe.lint import lint_paths
from disagg.redact import REDACTED, is_secret_name, redact

from .recipe_helpers import MINIMAL, invoke

SECRETS = ("hf_SuperSecret123", "wb_Secret456", "sk-Secret789")


def _with_secrets(extra_env: str = "") -> str:
    text = MINIMAL.replace(
        "backend:\n",
        "environment:\n"
        "  HF_TOKEN: hf_SuperSecret123\n"
        "  WANDB_API_KEY: wb_Secret456\n"
        "  TOKENIZERS_PARALLELISM: 'false'\n" + extra_env + "backend:\n",
    )
    return text.replace("      tp-size: 8\n", "      tp-size: 8\n      api-key: sk-Secret789\n", 1)


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("HF_TOKEN", True),
        ("HUGGING_FACE_HUB_TOKEN", True),
        ("WANDB_API_KEY", True),
        ("api-key", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("DB_PASSWORD", True),
        ("TOKENIZERS_PARALLELISM", False),
        ("SGLANG_PER_TOKEN_GROUP_QUANT_8BIT_V2", False),
        ("HF_TOKEN_PATH", False),
        ("MAX_TOKENS", False),
        ("GITHUB_PAT", True),
        ("DOCKER_PASS", True),
        ("WANDB_KEY", True),
        ("ssl-key", True),
        ("PATH", False),
        ("KEYFILE_DIR", False),
        ("BYPASS_CHECKS", False),
    ],
)
def test_which_names_are_secret(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_references_and_placeholders_are_not_redacted() -> None:
    env = {"HF_TOKEN": "$HF_TOKEN", "WANDB_API_KEY": "${WANDB_API_KEY}", "OPENAI_API_KEY": "EMPTY"}
    assert redact(env) == env
    argv = ["serve", "--api-key", "sk-1", "--admin-token=t0k", "--tp", "2"]
    assert redact(argv) == [
        "serve",
        "--api-key",
        REDACTED,
        f"--admin-token={REDACTED}",
        "--tp",
        "2",
    ]


def test_plan_json_output_and_the_printed_plan_never_show_a_secret(
    write: Callable[..., Path],
) -> None:
    path = write(_with_secrets())
    code, out, error = invoke("plan", str(path), "--json")
    assert code == 0, error
    for secret in SECRETS:
        assert secret not in out
    variant = json.loads(out)["variants"][0]
    assert variant["roles"][0]["env"]["HF_TOKEN"] == REDACTED
    assert variant["roles"][0]["env"]["TOKENIZERS_PARALLELISM"] == "false"
    code, out, error = invoke("plan", str(path))
    assert code == 0, error
    assert "--api-key" in out and not any(secret in out for secret in SECRETS)


def test_plan_json_with_a_secret_is_owner_only_and_keeps_the_value_for_the_job(
    write: Callable[..., Path], tmp_path: Path
) -> None:
    from disagg.plan.placement import place
    from disagg.recipe.variants import load_variants

    [variant] = load_variants(write(_with_secrets()))
    plan = place(variant)
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o755)
    path = plan.write(run_dir)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    assert Plan.read(run_dir).roles[0].env["HF_TOKEN"] == "hf_SuperSecret123"
    assert "roles.0.env.HF_TOKEN" in plan.secrets


def test_plan_json_without_a_secret_keeps_the_shared_mode(
    write: Callable[..., Path], tmp_path: Path
) -> None:
    from disagg.plan.placement import place
    from disagg.recipe.variants import load_variants

    [variant] = load_variants(write(MINIMAL))
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o755)
    path = place(variant).write(run_dir)
    assert stat.S_IMODE(path.stat().st_mode) & 0o044  # group/others may read results
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o755


def test_lint_warns_about_each_literal_secret_and_says_how_to_pass_it(
    write: Callable[..., Path],
) -> None:
    path = write(_with_secrets("  GITHUB_TOKEN: $GITHUB_TOKEN\n  OPENAI_API_KEY: EMPTY\n"))
    report = lint_paths([path])
    found = [f for f in report.findings if f.rule == "DA009"]
    assert sorted(f.message.split(": ")[1].split(" ")[0] for f in found) == [
        "HF_TOKEN",
        "WANDB_API_KEY",
        "api-key",
    ]
    hf = next(f for f in found if "HF_TOKEN" in f.message)
    assert hf.hint is not None and "export HF_TOKEN" in hf.hint and "secret_env" in hf.hint
    assert all(secret not in f.message for f in found for secret in SECRETS)
    assert report.exit_code == 1


TOKENS = {
    "hf": "hf_" + "Ab1" * 12,
    "github": "ghp_" + "Zx9" * 12,
    "github_pat": "github_pat_" + "x1" * 20,
    "openai": "sk-proj-" + "q8" * 12,
    "aws": "AKIA" + "ABCDEFGH12345678",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
}


@pytest.mark.parametrize("kind", sorted(TOKENS))
def test_a_token_shaped_value_is_redacted_under_any_key_and_inside_text(kind: str) -> None:
    token = TOKENS[kind]
    assert redact({"MODEL_SOURCE": token}) == {"MODEL_SOURCE": REDACTED}
    assert redact(["serve", "--model", token]) == ["serve", "--model", REDACTED]
    command = f"curl -H 'Authorization: Bearer {token}' https://example.test/x"
    scrubbed = f"curl -H 'Authorization: Bearer {REDACTED}' https://example.test/x"
    assert redact({"command": command}) == {"command": scrubbed}
    assert redact([command]) == [
        f"curl -H 'Authorization: Bearer {REDACTED}' https://example.test/x"
    ]


@pytest.mark.parametrize(
    "value",
    [
        "hf_cache",
        "sk-1",
        "ghp_short",
        "deepseek-ai/DeepSeek-R1",
        "AKIA",
        "eyJ.eyJ.x",
        "/models/hf_home",
    ],
)
def test_ordinary_values_are_not_mistaken_for_tokens(value: str) -> None:
    assert redact({"MODEL_PATH": value}) == {"MODEL_PATH": value}


def test_plan_json_and_lint_agree_on_pat_pass_key_names_and_token_values(
    write: Callable[..., Path],
) -> None:
    hf = TOKENS["hf"]
    path = write(
        MINIMAL.replace(
            "backend:\n",
            "environment:\n"
            f"  GITHUB_PAT: {TOKENS['github']}\n"
            "  DOCKER_PASS: hunter2hunter2\n"
            "  WANDB_KEY: wb9f3e7c1d5b2a8e\n"
            f"  MODEL_SOURCE: {hf}\n"
            "backend:\n",
        )
    )
    secrets = (TOKENS["github"], "hunter2hunter2", "wb9f3e7c1d5b2a8e", hf)
    code, out, error = invoke("plan", str(path), "--json")
    assert code == 0, error
    assert not [s for s in secrets if s in out]
    code, out, error = invoke("plan", str(path))
    assert code == 0, error
    assert not [s for s in secrets if s in out]
    found = [f for f in lint_paths([path]).findings if f.rule == "DA009"]
    named = sorted(f.message.split(": ")[1].split(" ")[0] for f in found)
    assert named == ["DOCKER_PASS", "GITHUB_PAT", "MODEL_SOURCE", "WANDB_KEY"]
    assert all(s not in f.message for f in found for s in secrets)

"""Container staging: one import under the cross-node lock, atomic rename, no half images.

The import command is a stand-in for `enroot import`: a small script that writes a
squashfs-looking file slowly (so that a second stager really overlaps it), counts
its invocations, and can be told to fail or to write garbage.
"""

from __future__ import annotations

import multiprocessing
import sys
import time
from pathlib import Path

import pytest

from disagg.errors import DisaggError
from disagg.plan.model import ContainerToStage
from disagg.staging.container import SQUASHFS_MAGIC, ensure_container, is_squashfs

STAND_IN = """
import sys, time
from pathlib import Path
output, image, calls, mode = sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4]
with calls.open("a") as handle:
    handle.write(image + "\\n")
with open(output, "wb") as handle:
    handle.write(b"hsqs" if mode != "garbage" else b"<html>")
    for _ in range(10):
        handle.write(b"\\0" * 4096)
        handle.flush()
        time.sleep(0.05)
if mode == "fail":
    print("pull failed: unauthorized", file=sys.stderr)
    sys.exit(3)
"""


def _spec(tmp_path: Path, mode: str = "ok") -> ContainerToStage:
    script = tmp_path / "fake_import.py"
    script.write_text(STAND_IN)
    return ContainerToStage(
        squashfs=str(tmp_path / "images" / "sglang.sqsh"),
        image="docker://rocm/sgl-dev:test",
        import_command=[
            sys.executable,
            str(script),
            "{output}",
            "{image}",
            str(tmp_path / "calls.txt"),
            mode,
        ],
    )


def _stage(spec_json: str, out: str) -> None:
    spec = ContainerToStage.model_validate_json(spec_json)
    path = ensure_container(spec, log=lambda line: None)
    Path(out).write_text(str(path))


def test_missing_image_is_imported_once_by_concurrent_stagers(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    ctx = multiprocessing.get_context("spawn")
    workers = [
        ctx.Process(target=_stage, args=(spec.model_dump_json(), str(tmp_path / f"out{i}")))
        for i in range(3)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    calls = (tmp_path / "calls.txt").read_text().splitlines()
    assert calls == ["docker://rocm/sgl-dev:test"]
    target = Path(spec.squashfs)
    assert is_squashfs(target)
    assert target.stat().st_size == 4 + 10 * 4096
    for i in range(3):
        assert (tmp_path / f"out{i}").read_text() == str(target)
    # nothing else left next to the image: no temporary file, no lock directory
    assert sorted(p.name for p in target.parent.iterdir()) == ["sglang.sqsh"]


def test_readers_never_see_a_partial_image(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    target = Path(spec.squashfs)
    ctx = multiprocessing.get_context("spawn")
    worker = ctx.Process(target=_stage, args=(spec.model_dump_json(), str(tmp_path / "out")))
    worker.start()
    sizes: set[int] = set()
    deadline = time.monotonic() + 60
    while worker.is_alive() and time.monotonic() < deadline:
        if target.exists():
            sizes.add(target.stat().st_size)
        time.sleep(0.005)
    worker.join()
    assert worker.exitcode == 0
    # whenever the final name existed, it was the whole file
    assert sizes <= {4 + 10 * 4096}


def test_present_image_is_not_imported(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    target = Path(spec.squashfs)
    target.parent.mkdir(parents=True)
    target.write_bytes(SQUASHFS_MAGIC + b"\0" * 16)
    lines: list[str] = []
    assert ensure_container(spec, log=lines.append) == target
    assert not (tmp_path / "calls.txt").exists()
    assert "present" in lines[0]


@pytest.mark.parametrize(
    ("mode", "message"),
    [("fail", "failed with exit code 3"), ("garbage", "produced no squashfs image")],
)
def test_failed_import_leaves_no_image(tmp_path: Path, mode: str, message: str) -> None:
    spec = _spec(tmp_path, mode)
    with pytest.raises(DisaggError) as caught:
        ensure_container(spec, log=lambda line: None)
    assert message in str(caught.value)
    if mode == "fail":
        assert "unauthorized" in str(caught.value)
    target = Path(spec.squashfs)
    assert not target.exists()
    assert list(target.parent.iterdir()) == []


def test_missing_import_tool_is_a_clear_error(tmp_path: Path) -> None:
    spec = ContainerToStage(
        squashfs=str(tmp_path / "x.sqsh"),
        image="docker://x",
        import_command=["no-such-enroot", "import", "-o", "{output}", "{image}"],
    )
    with pytest.raises(DisaggError, match="import command not found: no-such-enroot"):
        ensure_container(spec, log=lambda line: None)


def test_a_non_squashfs_file_at_the_target_is_refused(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    target = Path(spec.squashfs)
    target.parent.mkdir(parents=True)
    target.write_text("not an image")
    with pytest.raises(DisaggError, match="is not a squashfs image"):
        ensure_container(spec, log=lambda line: None)


def test_submit_preflight_accepts_an_importable_image_and_refuses_an_unknown_one() -> None:
    from disagg.launch.slurm_preflight import check_containers
    from disagg.plan.from_recipe import plans_for

    root = Path(__file__).resolve().parents[2]
    [plan] = plans_for(
        [f"{root}/examples/mi355x/dsr1-fp4-disagg.yaml:override_stp_1p1d_tp8"],
        root / "examples" / "clusters" / "mi355x.yaml",
    )
    importable = check_containers(plan)
    assert importable.errors == []
    assert "the job imports it from docker://rocm/sgl-dev" in importable.warnings[0]
    plan.staging.containers = []  # a squashfs path the profile gives no source for
    missing = check_containers(plan)
    assert missing.errors == [f"container image {plan.slurm.container_image} does not exist"]

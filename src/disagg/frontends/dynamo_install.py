"""`dynamo.source` / `dynamo.version` / `hash` / `wheel` / `top_of_tree`: the Dynamo a job runs.

What srt-slurm installs (`DynamoConfig.get_install_commands`, v1.0.68): a release (the
default), a staged nightly (`wheel`), or a commit built with maturin (`cargo_patches`
applied), cached by commit; `top_of_tree` the same at HEAD, never cached. Here the first
Dynamo role to start installs it into the run directory under a lock and writes a marker
holding the version (which the results record); the other roles use it through PYTHONPATH.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from disagg.errors import DisaggError
from disagg.recipe.schema import DynamoSection

DEFAULT_VERSION = "1.6.1"  # the ai-dynamo this environment pins, and what a job installs
TARGET = "${run.dir}/dynamo-install"
MARKER = ".installed"  # in TARGET: the installed ai-dynamo version, written last
# Source builds shared by the runs under one run root (srtctl: /configs/dynamo-wheels).
CACHE = "${run.dir}/../../.cache/dynamo"
UPSTREAM = "https://github.com/ai-dynamo/dynamo.git"
_PATCH_SALT = "dep-override-v3\n"  # srtctl's cache-key version for patched builds


@dataclass(frozen=True)
class Install:
    """One Dynamo to install: a release or staged version, or a source build."""

    kind: str  # "pypi", "wheel", "git"
    version: str | None = None
    git: str | None = None
    rev: str | None = None  # None: the repository's HEAD (top_of_tree)
    patches: tuple[str, ...] = ()

    def commands(self) -> str:
        """The shell that installs it into TARGET (run under the job's lock)."""
        pip = f"python3 -m pip install --quiet --target {TARGET}"
        if self.kind == "pypi":
            return f"{pip} {_pair(self.version)}"
        if self.kind == "wheel":
            return f"{pip} --pre --no-deps {_pair(self.version)}"
        return _source_build(self)


def install_of(dynamo: DynamoSection) -> Install | None:
    """The Dynamo a recipe asks for, validated as srtctl validates it; None: `install: false`."""
    if not dynamo.install:
        return None
    source = dynamo.source
    git = source.git if source is not None else None
    rev = (source.sha or source.rev) if source is not None else None
    rev = rev or dynamo.hash
    given = {
        "hash": rev is not None,
        "top_of_tree": dynamo.top_of_tree,
        "wheel": dynamo.wheel is not None,
    }
    named = [name for name, value in given.items() if value]
    if len(named) > 1:  # DynamoConfig.__post_init__: "Cannot specify both ..."
        raise DisaggError(
            f"dynamo names more than one source: {', '.join(named)}",
            hint="keep one of dynamo.source.rev (hash), top_of_tree, dynamo.source.wheel",
        )
    patches = tuple(dynamo.cargo_patches or ())
    if patches and rev is None:
        raise DisaggError(
            "dynamo.cargo_patches needs a source build",
            hint="pin the commit to build with dynamo.source.rev (v1: dynamo.hash)",
        )
    if dynamo.wheel is not None:
        return Install("wheel", version=_wheel_version(dynamo.wheel))
    if rev is not None:
        return Install("git", git=git or UPSTREAM, rev=rev, patches=patches)
    if git is not None:
        raise DisaggError(
            "dynamo.source.git without a rev installs an unpinned Dynamo",
            hint="pin a commit with dynamo.source.rev",
        )
    if dynamo.top_of_tree:
        return Install("git", git=UPSTREAM)
    version = dynamo.version or DEFAULT_VERSION
    return Install("pypi", version=version.removeprefix("ai-dynamo==").strip())


def _wheel_version(wheel: str) -> str:
    """srtctl takes `wheel` as a package version and refuses a file name or a path."""
    if not wheel.strip():
        raise DisaggError("dynamo.wheel is empty", hint="give the ai-dynamo version to install")
    if wheel.endswith(".whl") or "/" in wheel:
        raise DisaggError(
            f"dynamo.wheel {wheel!r} is a file name; srt-slurm takes a package version",
            hint="give the version of the staged wheels, e.g. wheel: 1.2.0.dev20260426",
        )
    return wheel.strip()


def _pair(version: str | None) -> str:
    """The runtime and the package at one version, as srtctl always installs them."""
    quoted = shlex.quote(str(version))
    return f"ai-dynamo-runtime=={quoted} ai-dynamo=={quoted}"


def cache_key(rev: str, patches: tuple[str, ...]) -> str:
    """srtctl's cache key (the commit, plus a digest of the patches), safe as a file name."""
    key = rev
    if patches:
        digest = hashlib.sha1((_PATCH_SALT + "\n".join(patches)).encode()).hexdigest()[:8]
        key = f"{rev}-patch-{digest}"
    return re.sub(r"[^A-Za-z0-9._-]", "_", key)


def _patch_commands(patches: tuple[str, ...]) -> list[str]:
    """Each `<crate> = <spec>` line replaces that crate's declaration in every Cargo.toml."""
    commands = []
    for entry in patches:
        crate = entry.split("=", 1)[0].strip()
        if crate:
            script = f"s|^{crate}[[:space:]]*=.*|{entry.replace('&', chr(92) + '&')}|"
            quoted = shlex.quote(script)
            commands.append(f"find . -name Cargo.toml -exec sed -i -E {quoted} {{}} +")
    return commands


# srtctl's cold-cache build installs libclang, protoc and git with apt and Rust with
# rustup; here the image's Rust is used, and a build without one fails saying so.
_BUILD_TOOLS = [
    "{ command -v protoc >/dev/null || ! command -v apt-get >/dev/null || "
    "{ apt-get update -qq && apt-get install -y -qq libclang-dev git protobuf-compiler "
    ">/dev/null 2>&1; }; }",
    "{ command -v cargo >/dev/null || "
    "{ echo 'a Dynamo source build needs Rust (cargo) in the image' >&2; exit 1; }; }",
]


def _source_build(wanted: Install) -> str:
    """Build ai-dynamo-runtime with maturin and install it with ai-dynamo from the checkout;
    a pinned commit's build is cached by key under a lock of its own."""
    checkout = [f"git clone --quiet {shlex.quote(str(wanted.git))} dynamo", "cd dynamo"]
    if wanted.rev is not None:
        checkout.append(f"git checkout --quiet {shlex.quote(wanted.rev)}")
    checkout += _patch_commands(wanted.patches)
    build = " && ".join(
        [
            *_BUILD_TOOLS,
            'BUILD="$(mktemp -d)"',
            'cd "$BUILD"',
            'python3 -m pip install --quiet --target "$BUILD/tools" maturin',
            *checkout,
            'export RUSTFLAGS="${RUSTFLAGS:-} -C target-cpu=native --cfg tokio_unstable"',
            "(cd lib/bindings/python && "
            'PYTHONPATH="$BUILD/tools" python3 -m maturin build --release -o "$OUT")',
            'cd "$BUILD"',
            'tar --exclude=target --exclude=.git -czf "$OUT/dynamo-src.tar.gz" dynamo',
            'cd / && rm -rf "$BUILD"',
        ]
    )
    install = " && ".join(
        [
            'SRC="$(mktemp -d)"',
            'tar -xzf "$OUT/dynamo-src.tar.gz" -C "$SRC"',
            f'python3 -m pip install --quiet --target {TARGET} "$OUT"/ai_dynamo_runtime-*.whl '
            '"$SRC/dynamo"',
            'rm -rf "$SRC"',
        ]
    )
    if wanted.rev is None:  # top_of_tree: no stable key, built every time (srtctl too)
        return f'OUT="$(mktemp -d)" && {build} && {install}'
    out = f"{CACHE}/{cache_key(wanted.rev, wanted.patches)}"
    once = f'[ -e "$OUT/.complete" ] || {{ mkdir -p "$OUT" && {build} && touch "$OUT/.complete"; }}'
    cached = f"mkdir -p {CACHE} && flock {out}.lock sh -c {shlex.quote(once)}"
    return f'export OUT="{out}" && {cached} && {install}'


def installing(argv: list[str], commands: str) -> list[str]:
    """`argv` preceded by the once-per-job install (`commands`, from `requirement`): the
    first role installs under the lock and writes the marker; the others find it."""
    marker = f"{TARGET}/{MARKER}"
    # double quotes only: the line sits inside two single-quoted layers
    version = 'python3 -c "from importlib.metadata import version; print(version(\\"ai-dynamo\\"))"'
    record = f"PYTHONPATH={TARGET} {version} > {marker}.tmp && mv {marker}.tmp {marker}"
    install = f"mkdir -p {TARGET} && flock {TARGET}.lock sh -c " + shlex.quote(
        f"[ -e {marker} ] || {{ {commands} && {record}; }}"
    )
    return ["bash", "-c", f'{install} && exec "$@"', "dynamo-install", *argv]


def env() -> dict[str, str]:
    return {"PYTHONPATH": TARGET}


def installed_version(run_dir: Path) -> str | None:
    """The ai-dynamo a job installed (its marker), or None when it installed none."""
    try:
        text = (run_dir / "dynamo-install" / MARKER).read_text().strip()
    except OSError:
        return None
    return text or None


def with_installed_version(setup: Mapping[str, Any], run_dir: Path) -> dict[str, Any]:
    """A result's setup fields with `router_version` the Dynamo the job installed, when its
    router is Dynamo's frontend and the job installed one (else as they were)."""
    out = dict(setup)
    if out.get("router") == "dynamo":
        out["router_version"] = installed_version(run_dir) or out.get("router_version")
    return out

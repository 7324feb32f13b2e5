"""scripts/bootstrap finds or installs the pinned uv, also where python3 takes no packages."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from .vllm_support import REPO

BOOTSTRAP = REPO / "scripts" / "bootstrap"
UV_VERSION = re.search(r"^UV_VERSION=(\S+)$", BOOTSTRAP.read_text(), re.M)

# A python3 like Debian's system one: pip refuses to install into it (externally
# managed), while a virtual environment made from it takes packages; "installing" uv
# there writes a uv that reports the version asked for.
FAKE_PYTHON3 = r"""#!/bin/bash
if [ "$1 $2" = "-m pip" ]; then echo "error: externally-managed-environment" >&2; exit 1; fi
if [ "$1" = "-c" ]; then exit 0; fi
if [ "$1 $2" = "-m venv" ]; then
  mkdir -p "$3/bin"
  cat >"$3/bin/python" <<'PY'
#!/bin/bash
version=${!#}
printf '#!/bin/bash\necho "uv %s"\n' "${version#uv==}" >"$(dirname "$0")/uv"
chmod +x "$(dirname "$0")/uv"
PY
  chmod +x "$3/bin/python"
  exit 0
fi
exit 3
"""


def test_uv_goes_into_its_own_environment_when_python3_takes_no_packages(
    tmp_path: Path,
) -> None:
    assert UV_VERSION is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(FAKE_PYTHON3)
    (bin_dir / "python3").chmod(0o755)
    cache = tmp_path / "cache"
    env = {"HOME": str(tmp_path), "PATH": f"{bin_dir}:/usr/bin:/bin", "XDG_CACHE_HOME": str(cache)}
    done = subprocess.run(
        [str(BOOTSTRAP), "--uv"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    uv = cache / "disagg" / f"uv-{UV_VERSION[1]}" / "bin" / "uv"
    assert done.stdout.strip() == str(uv)
    version = subprocess.run([uv, "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.split() == ["uv", UV_VERSION[1]]

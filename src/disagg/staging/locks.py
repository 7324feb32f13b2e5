"""A per-repo lock that works across nodes on a shared filesystem.

Why not `filelock`: `fcntl`/`flock` locks on NFS depend on the lock daemon and mount
options (`nolock` or `local_lock=all` make them silently node-local; Lustre mounted
with `localflock` likewise), and a lock that silently protects nothing is worse than
none. Creating a directory is atomic on every shared filesystem we meet (NFSv3/v4,
Lustre, GPFS, BeeGFS): exactly one `mkdir` of a name succeeds.

So the lock is a directory `NAME.lock/` holding `owner.json` (host, pid, a random
token, a heartbeat counter). The holder rewrites `owner.json` every `stale_after_s / 4`
seconds. A waiter breaks the lock when:

- the holder ran on this host (same boot and PID namespace) and its PID is gone, or
- `owner.json` has not changed for `stale_after_s` seconds of the waiter's own
  monotonic clock (a crashed node). Comparing observed changes rather than
  timestamps makes the rule immune to clock skew between nodes.

Breaking is serialised by a second `mkdir` guard and re-checks that the holder it
judged stale still holds the lock, so two waiters cannot both break and one of them
remove the other's fresh lock. If a holder finds its lock was broken anyway, `lost`
becomes true; the staging code treats the work as unprotected but still correct,
because downloads write to temporary files and rename them into place.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from disagg.errors import EXIT_FINDINGS, DisaggError

OWNER = "owner.json"


class LockTimeout(DisaggError):
    """Waited longer than allowed for another stager to finish."""

    exit_code = EXIT_FINDINGS


def _identity() -> dict[str, Any]:
    """Who we are, precisely enough to tell whether a PID on this host is ours to judge."""
    boot = ""
    with contextlib.suppress(OSError):
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    pidns = 0
    with contextlib.suppress(OSError):
        pidns = os.stat("/proc/self/ns/pid").st_ino
    identity: dict[str, Any] = {
        "host": socket.gethostname(),
        "boot_id": boot,
        "pid_ns": pidns,
        "pid": os.getpid(),
    }
    job = os.environ.get("SLURM_JOB_ID")
    if job:
        identity["slurm_job"] = job  # names the holder to a user on another node
    return identity


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class DirLock:
    """An exclusive lock named by a directory; see the module docstring for the rules."""

    def __init__(
        self,
        path: Path,
        *,
        stale_after_s: float = 120.0,
        poll_s: float = 0.1,
        timeout_s: float | None = None,
        on_wait: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self.stale_after_s = stale_after_s
        self.poll_s = poll_s
        self.timeout_s = timeout_s
        self.on_wait = on_wait
        self.token = secrets.token_hex(8)
        self.lost = False
        self.waited_s = 0.0
        self._held = False
        self._stop = threading.Event()
        self._beat_thread: threading.Thread | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        seen: bytes | None = None
        seen_at = started
        told = False
        while True:
            try:
                os.mkdir(self.path)
            except FileExistsError:
                pass
            else:
                self._write_owner(beat=0)
                self._held = True
                self.lost = False
                self._stop = threading.Event()
                self._beat_thread = threading.Thread(
                    target=self._heartbeat, name=f"lock-{self.path.name}", daemon=True
                )
                self._beat_thread.start()
                self.waited_s = time.monotonic() - started
                return
            state = self._observe()
            now = time.monotonic()
            if state != seen:
                seen, seen_at = state, now
            owner = _parse(state)
            if not told and self.on_wait is not None:
                self.on_wait(f"waiting for lock {self.path} held by {_describe(owner)}")
                told = True
            if self._holder_is_dead(owner):
                self._break(state, f"holder {_describe(owner)} is no longer running")
                continue
            if now - seen_at > self.stale_after_s:
                self._break(state, f"no heartbeat from {_describe(owner)} for {now - seen_at:.0f}s")
                seen_at = time.monotonic()
                continue
            if self.timeout_s is not None and now - started > self.timeout_s:
                raise LockTimeout(
                    f"gave up after {self.timeout_s:.0f}s waiting for {self.path}",
                    hint=f"held by {_describe(owner)}; if it is gone, remove that directory",
                )
            time.sleep(self.poll_s)

    def release(self) -> None:
        if not self._held:
            return
        self._held = False
        self._stop.set()
        if self._beat_thread is not None:
            self._beat_thread.join()
            self._beat_thread = None
        if _parse(self._observe()).get("token") != self.token:
            self.lost = True
            return  # someone broke it; the directory is theirs now
        _discard(self.path, f"released-{self.token}")

    def held(self) -> bool:
        """Whether a live holder has the lock now: the directory is there and its owner is
        neither dead (on this host) nor silent past `stale_after_s`."""
        try:
            since = time.time() - self.path.stat().st_mtime
        except OSError:
            return False
        owner = _parse(self._observe())
        if not owner:  # taken, owner file not written yet (or a holder that died in between)
            return since <= self.stale_after_s
        if self._holder_is_dead(owner):
            return False
        beat = owner.get("time")
        return not isinstance(beat, (int, float)) or time.time() - beat <= self.stale_after_s

    def holder(self) -> str:
        """Who holds the lock now, in words (`host pid N`, with the Slurm job when known)."""
        return _describe(_parse(self._observe()))

    def __enter__(self) -> DirLock:
        self.acquire()
        return self

    def __exit__(self, *_: object) -> None:
        self.release()

    def _observe(self) -> bytes | None:
        try:
            return (self.path / OWNER).read_bytes()
        except OSError:
            return None

    def _write_owner(self, *, beat: int) -> None:
        data = {**_identity(), "token": self.token, "beat": beat, "time": time.time()}
        tmp = self.path / f".{OWNER}.{self.token}.tmp"
        tmp.write_text(json.dumps(data))
        os.replace(tmp, self.path / OWNER)

    def _heartbeat(self) -> None:
        beat = 0
        while not self._stop.wait(max(self.stale_after_s / 4, 0.05)):
            if _parse(self._observe()).get("token") != self.token:
                self.lost = True
                return
            beat += 1
            try:
                self._write_owner(beat=beat)
            except OSError:
                self.lost = True
                return

    def _holder_is_dead(self, owner: dict[str, Any]) -> bool:
        me = _identity()
        same_namespace = all(owner.get(k) == me[k] for k in ("host", "boot_id", "pid_ns"))
        pid = owner.get("pid")
        return same_namespace and isinstance(pid, int) and not _pid_alive(pid)

    def _break(self, observed: bytes | None, reason: str) -> None:
        """Remove a stale lock, unless someone else is already doing so or it changed hands."""
        guard = self.path.with_name(self.path.name + ".breaking")
        try:
            os.mkdir(guard)
        except FileExistsError:
            with contextlib.suppress(OSError):
                if time.time() - guard.stat().st_mtime > self.stale_after_s:
                    os.rmdir(guard)  # a breaker crashed between its two steps
            time.sleep(self.poll_s)
            return
        try:
            if self._observe() != observed or not _discard(self.path, f"stale-{self.token}"):
                return
            if self.on_wait is not None:
                self.on_wait(f"broke stale lock {self.path}: {reason}")
        finally:
            with contextlib.suppress(OSError):
                os.rmdir(guard)


def _discard(path: Path, tag: str) -> bool:
    """Rename the lock directory aside (one atomic step), then delete it; False if gone."""
    tomb = path.with_name(f"{path.name}.{tag}")
    try:
        os.rename(path, tomb)
    except OSError:
        return False
    shutil.rmtree(tomb, ignore_errors=True)
    return True


def _parse(state: bytes | None) -> dict[str, Any]:
    if not state:
        return {}
    try:
        data = json.loads(state)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _describe(owner: dict[str, Any]) -> str:
    if not owner:
        return "a process that has not written its owner file yet"
    job = f" (Slurm job {owner['slurm_job']})" if owner.get("slurm_job") else ""
    return f"{owner.get('host', '?')} pid {owner.get('pid', '?')}{job}"

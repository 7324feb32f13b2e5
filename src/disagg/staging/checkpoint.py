"""The one checkpoint-completeness contract. Standard library only.

Runs as `python3 checkpoint.py PATH|REPO_ID [--revision R] [--cache DIR] [--json]`
inside any engine container, and is imported by `disagg check-model`, the submit
pre-flight and the in-job stage, so that all of them agree on what "complete" means.

A checkpoint is complete when:

- `config.json` exists; `tokenizer_config.json` exists together with at least one of
  `tokenizer.json`, `tokenizer.model` or a tiktoken vocabulary (`*.tiktoken`, `tiktoken.model`);
- weights: `model.safetensors.index.json` whose `weight_map` names at least one shard
  and every named shard exists, or a single `model.safetensors`;
- every safetensors file is whole: size == 8 + header length + largest tensor end
  offset (an aborted pull leaves a short file). Only headers are read, and a header
  is checked as strictly as the `safetensors` library checks it (strict JSON, a
  known dtype per tensor, offsets that tile the data with no gap or overlap, each
  tensor exactly dtype x shape bytes, a header of at most 100,000,000 bytes);
- in a Hugging Face cache entry (`models--org--name/refs/REV -> snapshots/SHA/`):
  symlinks resolve, no `.incomplete` blob belongs to the snapshot, and every file of
  the commit's tree listing (`trees/SHA.json`, written by the download tool before it
  fetches anything) is present, so an interrupted download is never taken as complete;
- every file looked at lies inside the checkpoint once symlinks are resolved (a cache
  snapshot's links point into its own repo's `blobs/`) and is a regular file; nothing
  outside is opened, so nothing of it can be printed.

One file on purpose, longer than the project's other modules: it is copied alone
into engine containers and must run there without the package.

Every problem is reported at once. Exit status: 0 complete, 1 incomplete, 2 unusable input.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import operator
import os
import re
import stat
import struct
import sys
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from itertools import chain, repeat
from typing import Any, BinaryIO

CONFIG = "config.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model")
TIKTOKEN_NAMES = ("tiktoken.model",)
TIKTOKEN_SUFFIX = ".tiktoken"
INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"
SAFETENSORS_SUFFIX = ".safetensors"
MAX_HEADER_BYTES = 100_000_000  # the safetensors library's own limit
REPO_FOLDER_PREFIX = "models--"
COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
REPO_ID_RE = re.compile(r"^(?:[A-Za-z0-9][\w.-]*/)?[A-Za-z0-9][\w.-]*$")

EXIT_COMPLETE = 0
EXIT_INCOMPLETE = 1
EXIT_UNUSABLE = 2

# Problem kinds, stable strings for `--json` consumers.
MISSING_FILE = "missing-file"
MISSING_TOKENIZER = "missing-tokenizer"
MISSING_WEIGHTS = "missing-weights"
BAD_INDEX = "unreadable-index"
NO_SHARDS = "index-names-no-shards"
MISSING_SHARD = "missing-shard"
TRUNCATED = "truncated"
OVERSIZED = "oversized"
BAD_HEADER = "unreadable-header"
DANGLING_LINK = "dangling-link"
INCOMPLETE_BLOB = "incomplete-blob"
MISSING_LISTED = "missing-listed-file"
NOT_IN_CACHE = "not-in-cache"
UNKNOWN_REVISION = "unknown-revision"
OUTSIDE = "outside-checkpoint"
NOT_REGULAR = "not-a-regular-file"

_HINTS = {
    NOT_IN_CACHE: "stage it first: `disagg stage RECIPE` (or download it into this cache)",
    UNKNOWN_REVISION: "stage this revision first: `disagg stage RECIPE`",
    TRUNCATED: "an interrupted copy or download; re-run `disagg stage` (it resumes) or re-copy",
    INCOMPLETE_BLOB: "a download was interrupted; re-run `disagg stage` to finish it",
    MISSING_LISTED: "a download was interrupted; re-run `disagg stage` to finish it",
    DANGLING_LINK: "the blob a snapshot link points to is gone; re-run `disagg stage`",
    MISSING_SHARD: "copy or download the missing shards; re-run `disagg stage`",
    BAD_HEADER: "the file is not a safetensors file or is corrupt; download it again",
    OVERSIZED: "the file has bytes after its last tensor; download it again",
    OUTSIDE: "a checkpoint holds its own files (a cache snapshot links only into its own "
    "repo's blobs/); copy the files in instead of linking or naming them elsewhere",
    NOT_REGULAR: "replace it with the real file",
}


class UnusableInput(Exception):
    """The target cannot be checked at all (not a directory, not a repo id)."""


@dataclass(frozen=True)
class Problem:
    """One reason the checkpoint is not complete; `path` is relative to the checked directory."""

    kind: str
    path: str
    detail: str
    expected_bytes: int | None = None
    actual_bytes: int | None = None

    def __str__(self) -> str:
        return f"{self.path}: {self.detail}" if self.path else self.detail

    def to_dict(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if value is not None}


@dataclass
class Report:
    """The outcome of one check. `directory` is the snapshot or plain directory examined.
    Fields in the order of the JSON report."""

    target: str
    directory: str | None = None
    repo_id: str | None = None
    revision: str | None = None
    commit: str | None = None
    safetensors_files: int = 0
    weight_bytes: int = 0
    bytes_read: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.problems

    @property
    def exit_code(self) -> int:
        return EXIT_COMPLETE if self.complete else EXIT_INCOMPLETE

    def add(self, kind: str, path: str, detail: str, **sizes: int | None) -> None:
        self.problems.append(Problem(kind, path, detail, **sizes))

    def listed(self, head: str) -> str:
        """`head:` then one line per problem, as staging errors name them."""
        return "\n".join([f"{head}:", *(f"  - {problem}" for problem in self.problems)])

    def hints(self) -> list[str]:
        """What to do, once per kind of problem, in the order problems were found."""
        return list(dict.fromkeys(_HINTS[p.kind] for p in self.problems if p.kind in _HINTS))

    def to_dict(self) -> dict[str, Any]:
        problems = [p.to_dict() for p in self.problems]
        fields = {"target": self.target, "complete": self.complete} | vars(self)
        return fields | {"problems": problems, "hints": self.hints()}


# --- confinement ------------------------------------------------------------------------


class Scope:
    """The files one check may look at: names below `base` that resolve below `root`.

    `root` is a real path: the checkpoint directory itself, or, for a cache snapshot,
    its repo entry (snapshot links point into the same repo's `blobs/`). A name that
    is absolute, climbs with `..`, or resolves elsewhere is reported, never opened;
    only regular files are opened (a FIFO would block forever), and nothing read from
    a refused file can reach a message because nothing is read from it.
    """

    def __init__(self, report: Report, base: str, root: str | None = None) -> None:
        self.report = report
        self.base = base
        self.root = os.path.realpath(root if root is not None else base)
        self._found: dict[str, str | None] = {}

    def contains(self, real: str) -> bool:
        return real == self.root or real.startswith(self.root.rstrip(os.sep) + os.sep)

    def find(self, name: str) -> str | None:
        """The real path of `name` when it is a regular file in scope; problems are reported
        once. None without a problem means nothing is there."""
        if name not in self._found:
            self._found[name] = self._find(name)
        return self._found[name]

    def reported(self, name: str) -> bool:
        return any(p.path == name for p in self.report.problems)

    def _find(self, name: str) -> str | None:
        if not _stays_below(name):
            self.report.add(OUTSIDE, name, "names a path outside the checkpoint")
            return None
        path = os.path.join(self.base, name)
        try:
            link = stat.S_ISLNK(os.lstat(path).st_mode)
        except OSError:
            return None
        real = os.path.realpath(path)
        target = os.readlink(path) if link else None
        if not self.contains(real):
            pointer = f" (symlink to {target})" if link else ""
            self.report.add(OUTSIDE, name, f"resolves outside the checkpoint{pointer}")
            return None
        try:
            mode = os.stat(real).st_mode
        except OSError:
            self.report.add(DANGLING_LINK, name, f"symlink to {target} does not resolve")
            return None
        if not stat.S_ISREG(mode):
            self.report.add(NOT_REGULAR, name, f"is a {_file_kind(mode)}, not a regular file")
            return None
        return real

    def open(self, name: str) -> BinaryIO | None:
        """`name` opened for reading when `find` accepts it and it is still a regular file."""
        real = self.find(name)
        if real is None:
            return None
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced since `find` looked
            os.close(fd)
            self.report.add(NOT_REGULAR, name, "is not a regular file")
            return None
        return os.fdopen(fd, "rb")


def _stays_below(name: str) -> bool:
    """A relative name that, as written, stays below its directory (no `..`, not absolute)."""
    if not name or "\0" in name or os.path.isabs(name):
        return False
    return ".." not in name.replace("\\", "/").split("/")


def _file_kind(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "directory"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    )
    return next((name for test, name in kinds if test(mode)), "special file")


# --- plain directory -------------------------------------------------------------------


def check_directory(
    path: str,
    *,
    report: Report | None = None,
    model_files: bool = True,
    root: str | None = None,
) -> Report:
    """Check a checkpoint directory (plain or a cache snapshot) against the contract.

    `model_files=False` is for repos that are not checkpoints (a tokenizer repo staged
    as an extra): only what is there must be whole, nothing is required. Every file
    looked at must resolve below `root` (default: the directory itself, or for a cache
    snapshot its repo entry).
    """
    report = report or Report(target=path)
    report.directory = path
    try:
        names = {entry.name for entry in os.scandir(path)}
    except FileNotFoundError:
        report.add(MISSING_FILE, "", f"directory {path} does not exist")
        return report
    except NotADirectoryError as exc:
        raise UnusableInput(f"{path} is not a directory") from exc
    except PermissionError as exc:
        raise UnusableInput(f"{path} is not readable: {exc.strerror}") from exc
    if root is None:  # a cache snapshot's files live in its repo's blobs/
        parts = _snapshot_parts(os.path.realpath(path))
        root = parts[0] if parts is not None else path
    scope = Scope(report, path, root)

    def present(name: str) -> bool:
        """True for a regular file in scope; anything else there is reported once."""
        return name in names and scope.find(name) is not None

    if not model_files:
        for name in sorted(n for n in names if n.endswith(SAFETENSORS_SUFFIX)):
            if present(name):
                _check_safetensors(scope, name)
        return report
    if not present(CONFIG) and not scope.reported(CONFIG):
        report.add(MISSING_FILE, CONFIG, "config.json is missing")
    _check_tokenizer(scope, names, present)
    for shard in _weight_files(scope, names, present):
        _check_safetensors(scope, shard)
    return report


def _check_tokenizer(scope: Scope, names: set[str], present: Callable[[str], bool]) -> None:
    if not present(TOKENIZER_CONFIG) and not scope.reported(TOKENIZER_CONFIG):
        scope.report.add(MISSING_FILE, TOKENIZER_CONFIG, "tokenizer_config.json is missing")
    vocab = [n for n in (*TOKENIZER_FILES, *TIKTOKEN_NAMES) if present(n)]
    vocab += [n for n in sorted(names) if n.endswith(TIKTOKEN_SUFFIX) and present(n)]
    if not vocab:
        scope.report.add(
            MISSING_TOKENIZER,
            "",
            "no tokenizer vocabulary: expected tokenizer.json, tokenizer.model or a tiktoken file",
        )


def _weight_files(scope: Scope, names: set[str], present: Callable[[str], bool]) -> list[str]:
    """Relative paths of the safetensors files to verify (named shards plus top-level files)."""
    report = scope.report
    if INDEX not in names and SINGLE not in names:
        report.add(
            MISSING_WEIGHTS,
            "",
            f"no weights: expected {INDEX} with its shards, or a single {SINGLE}",
        )
        return []
    top_level = sorted(n for n in names if n.endswith(SAFETENSORS_SUFFIX))
    shards = _read_index(scope) if INDEX in names and present(INDEX) else None
    if shards is None:
        return [n for n in top_level if present(n)]
    files: list[str] = []
    for shard in shards:
        if scope.find(shard) is not None:
            files.append(shard)
        elif not scope.reported(shard):
            report.add(MISSING_SHARD, shard, f"shard named by {INDEX} is missing")
    return files + [n for n in top_level if n not in shards and present(n)]


def _read_index(scope: Scope) -> list[str] | None:
    report = scope.report
    try:
        handle = scope.open(INDEX)
        if handle is None:
            return None
        with handle:
            raw = handle.read()
    except OSError as exc:
        report.add(BAD_INDEX, INDEX, f"cannot read: {exc.strerror}")
        return None
    report.bytes_read += len(raw)
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        report.add(BAD_INDEX, INDEX, f"not valid JSON: {exc}")
        return None
    except RecursionError:
        report.add(BAD_INDEX, INDEX, "not valid JSON: nested too deep")
        return None
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict):
        report.add(BAD_INDEX, INDEX, "has no `weight_map` object")
        return None
    try:
        named = set(weight_map.values())  # in bulk: 92k entries name 163 shards in R1
    except TypeError:  # a list or map among them
        named = {v for v in weight_map.values() if isinstance(v, str)}
    shards = sorted(v for v in named if isinstance(v, str) and v)
    if not shards:
        report.add(NO_SHARDS, INDEX, "`weight_map` names no shard files")
    return shards


def _check_safetensors(scope: Scope, name: str) -> None:
    """Header-only wholeness check: size must be 8 + header length + largest end offset."""
    report = scope.report
    try:
        handle = scope.open(name)
        if handle is None:
            return
        with handle:
            size = os.fstat(handle.fileno()).st_size
            prefix = handle.read(8)
            report.bytes_read += len(prefix)
            if len(prefix) < 8:
                report.add(TRUNCATED, name, f"only {size} bytes; not even the 8-byte header length")
                return
            (header_len,) = struct.unpack("<Q", prefix)
            if header_len > MAX_HEADER_BYTES:
                report.add(BAD_HEADER, name, f"header length {header_len} is not plausible")
                return
            if 8 + header_len > size:
                report.add(
                    TRUNCATED,
                    name,
                    f"cut inside its header: needs at least {8 + header_len} bytes, has {size}",
                    expected_bytes=8 + header_len,
                    actual_bytes=size,
                )
                return
            raw = handle.read(header_len)
            report.bytes_read += len(raw)
    except OSError as exc:
        report.add(BAD_HEADER, name, f"cannot read: {exc.strerror}")
        return
    data_end = _largest_end_offset(raw)
    if isinstance(data_end, str):
        report.add(BAD_HEADER, name, data_end)
        return
    report.safetensors_files += 1
    report.weight_bytes += size
    expected = 8 + header_len + data_end
    if size != expected:
        kind, detail = (
            (TRUNCATED, f"truncated: {size} of {expected} bytes ({expected - size} missing)")
            if size < expected
            else (OVERSIZED, f"{size} bytes but its header accounts for {expected}")
        )
        report.add(kind, name, detail, expected_bytes=expected, actual_bytes=size)


# Bits per element of every dtype the safetensors library reads (sub-byte ones included).
DTYPE_BITS = {
    **dict.fromkeys(("BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0"), 8),
    **dict.fromkeys(("F8_E4M3FNUZ", "F8_E5M2FNUZ"), 8),
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    **dict.fromkeys(("I16", "U16", "F16", "BF16"), 16),
    **dict.fromkeys(("I32", "U32", "F32"), 32),
    **dict.fromkeys(("C64", "F64", "I64", "U64"), 64),
}
_U64_MAX = 2**64 - 1
METADATA_KEY = "__metadata__"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _is_count(value: Any) -> bool:
    return type(value) is int and 0 <= value <= _U64_MAX


def _largest_end_offset(raw: bytes) -> int | str:
    """The end of the tensor data a header describes, or why the header is invalid.

    As strict as the `safetensors` library: UTF-8, strict JSON (no NaN, nothing but
    whitespace after the object), `__metadata__` a map of text, every tensor a known
    dtype, a shape of counts and two offsets; sorted by offsets, the tensors tile the
    data from 0 with no gap or overlap, and each spans exactly dtype x shape bytes.

    A valid header passes a check done in bulk; an invalid one is then checked tensor
    by tensor, which says what is wrong. The cyclic garbage collector is paused while
    a header is parsed: parsing allocates objects without a cycle (about a million for
    a 163-shard model), which collections would only walk.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        header = _HEADER_JSON.decode(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return "unreadable header: not valid UTF-8 JSON (or bytes after the object)"
    except RecursionError:  # the parser recurses per level: a hostile header nests deeply
        return "unreadable header: JSON nested too deep"
    finally:
        if collecting:
            gc.enable()
    if not isinstance(header, dict):
        return "unreadable header: not a JSON object"
    metadata = header.pop(METADATA_KEY, None)
    if metadata is not None and not (
        isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values())
    ):
        return f"unreadable header: {METADATA_KEY} must map text to text"
    end = _bulk_end_offset(header) if header else None
    return end if end is not None else _checked_end_offset(header)


_HEADER_JSON = json.JSONDecoder(parse_constant=_no_constant)  # one for every header
_OFFSETS = operator.itemgetter("data_offsets")
_DTYPE = operator.itemgetter("dtype")
_SHAPE = operator.itemgetter("shape")


def _only(values: Iterable[Any], kind: type) -> bool:
    """Whether every value is exactly of `kind` (a bool is no int here)."""
    return set(map(type, values)) <= {kind}


def _bulk_end_offset(tensors: dict[str, Any]) -> int | None:
    """The data end when every tensor entry is valid, else None: the verdict of
    `_checked_end_offset`, reached with whole-list operations instead of one entry at a
    time (that loop took most of the check of a 163-shard model)."""
    infos = list(tensors.values())
    if not _only(infos, dict):
        return None
    try:
        offsets = list(map(_OFFSETS, infos))
        bits = list(map(DTYPE_BITS.__getitem__, map(_DTYPE, infos)))
        shapes = list(map(_SHAPE, infos))
    except (KeyError, TypeError):  # a missing field, an unknown or unhashable dtype
        return None
    if not (_only(offsets, list) and set(map(len, offsets)) == {2} and _only(shapes, list)):
        return None
    starts = list(map(_FIRST, offsets))
    ends = list(map(_SECOND, offsets))
    dims = list(chain.from_iterable(shapes))
    if not (_only(starts, int) and _only(ends, int) and _only(dims, int)):
        return None
    if dims and (min(dims) < 0 or max(dims) > _U64_MAX):
        return None
    total_bits = list(map(operator.mul, bits, map(math.prod, shapes)))
    if not _tiles(starts, ends, total_bits):
        # Not in offset order as written (writers use it): sort by (start, end).
        order = sorted(range(len(starts)), key=lambda i: (starts[i], ends[i]))
        columns = (starts, ends, total_bits)
        starts, ends, total_bits = ([column[i] for i in order] for column in columns)
        if not _tiles(starts, ends, total_bits):
            return None
    end: int = ends[-1]
    if end > _U64_MAX or (end > _U64_MAX // 8 and max(total_bits) > _U64_MAX):
        return None  # (a span that fits needs no more bits than u64 holds)
    return end


_FIRST = operator.itemgetter(0)
_SECOND = operator.itemgetter(1)


def _tiles(starts: list[int], ends: list[int], total_bits: list[int]) -> bool:
    """Whether spans in this order start at 0, each where the one before ends, and each
    holds exactly its bits (so, in this order, they are also sorted by offsets and none
    ends inside a byte or before it starts)."""
    return (
        starts[0] == 0
        and starts[1:] == ends[:-1]
        and list(map(operator.mul, map(operator.sub, ends, starts), repeat(8))) == total_bits
    )


def _checked_end_offset(header: dict[str, Any]) -> int | str:
    """`_largest_end_offset` tensor by tensor: the first problem found, or the data end."""
    spans: list[tuple[int, int, int, str]] = []
    for name, info in header.items():
        described = _tensor_span(info)
        if isinstance(described, str):
            return f"unreadable header: tensor {_short(name)} {described}"
        start, stop, nbytes = described
        spans.append((start, stop, nbytes, name))
    spans.sort(key=lambda span: (span[0], span[1]))
    end = 0
    for start, stop, nbytes, name in spans:
        if start != end or stop < start:
            return (
                f"unreadable header: tensor {_short(name)} has data_offsets [{start}, {stop}]"
                f" but the previous tensor ends at {end} (tensors must not overlap or leave gaps)"
            )
        if stop - start != nbytes:
            return (
                f"unreadable header: tensor {_short(name)} spans {stop - start} bytes"
                f" but its dtype and shape need {nbytes}"
            )
        end = stop
    return end


def _tensor_span(info: Any) -> tuple[int, int, int] | str:
    """(start, stop, bytes its dtype x shape need) of one tensor entry, or what is wrong."""
    if not isinstance(info, dict):
        return "is not an object"
    offsets = info.get("data_offsets")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_count, offsets))):
        return "has no valid data_offsets (two non-negative integers)"
    dtype = info.get("dtype")
    bits = DTYPE_BITS.get(dtype) if isinstance(dtype, str) else None
    if bits is None:
        return f"has an unknown dtype {_short(dtype)}"
    shape = info.get("shape")
    if not (isinstance(shape, list) and all(map(_is_count, shape))):
        return "has no valid shape (a list of non-negative integers)"
    total_bits = math.prod(shape) * bits
    if total_bits > _U64_MAX:
        return "has a shape too large to address"
    if total_bits % 8:
        return "ends inside a byte (sub-byte dtype with an odd element count)"
    return offsets[0], offsets[1], total_bits // 8


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


# --- Hugging Face cache ----------------------------------------------------------------


def repo_folder_name(repo_id: str) -> str:
    """`org/name` -> `models--org--name` (the cache's folder naming)."""
    return REPO_FOLDER_PREFIX + repo_id.replace("/", "--")


def repo_id_from_folder(folder: str) -> str:
    return folder[len(REPO_FOLDER_PREFIX) :].replace("--", "/")


def is_repo_id(text: str) -> bool:
    return bool(REPO_ID_RE.match(text)) and "--" not in text and ".." not in text


def default_hub_cache() -> str:
    """The hub cache the download tool would use: HF_HUB_CACHE, else HF_HOME/hub."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "huggingface",
    )
    return os.path.join(home, "hub")


def resolve_commit(entry: str, revision: str) -> str | None:
    """The commit a revision names in a cache entry (`refs/REV`, or REV itself if a commit).

    Only a regular file below the entry is read: `--revision ../../x` reads nothing.
    """
    if COMMIT_RE.match(revision):
        return revision
    try:
        handle = Scope(Report(target=entry), entry).open(f"refs/{revision}")
        if handle is None:
            return None
        with handle:
            commit = handle.read(4096).decode("utf-8", "replace").strip()
    except OSError:
        return None
    return commit if COMMIT_RE.match(commit) else None


def check_cache_entry(
    entry: str, revision: str = "main", *, target: str | None = None, model_files: bool = True
) -> Report:
    """Check `models--org--name` at a revision: resolve refs -> snapshot, then the contract."""
    entry = entry.rstrip("/") or entry
    report = Report(
        target=target or entry,
        repo_id=repo_id_from_folder(os.path.basename(entry)),
        revision=revision,
    )
    commit = resolve_commit(entry, revision)
    if commit is None:
        report.directory = entry
        report.add(UNKNOWN_REVISION, f"refs/{revision}", f"revision {revision!r} is not in {entry}")
        return report
    report.commit = commit
    snapshot = os.path.join(entry, "snapshots", commit)
    if not os.path.isdir(snapshot):
        report.directory = snapshot
        report.add(MISSING_FILE, "", f"snapshot {commit} of revision {revision!r} does not exist")
        return report
    root = _snapshot_root(entry, snapshot)
    if root is None:
        report.directory = snapshot
        report.add(OUTSIDE, "", f"snapshot {commit} links outside any copy of this repo")
        return report
    check_directory(snapshot, report=report, model_files=model_files, root=root)
    _check_snapshot_links(Scope(report, snapshot, root))
    _check_blobs_and_listing(report, entry, snapshot, commit)
    return report


def _snapshot_root(entry: str, snapshot: str) -> str | None:
    """Where a snapshot's files may live: its own repo entry, or (a linked legacy copy)
    the entry of the same repo that the snapshot directory really is in."""
    real = os.path.realpath(snapshot)
    own = os.path.realpath(entry)
    if Scope(Report(target=entry), entry).contains(real):
        return own
    parts = _snapshot_parts(real)
    if parts is not None and os.path.basename(parts[0]) == os.path.basename(own):
        return parts[0]
    return None


def _check_snapshot_links(scope: Scope) -> None:
    """Every symlink below the snapshot resolves, inside the scope (top level checked already)."""
    report, snapshot = scope.report, scope.base
    for dirpath, dirnames, filenames in os.walk(snapshot):
        for name in filenames + dirnames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, snapshot)
            if scope.reported(rel) or not os.path.islink(full):
                continue
            target = os.readlink(full)
            if not scope.contains(os.path.realpath(full)):
                report.add(OUTSIDE, rel, f"resolves outside the checkpoint (symlink to {target})")
            elif not os.path.exists(full):
                report.add(DANGLING_LINK, rel, f"symlink to {target} does not resolve")


def _read_listing(entry: str, commit: str, report: Report) -> dict[str, dict[str, Any]] | None:
    """The download tool's tree listing of `commit` (files it meant to fetch), if it left one."""
    try:
        handle = Scope(report, entry).open(f"trees/{commit}.json")
        if handle is None:
            return None
        with handle:
            raw = handle.read()
    except OSError:
        return None
    report.bytes_read += len(raw)
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return None
    return {k: v for k, v in files.items() if isinstance(v, dict)}


def _check_blobs_and_listing(report: Report, entry: str, snapshot: str, commit: str) -> None:
    listing = _read_listing(entry, commit, report)
    incomplete = _incomplete_blobs(entry)
    if listing is not None:
        blob_names = {
            str(info.get("lfs_sha256") or info.get("blob_id")): name
            for name, info in listing.items()
        }
        for blob in incomplete:
            if blob in blob_names:
                report.add(
                    INCOMPLETE_BLOB,
                    blob_names[blob],
                    f"download interrupted: blobs/{blob}.incomplete",
                )
        already = {p.path for p in report.problems}
        for name in sorted(listing):
            if name in already:
                continue
            if not _stays_below(name):
                report.add(OUTSIDE, name, "the commit's tree lists a path outside the snapshot")
            elif not os.path.lexists(os.path.join(snapshot, name)):
                report.add(MISSING_LISTED, name, "listed in the commit's tree but not downloaded")
        return
    for blob in incomplete:
        report.add(
            INCOMPLETE_BLOB,
            f"blobs/{blob}.incomplete",
            "download interrupted (no tree listing says which revision it belongs to)",
        )


def _incomplete_blobs(entry: str) -> list[str]:
    try:
        names = os.listdir(os.path.join(entry, "blobs"))
    except OSError:
        return []
    return sorted(n[: -len(".incomplete")] for n in names if n.endswith(".incomplete"))


def check_repo(repo_id: str, revision: str = "main", *, cache: str | None = None) -> Report:
    """Find `repo_id` in the cache (canonical first, then legacy) and check it.

    Returns the first complete copy; otherwise the report of the first copy found.
    """
    folder = repo_folder_name(repo_id)
    # `--cache DIR`: DIR/hub (canonical), then DIR itself (legacy)
    searched = [default_hub_cache()] if cache is None else [os.path.join(cache, "hub"), cache]
    first: Report | None = None
    for hub in searched:
        entry = os.path.join(hub, folder)
        if not os.path.isdir(entry):
            continue
        report = check_cache_entry(entry, revision, target=repo_id)
        if report.complete:
            return report
        first = first or report
    if first is not None:
        return first
    report = Report(target=repo_id, repo_id=repo_id, revision=revision)
    report.add(NOT_IN_CACHE, "", f"{repo_id} is not in the cache (looked in {', '.join(searched)})")
    return report


def _snapshot_parts(path: str) -> tuple[str, str] | None:
    """(entry, commit) if `path` is `.../models--org--name/snapshots/COMMIT`."""
    parent, commit = os.path.split(os.path.abspath(path))
    entry, snapshots = os.path.split(parent)
    if snapshots == "snapshots" and os.path.basename(entry).startswith(REPO_FOLDER_PREFIX):
        return entry, commit
    return None


def check(target: str, *, revision: str | None = None, cache: str | None = None) -> Report:
    """Dispatch on what `target` is: a directory, a cache entry, a snapshot, or a repo id."""
    if os.path.isdir(target):
        name = os.path.basename(os.path.abspath(target))
        if name.startswith(REPO_FOLDER_PREFIX):
            return check_cache_entry(target, revision or "main", target=target)
        parts = _snapshot_parts(target)
        if parts is not None:
            entry, commit = parts
            return check_cache_entry(entry, revision or commit, target=target)
        return check_directory(target)
    if os.path.exists(target):
        raise UnusableInput(f"{target} is a file; expected a checkpoint directory or a repo id")
    if not is_repo_id(target):
        raise UnusableInput(
            f"{target} is neither an existing directory nor a repo id like org/name"
        )
    return check_repo(target, revision or "main", cache=cache)


# --- command line ----------------------------------------------------------------------


def format_report(report: Report) -> str:
    """Plain-text rendering used by the standalone script (the CLI renders with colour)."""
    where = report.directory or report.target
    if report.complete:
        return (
            f"complete: {where} ({report.safetensors_files} safetensors files, "
            f"{report.weight_bytes} bytes; read {report.bytes_read} bytes)"
        )
    lines = [f"incomplete: {where} ({len(report.problems)} problems)"]
    lines += [f"  - {problem}" for problem in report.problems]
    lines += [f"  hint: {hint}" for hint in report.hints()]
    return "\n".join(lines)


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="checkpoint.py", description="Check that a model checkpoint is complete."
    )
    parser.add_argument("target", help="checkpoint directory, cache entry, or repo id org/name")
    parser.add_argument("--revision", default=None, help="branch, tag or commit (default main)")
    parser.add_argument("--cache", default=None, help="HF_HOME-style cache root")
    parser.add_argument("--json", action="store_true", help="print a JSON report")
    args = parser.parse_args(list(argv) if argv is not None else None)
    try:
        report = check(args.target, revision=args.revision, cache=args.cache)
    except UnusableInput as exc:
        if args.json:
            print(json.dumps({"target": args.target, "complete": False, "error": str(exc)}))
        else:
            print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    print(json.dumps(report.to_dict(), indent=2) if args.json else format_report(report))
    return report.exit_code


if __name__ == "__main__":
    sys.exit(main())

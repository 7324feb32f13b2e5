"""The contract's header check agrees with the `safetensors` library: what it refuses, we refuse.

Each case writes a real file and asks both: the library (`safe_open`) and the
contract (`check_directory`). The property test mutates valid headers at random and
requires the same verdict from both.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors import safe_open

from disagg.staging import checkpoint as ck


def _write(path: Path, header: bytes, data_len: int) -> None:
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * data_len)


def library_accepts(path: Path) -> bool:
    try:
        with safe_open(str(path), "np") as handle:
            list(handle.keys())
    except Exception:  # the library raises its own error type and a few built-in ones
        return False
    return True


def contract_accepts(directory: Path) -> bool:
    return ck.check_directory(str(directory), model_files=False).complete


def _tensor(dtype: str, shape: list[int], start: int, stop: int) -> dict[str, Any]:
    return {"dtype": dtype, "shape": shape, "data_offsets": [start, stop]}


VALID = {
    "__metadata__": {"format": "pt"},
    "a": _tensor("F32", [2, 2], 0, 16),
    "b": _tensor("BF16", [3], 16, 22),
    "c": _tensor("U8", [0], 22, 22),
}
CASES: dict[str, tuple[bytes, int]] = {
    # name: (header bytes, data bytes after the header)
    "trailing garbage": (json.dumps(VALID).encode() + b"xx", 22),
    "trailing NUL": (json.dumps(VALID).encode() + b"\0", 22),
    "trailing brace": (json.dumps(VALID).encode() + b"}", 22),
    "start after end": (json.dumps({"a": _tensor("U8", [0], 2, 0)}).encode(), 2),
    "overlapping": (
        json.dumps({"a": _tensor("U8", [2], 0, 2), "b": _tensor("U8", [2], 1, 3)}).encode(),
        3,
    ),
    "same span twice": (
        json.dumps({"a": _tensor("U8", [2], 0, 2), "b": _tensor("U8", [2], 0, 2)}).encode(),
        2,
    ),
    "gap before first": (json.dumps({"a": _tensor("U8", [2], 2, 4)}).encode(), 4),
    "gap between": (
        json.dumps({"a": _tensor("U8", [2], 0, 2), "b": _tensor("U8", [2], 3, 5)}).encode(),
        5,
    ),
    "dtype x shape too small": (json.dumps({"a": _tensor("F32", [2], 0, 4)}).encode(), 4),
    "dtype x shape too large": (json.dumps({"a": _tensor("U8", [2], 0, 4)}).encode(), 4),
    "unknown dtype": (json.dumps({"a": _tensor("F128", [1], 0, 16)}).encode(), 16),
    "sub-byte misaligned": (json.dumps({"a": _tensor("F4", [3], 0, 2)}).encode(), 2),
    "shape overflow": (json.dumps({"a": _tensor("U8", [2**40, 2**40], 0, 2)}).encode(), 2),
    "negative shape": (json.dumps({"a": _tensor("U8", [-2], 0, 2)}).encode(), 2),
    "bool in shape": (json.dumps({"a": _tensor("U8", [True, 2], 0, 2)}).encode(), 2),
    "two negative dims": (json.dumps({"a": _tensor("U8", [-2, -2], 0, 4)}).encode(), 4),
    "dim past u64 beside a zero": (json.dumps({"a": _tensor("U8", [2**64, 0], 0, 0)}).encode(), 0),
    "float offset": (b'{"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2.0]}}', 2),
    "three offsets": (b'{"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2, 2]}}', 2),
    "offset past u64": (
        json.dumps({"a": _tensor("U8", [0], 2**64, 2**64)}).encode(),
        0,
    ),
    "missing shape": (b'{"a": {"dtype": "U8", "data_offsets": [0, 2]}}', 2),
    "NaN": (
        b'{"__metadata__": {"x": NaN}, "a": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]}}',
        0,
    ),
    "metadata not text": (b'{"__metadata__": {"x": 1}}', 0),
    "not an object": (b"[1, 2]", 0),
    "entry not an object": (b'{"a": 1}', 0),
    "not UTF-8": (b'{"\xff": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]}}', 0),
    "bytes after the data": (json.dumps({"a": _tensor("U8", [2], 0, 2)}).encode(), 3),
    "data cut short": (json.dumps({"a": _tensor("U8", [2], 0, 2)}).encode(), 1),
}


def test_a_valid_header_passes_both(tmp_path: Path) -> None:
    _write(tmp_path / "m.safetensors", json.dumps(VALID).encode() + b"   ", 22)
    assert library_accepts(tmp_path / "m.safetensors")
    assert contract_accepts(tmp_path)


@pytest.mark.parametrize("case", sorted(CASES))
def test_what_the_library_refuses_is_refused(tmp_path: Path, case: str) -> None:
    header, data_len = CASES[case]
    path = tmp_path / "m.safetensors"
    _write(path, header, data_len)
    assert not library_accepts(path)
    report = ck.check_directory(str(tmp_path), model_files=False)
    assert not report.complete
    assert {p.kind for p in report.problems} <= {ck.BAD_HEADER, ck.TRUNCATED, ck.OVERSIZED}


def test_a_header_over_the_library_limit_is_refused_without_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "m.safetensors"
    path.write_bytes(struct.pack("<Q", ck.MAX_HEADER_BYTES + 1) + b"{")
    os_size = ck.MAX_HEADER_BYTES + 100
    with path.open("r+b") as handle:
        handle.truncate(os_size)  # sparse: long enough to hold the claimed header
    assert not library_accepts(path)
    report = ck.check_directory(str(tmp_path), model_files=False)
    [problem] = report.problems
    assert problem.kind == ck.BAD_HEADER
    assert report.bytes_read == 8


def test_the_problem_names_the_tensor(tmp_path: Path) -> None:
    _write(tmp_path / "m.safetensors", CASES["overlapping"][0], 3)
    [problem] = ck.check_directory(str(tmp_path), model_files=False).problems
    assert "'b'" in problem.detail and "overlap" in problem.detail


MUTATIONS = st.sampled_from(
    ["offset", "dtype", "shape", "drop", "duplicate", "swap", "metadata", "reorder"]
)
TAILS = st.sampled_from([b"", b" ", b"\n", b"\t ", b"x", b"\0", b"}", b","])


def _mutate(header: dict[str, Any], what: str, draw: Any) -> None:
    names = [n for n in header if n != "__metadata__"]
    if what == "metadata" or not names:
        header["__metadata__"] = draw(
            st.one_of(st.none(), st.dictionaries(st.text(max_size=3), st.text(max_size=3)))
        )
        return
    if what == "reorder":  # the same entries, written in another order than their offsets
        entries = list(header.items())
        header.clear()
        header.update(draw(st.permutations(entries)))
        return
    name = draw(st.sampled_from(names))
    info = header[name]
    if what == "offset":
        info["data_offsets"][draw(st.integers(0, 1))] += draw(st.integers(-3, 3))
    elif what == "dtype":
        info["dtype"] = draw(st.sampled_from([*ck.DTYPE_BITS, "X", "f32"]))
    elif what == "shape":
        info["shape"] = draw(st.lists(st.integers(0, 5), max_size=3))
    elif what == "drop":
        del header[name]
    elif what == "duplicate":
        header[f"{name}_copy"] = json.loads(json.dumps(info))
    else:  # swap the offsets of two tensors
        other = header[draw(st.sampled_from(names))]
        info["data_offsets"], other["data_offsets"] = other["data_offsets"], info["data_offsets"]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.data(),
    mutations=st.lists(MUTATIONS, max_size=3),
    tail=TAILS,
    data_change=st.integers(-3, 3),
)
def test_the_contract_and_the_library_agree_on_mutated_headers(
    tmp_path: Path, data: st.DataObject, mutations: list[str], tail: bytes, data_change: int
) -> None:
    header: dict[str, Any] = json.loads(json.dumps(VALID))
    for what in mutations:
        _mutate(header, what, data.draw)
    raw = json.dumps(header).encode() + tail
    data_len = max(0, 22 + data_change)
    path = tmp_path / "m.safetensors"
    _write(path, raw, data_len)
    assert contract_accepts(tmp_path) == library_accepts(path), (raw, data_len)


ODD_VALUES = st.sampled_from([-1, True, 1.0, "2", None, [1], 2**64, 2**70])
ENTRY_CHANGES = st.sampled_from(["offset", "shape", "dims", "dtype", "odd", "field", "reorder"])


@settings(max_examples=300, deadline=None)
@given(
    dtypes=st.lists(st.sampled_from([*ck.DTYPE_BITS, "F128"]), min_size=1, max_size=6),
    shapes=st.lists(st.lists(st.integers(0, 4), max_size=3), min_size=6, max_size=6),
    changes=st.lists(st.tuples(ENTRY_CHANGES, st.integers(0, 5), ODD_VALUES), max_size=3),
    data=st.data(),
)
def test_the_bulk_check_gives_the_entry_by_entry_verdict(
    dtypes: list[str],
    shapes: list[list[int]],
    changes: list[tuple[str, int, Any]],
    data: st.DataObject,
) -> None:
    """A header the bulk check passes is one the entry-by-entry check (whose verdicts the
    library comparisons above hold) passes, with the same data end; one it does not
    pass goes to that check. Zero-sized tensors, sub-byte dtypes and odd values included."""
    header: dict[str, Any] = {}
    offset = 0
    for index, dtype in enumerate(dtypes):
        elements = 1
        for dim in shapes[index]:
            elements *= dim
        nbytes = -(-elements * ck.DTYPE_BITS.get(dtype, 8) // 8)
        header[f"t{index}"] = _tensor(dtype, shapes[index], offset, offset + nbytes)
        offset += nbytes
    names = list(header)
    for what, index, odd in changes:
        info = header[names[index % len(names)]]
        if what in ("offset", "odd", "dims") and not {"data_offsets", "shape"} <= set(info):
            continue  # a field was dropped before
        if what == "offset":
            offsets = info["data_offsets"]
            if type(offsets[index % 2]) is int:  # not an odd value set before
                offsets[index % 2] += data.draw(st.integers(-2, 2))
        elif what == "shape":
            info["shape"] = data.draw(st.lists(st.integers(0, 4), max_size=3))
        elif what == "dims":
            info["shape"] = [*info["shape"], odd]
        elif what == "dtype":
            info["dtype"] = odd
        elif what == "odd":
            info["data_offsets"][index % 2] = odd
        elif what == "field":
            del info[data.draw(st.sampled_from(sorted(info)))]
        else:
            header = dict(data.draw(st.permutations(list(header.items()))))
    checked = ck._checked_end_offset(json.loads(json.dumps(header)))
    bulk = ck._bulk_end_offset(json.loads(json.dumps(header)))
    if bulk is None:
        assert isinstance(checked, str), (header, checked)
    else:
        assert bulk == checked, header


@pytest.mark.parametrize("opener", ["[", '{"a": '])
def test_a_header_nested_100000_deep_is_refused_not_a_recursion_error(
    tmp_path: Path, opener: str
) -> None:
    depth = 100_000
    closer = "]" if opener == "[" else "}"
    header = ('{"x": ' + opener * depth + "1" + closer * depth + "}").encode()
    _write(tmp_path / "m.safetensors", header, 0)

    report = ck.check_directory(str(tmp_path), model_files=False)

    [problem] = report.problems
    assert problem.kind == ck.BAD_HEADER
    assert problem.detail == "unreadable header: JSON nested too deep"


def test_an_index_nested_100000_deep_is_a_bad_index(tmp_path: Path) -> None:
    (tmp_path / ck.INDEX).write_text('{"weight_map": ' + "[" * 100_000 + "]" * 100_000 + "}")

    report = ck.check_directory(str(tmp_path))

    assert (ck.BAD_INDEX, "not valid JSON: nested too deep") in [
        (p.kind, p.detail) for p in report.problems
    ]

"""Override-file semantics shared by the loader and the linter (srt-slurm v1 compatible).

`base` plus `override_<n>` blocks (deep-merged) and `zip_override_<n>` blocks (list
leaves zipped by index); variants are named as srtctl names its jobs
(`generate_override_configs`). Inputs are plain or ruamel containers and never
mutated, so the linter can expand a document before and after a fix and compare.

A `sweep:` map makes one variant per combination of its values, as srtctl expands it
(`srtctl/core/sweep.py`): the cartesian product in key order, `{parameter}` replaced in
strings, named `<name>_<param><value>...`. A string that is only the placeholder takes
the value itself, which is what srtctl's schema makes of its text (`"8"` -> 8).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from disagg.errors import DisaggError, SourceLocation
from disagg.recipe.limits import charge_variant

BASE = "base"
OVERRIDE_PREFIX = "override_"
ZIP_PREFIX = "zip_override_"
IGNORED_PREFIX = "x-"
SWEEP = "sweep"  # the key; a flat recipe's sweep variants are `sweep[0]`, `sweep[1]`, ...
SWEEP_MARK = ".sweep["  # `override_x.sweep[2]`: the 3rd combination of override_x's sweep


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


# Scalar types `_plain` returns at once instead of asking the (slow) ABCs about each value.
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain(value: Any) -> Any:
    """A deep copy made of plain dicts and lists, so results never share state with inputs."""
    if type(value) in _SCALARS:
        return value
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if _is_list(value):
        return [_plain(item) for item in value]
    return value


def deep_merge(base: Any, override: Any) -> Any:
    """Merge `override` onto `base` into new plain data: maps merge, lists and scalars
    replace, `None` deletes the key."""
    if not (isinstance(base, Mapping) and isinstance(override, Mapping)):
        return _plain(override)
    merged: dict[Any, Any] = {key: _plain(value) for key, value in base.items()}
    for key, value in override.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping):
            below = base.get(key)
            merged[key] = deep_merge(below if isinstance(below, Mapping) else {}, value)
        else:
            merged[key] = _plain(value)
    return merged


def _position(container: Any, key: Any, file: str) -> SourceLocation:
    """`file:line:col` of `container[key]` when ruamel recorded it (1-based), else just the file."""
    lc = getattr(container, "lc", None)
    if lc is not None:
        try:
            line, col = lc.value(key)
        except (KeyError, IndexError, TypeError, AttributeError):
            line = col = None
        if isinstance(line, int) and isinstance(col, int):
            return SourceLocation(file, line + 1, col + 1)
    return SourceLocation(file)


def _list_leaves(
    block: Mapping[str, Any], path: tuple[str, ...], file: str
) -> list[tuple[str, int, SourceLocation]]:
    """Every list-valued leaf under `block`: (dotted path, length, where its value starts)."""
    found: list[tuple[str, int, SourceLocation]] = []
    for key, value in block.items():
        here = (*path, str(key))
        if isinstance(value, Mapping):
            found.extend(_list_leaves(value, here, file))
        elif _is_list(value):
            found.append((".".join(here), len(value), _position(block, key, file)))
    return found


def _slice(block: Mapping[str, Any], index: int) -> dict[str, Any]:
    """Variant `index` of a zip block: each list leaf gives its element (length 1 broadcasts)."""
    out: dict[str, Any] = {}
    for key, value in block.items():
        if isinstance(value, Mapping):
            out[key] = _slice(value, index)
        elif _is_list(value):
            out[key] = _plain(value[0 if len(value) == 1 else index])
        else:
            out[key] = value
    return out


def expand_zip(block: Mapping[str, Any], *, block_name: str, file: str) -> list[dict[str, Any]]:
    """One override map per variant of a `zip_override_*` block: list leaves zip, length-1
    lists and scalars broadcast, a list element is taken literally (`[[4, 8], [16]]`)."""
    count = _zip_count(block, block_name=block_name, file=file)
    return [_slice(block, index) for index in range(count)]


def _zip_count(block: Mapping[str, Any], *, block_name: str, file: str) -> int:
    """How many variants a zip block gives (its list length), or the error `expand_zip` raises."""
    leaves = _list_leaves(block, (), file)
    if not leaves:
        # srtctl refuses it too (`_determine_zip_length`: "contains no list values")
        raise DisaggError(
            f"{block_name}: a zip block with no list values has nothing to zip",
            location=SourceLocation(file),
            hint="give the fields that vary a list each, e.g. `tp: [4, 8]`, or make "
            "the block an `override_<name>` for a single variant",
        )
    lengths = {length for _, length, _ in leaves if length != 1}
    empty = [leaf for leaf in leaves if leaf[1] == 0]
    if empty or len(lengths) > 1:
        detail = "; ".join(f"{where}: {path} has {n}" for path, n, where in leaves)
        what = "list leaves of different lengths" if len(lengths) > 1 else "an empty list leaf"
        raise DisaggError(
            f"{block_name}: {what} ({detail})",
            location=leaves[0][2] if leaves else SourceLocation(file),
            hint="every list leaf of a zip block needs the same length (length 1 broadcasts); "
            "wrap a literal list in another list, e.g. [[4, 8]]",
        )
    return lengths.pop() if lengths else 1


def _block(doc: Mapping[str, Any], key: str, file: str) -> Mapping[str, Any]:
    value = doc[key]
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise DisaggError(
            f"`{key}` must be a map of recipe fields, got {type(value).__name__}",
            location=_position(doc, key, file),
            hint="indent the block's fields under the key",
        )
    return value


def expand_variants(doc: Mapping[str, Any], *, file: str) -> dict[str, dict[str, Any]]:
    """Every variant by selector name, in document order: `{"base": doc}` for a flat recipe,
    else each `override_<n>` / `zip_override_<n>[i]` merged onto `base` (not itself one)."""
    variant_keys = [k for k in doc if str(k).startswith((OVERRIDE_PREFIX, ZIP_PREFIX))]
    if BASE not in doc and not variant_keys:
        flat = {k: _plain(v) for k, v in doc.items() if not str(k).startswith(IGNORED_PREFIX)}
        return _charged(expand_sweep(BASE, flat, doc, file, flat=True), file)
    if BASE not in doc:
        raise DisaggError(
            f"`{variant_keys[0]}` needs a `base:` block to merge into",
            location=_position(doc, variant_keys[0], file),
            hint="put the shared config under `base:`, or rename the block in a flat recipe",
        )
    base = _block(doc, BASE, file)
    stray = [
        k
        for k in doc
        if k != BASE and k not in variant_keys and not str(k).startswith(IGNORED_PREFIX)
    ]
    if stray:
        raise DisaggError(
            f"unexpected top-level key `{stray[0]}` in an override file",
            location=_position(doc, stray[0], file),
            hint="an override file holds only `base`, `override_<name>`, `zip_override_<name>` "
            "and `x-` blocks; move the key under `base:` or into a variant",
        )
    return _charged(_merged_variants(doc, variant_keys, base, file), file)


def _merged_variants(
    doc: Mapping[str, Any], keys: list[str], base: Mapping[str, Any], file: str
) -> Iterator[tuple[str, dict[str, Any]]]:
    base_name = base.get("name", "unnamed")
    for key in keys:
        block = _block(doc, key, file)
        holder = block if SWEEP in block else base
        if key.startswith(OVERRIDE_PREFIX):
            merged = deep_merge(base, block)
            if "name" not in block:
                merged["name"] = f"{base_name}_{key[len(OVERRIDE_PREFIX) :]}"
            yield from expand_sweep(key, merged, holder, file)
            continue
        group = key[len(ZIP_PREFIX) :]
        named = _is_list(block.get("name"))
        for index in range(_zip_count(block, block_name=key, file=file)):
            merged = deep_merge(base, _slice(block, index))
            if not named:
                merged["name"] = f"{base_name}_{group}_{index}"
            yield from expand_sweep(f"{key}[{index}]", merged, holder, file)


def _charged(
    variants: Iterator[tuple[str, dict[str, Any]]], file: str
) -> dict[str, dict[str, Any]]:
    """The variants by name, each charged against the limits as soon as it is built; a
    flat recipe's own variant is the document, which the loader has bounded already."""
    out: dict[str, dict[str, Any]] = {}
    spent = 0
    for name, config in variants:
        out[name] = config
        if name != BASE:
            spent = charge_variant(spent, config, name=name, file=file)
    return out


def expand_sweep(
    name: str, merged: dict[str, Any], holder: Mapping[str, Any], file: str, *, flat: bool = False
) -> Iterator[tuple[str, dict[str, Any]]]:
    """`(name, merged)`, or, when `merged` holds a `sweep`, one `(name.sweep[i], config)`
    per combination (`sweep[i]` for a `flat` recipe), named and filled as srtctl does.
    `holder` is the map the `sweep` key was written in."""
    if SWEEP not in merged:
        yield name, merged
        return
    found = merged.pop(SWEEP)
    context = "the recipe" if name == BASE else f"variant {name}"
    where = _position(holder, SWEEP, file)
    below = holder.get(SWEEP)

    def locate(key: Any) -> SourceLocation:
        return _position(below, key, file) if isinstance(below, Mapping) else where

    params = _parameters(found, where=where, locate=locate, context=context)
    prefix = f"{SWEEP}[" if flat else f"{name}{SWEEP_MARK}"
    names = [name for name, _ in params]
    # the last parameter varies fastest
    for index, combination in enumerate(itertools.product(*(v for _, v in params))):
        values = dict(zip(names, combination, strict=True))
        config = _fill(merged, values)
        suffix = "_".join(f"{key}{value}" for key, value in values.items())
        config["name"] = f"{merged.get('name', 'unnamed')}_{suffix}"
        yield f"{prefix}{index}]", config


def _parameters(
    sweep: Any, *, where: SourceLocation, locate: Any, context: str
) -> list[tuple[str, list[Any]]]:
    """The (parameter, values) pairs of a `sweep` map, or an error at `locate(key)`: srtctl
    iterates every key's value, so a non-list or schema 2's `mode` / `parameters` would not
    sweep what it says."""
    if not isinstance(sweep, Mapping) or not sweep:
        raise DisaggError(
            f"`sweep` ({context}) must be a map of parameters to lists of values",
            location=where,
            hint="e.g. sweep: {tp: [4, 8]} and `{tp}` where the value goes",
        )
    found = []
    for key, values in sweep.items():
        if key in ("mode", "parameters"):
            raise DisaggError(
                f"`sweep.{key}` ({context}): srtctl expands every key of `sweep` as a "
                "parameter of a grid",
                location=locate(key),
                hint="list the parameters directly under `sweep:`, e.g. sweep: {tp: [4, 8]}",
            )
        if not _is_list(values) or not values:
            raise DisaggError(
                f"`sweep.{key}` ({context}) must be a non-empty list of values",
                location=locate(key),
                hint=f"e.g. {key}: [4, 8]",
            )
        found.append((str(key), list(values)))
    return found


def _fill(template: Any, values: Mapping[str, Any]) -> Any:
    """`template` with every `{parameter}` of `values` replaced (see the module doc)."""
    if isinstance(template, Mapping):
        return {key: _fill(item, values) for key, item in template.items()}
    if _is_list(template):
        return [_fill(item, values) for item in template]
    if not isinstance(template, str):
        return template
    for key, value in values.items():
        if template == f"{{{key}}}":
            return value
    out = template
    for key, value in values.items():
        # srtctl's text in a longer string: Python's spelling (`True`, `0.85`), lists comma-joined
        text = ",".join(map(str, value)) if _is_list(value) else str(value)
        out = out.replace(f"{{{key}}}", text)
    return out


def origin(name: str) -> str:
    """The variant a sweep variant was expanded from (`override_x.sweep[2]` -> `override_x`;
    a flat recipe's `sweep[2]` -> `base`); any other name is its own origin."""
    if SWEEP_MARK in name:
        return name.split(SWEEP_MARK, 1)[0]
    if name.startswith(f"{SWEEP}[") and name.endswith("]"):
        return BASE
    return name

"""`lint_paths`: read each file once, scan its events once, run every rule, collect findings."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from disagg.probe import MAX_RECIPE_BYTES, UnreadableFile, probe, read_limited, shortened
from disagg.recipe.lint.consistency import check as check_consistency
from disagg.recipe.lint.context import FileContext
from disagg.recipe.lint.cross_anchor import check as check_cross_anchor
from disagg.recipe.lint.duplicate_key import check as check_duplicate_key
from disagg.recipe.lint.engine_settings import check as check_engine_settings
from disagg.recipe.lint.export_hazard import check as check_export_hazard
from disagg.recipe.lint.literal_secret import check as check_literal_secret
from disagg.recipe.lint.model import UNREADABLE, Finding, LintReport, Location, Rule, Severity
from disagg.recipe.lint.nodes import Anchor, ScannedFile, scan
from disagg.recipe.lint.plan_check import check as check_plan
from disagg.recipe.lint.repeated_literal import check as check_repeated_literal
from disagg.recipe.lint.schema_marker import check as check_schema_marker
from disagg.recipe.lint.undefined_alias import check as check_undefined_alias

if TYPE_CHECKING:
    from disagg.cluster import ClusterProfile

SUFFIXES = (".yaml", ".yml")
_UNREADABLE = Rule(UNREADABLE, "unreadable")


def _unreadable(
    path: str,
    message: str,
    line: int | None = None,
    col: int | None = None,
    *,
    hint: str | None = None,
) -> Finding:
    return _UNREADABLE.finding(Severity.ERROR, message, (Location(path, line, col, "input"),), hint)


def expand_paths(paths: Iterable[Path]) -> tuple[list[Path], list[Finding]]:
    """Files to lint: each file as given, every *.yaml/*.yml below each directory."""
    files: list[Path] = []
    problems: list[Finding] = []
    for path in paths:
        found = probe(path)
        if found.is_dir:
            below = sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file())
            if not below:
                problems.append(_unreadable(str(path), "directory holds no *.yaml/*.yml recipes"))
            files.extend(below)
        elif found.is_file:
            files.append(path)
        elif found.exists:
            problems.append(_unreadable(str(path), "not a regular file"))
        elif found.problem:
            problems.append(_unreadable(shortened(path), f"cannot look up: {found.problem}"))
        else:
            problems.append(_unreadable(str(path), "no such file or directory"))
    return files, problems


def read_text(path: Path) -> str | Finding:
    """The file's text, or a DA000 finding saying why it cannot be a recipe."""
    try:
        data = read_limited(path, what="recipe", limit=MAX_RECIPE_BYTES)
    except UnreadableFile as exc:
        return _unreadable(str(path), exc.message.removeprefix(f"recipe {shortened(path)}: "))
    if b"\0" in data[:8192]:
        return _unreadable(str(path), "binary file, not YAML")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _unreadable(str(path), f"not UTF-8 text (byte {exc.start})")


def lint_one(scanned: ScannedFile, profile: ClusterProfile | None = None) -> list[Finding]:
    """The single-file rules (everything but DA002, which needs the other files' anchors)."""
    path = scanned.path
    if scanned.syntax is not None:
        problem = scanned.syntax
        return [_unreadable(path, problem.message, problem.line, problem.col, hint=problem.hint)]
    root = scanned.root
    if root is None:
        return [_unreadable(path, "empty file: a recipe is a map of fields")]
    if root.kind != "map":
        kind = "a list" if root.kind == "seq" else "a single value"
        message = f"a recipe is a map of fields, this file is {kind}"
        return [_unreadable(path, message, root.line, root.col)]
    ctx = FileContext(path, scanned, root, profile)
    findings = check_cross_anchor(ctx) + check_repeated_literal(ctx) + check_export_hazard(ctx)
    findings += check_duplicate_key(ctx) + check_literal_secret(ctx)
    if scanned.undefined:
        return findings  # values behind a missing anchor are unknown; DA002 explains
    variants = ctx.variants
    if variants.error is not None:
        where = variants.error.location
        findings.append(
            _unreadable(
                path,
                f"cannot expand variants: {variants.error.message}",
                where.line if where else None,
                where.column if where else None,
            )
        )
        return findings
    findings += check_plan(ctx) + check_schema_marker(ctx)
    return findings + check_consistency(ctx) + check_engine_settings(ctx)


def lint_paths(paths: list[Path], profile: ClusterProfile | None = None) -> LintReport:
    """Lint files and directories; the library entry the CLI and the benchmark call.

    DA013 plans every variant on `profile` (None: no cluster profile); `disagg lint`
    passes the one `disagg plan` would use (`--cluster`, else a found `srtslurm.yaml`)."""
    files, findings = expand_paths(paths)
    scanned: list[ScannedFile] = []
    for path in files:
        text = read_text(path)
        if isinstance(text, Finding):
            findings.append(text)
        else:
            scanned.append(scan(str(path), text))
    anchors: dict[str, list[tuple[str, Anchor]]] = {}  # DA002 looks them up across files
    for one in scanned:
        for anchor in one.anchors:
            anchors.setdefault(anchor.name, []).append((one.path, anchor))
    for one in scanned:
        elsewhere = {
            name: [(f, a) for f, a in spots if f != one.path] for name, spots in anchors.items()
        }
        findings.extend(check_undefined_alias(one.path, one, elsewhere))
        findings.extend(lint_one(one, profile))
    findings.sort(key=Finding.sort_key)
    return LintReport(files=[str(p) for p in files], findings=findings)

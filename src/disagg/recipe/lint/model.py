"""What a lint run reports: findings with every location involved, and the exit code they imply."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from disagg.errors import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE


class Severity(StrEnum):
    """`error` and `warning` fail a lint run (exit 1); `info` is advice and never does."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True, slots=True)
class Location:
    """One place a finding involves. `role` says what the place is: anchor, alias, copy, value..."""

    file: str
    line: int | None = None
    col: int | None = None
    role: str = ""
    block: str | None = None  # top-level block (base, override_x, x-shared...) when known

    def __str__(self) -> str:
        if self.line is None:
            return self.file
        return f"{self.file}:{self.line}:{self.col or 1}"


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem. The first location is where a reader should look first."""

    rule: str  # DA001...
    name: str  # cross-variant-anchor...
    severity: Severity
    message: str
    locations: tuple[Location, ...]
    hint: str | None = None
    fixable: bool = False

    @property
    def file(self) -> str:
        return self.locations[0].file if self.locations else ""

    @property
    def where(self) -> Location | None:
        return self.locations[0] if self.locations else None

    def sort_key(self) -> tuple[str, int, int, str]:
        where = self.where or Location(self.file)
        return (self.file, where.line or 0, where.col or 0, self.rule)

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "name": self.name,
            "severity": str(self.severity),
            "message": self.message,
            "hint": self.hint,
            "fixable": self.fixable,
            "locations": [asdict(loc) for loc in self.locations],
        }


@dataclass(frozen=True, slots=True)
class Rule:
    """A rule's code and name, which every finding of it carries."""

    code: str  # DA001...
    name: str  # cross-variant-anchor...

    def finding(
        self,
        severity: Severity,
        message: str,
        locations: tuple[Location, ...],
        hint: str | None = None,
        fixable: bool = False,
    ) -> Finding:
        return Finding(self.code, self.name, severity, message, locations, hint, fixable)


UNREADABLE = "DA000"


@dataclass(slots=True)
class LintReport:
    """Findings for a set of files. Unreadable input (DA000) makes the exit code 2."""

    files: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def count(self, severity: Severity) -> int:
        return sum(1 for finding in self.findings if finding.severity is severity)

    def by_rule(self) -> dict[str, int]:
        return dict(sorted(Counter(finding.rule for finding in self.findings).items()))

    @property
    def exit_code(self) -> int:
        if any(finding.rule == UNREADABLE for finding in self.findings):
            return EXIT_USAGE
        failing = (Severity.ERROR, Severity.WARNING)
        if any(finding.severity in failing for finding in self.findings):
            return EXIT_FINDINGS
        return EXIT_OK

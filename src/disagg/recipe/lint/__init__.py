"""Recipe linter: node-level checks for fragile YAML and recipes that cannot run as written."""

from disagg.recipe.lint.model import Finding, LintReport, Location, Severity
from disagg.recipe.lint.runner import lint_paths

__all__ = ["Finding", "LintReport", "Location", "Severity", "lint_paths"]

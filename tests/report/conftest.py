"""Fixtures for the report tests."""

from .report_fixtures import make_run

__all__ = ["make_run"]

"""Tests for model staging: checkpoint contract, cache layout, locks, prefetch."""

"""Checks of the benchmark tools in scripts/bench/ (not of the daemon)."""

"""Checks of the benchmark tools in scripts/ (not of the daemon)."""

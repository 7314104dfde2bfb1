"""No module of the daemon over 400 lines (issue 25): a module that long does more than one job.
Counted as `wc -l` counts, on the formatted tree (`make lint` checks the formatting)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)

MAX_LINES = 400


def test_no_daemon_module_is_over_400_lines() -> None:
    root = Path(__file__).resolve().parents[1] / "daemon" / "voxnode"
    sizes = {str(p.relative_to(root)): p.read_bytes().count(b"\n") for p in root.rglob("*.py")}
    assert len(sizes) > 100, sorted(sizes)  # the package itself, not an empty or wrong folder
    over = {name: n for name, n in sorted(sizes.items()) if n > MAX_LINES}
    assert not over, f"modules over {MAX_LINES} lines: {over}"

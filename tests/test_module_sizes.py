"""No module of the daemon or of the tools beside it (scripts/) over 400 lines (issue 25): a module that
long does more than one job. Counted as `wc -l` counts, on the formatted tree (`make lint` checks the
formatting). tests/ stay out: a test file groups many cases of one behaviour."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)

MAX_LINES = 400
ROOT = Path(__file__).resolve().parents[1]


def sizes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.read_bytes().count(b"\n") for p in root.rglob("*.py")}


@pytest.mark.parametrize(
    "folder, at_least",
    [
        ("daemon/voxnode", 100),  # the package itself, not an empty or wrong folder
        ("scripts", 60),  # install, convert, adapt and bench tools
    ],
)
def test_no_module_is_over_400_lines(folder: str, at_least: int) -> None:
    found = sizes(ROOT / folder)
    assert len(found) > at_least, sorted(found)
    over = {name: n for name, n in sorted(found.items()) if n > MAX_LINES}
    assert not over, f"modules of {folder}/ over {MAX_LINES} lines: {over}"

"""The docs that list the daemon's modules list all of them, and only modules that exist:
docs/architecture.md's layer diagram places every top-level module and package of daemon/voxnode,
docs/asr.md's tables name every module of asr/, asr/whisper/ and models/. Stop 46 found the diagram
without seven of them (text, process_stop, preflight, wake, wyoming_stt, __main__, adapt_tool)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "daemon" / "voxnode"
DATA = {"demo_audio"}  # a folder of data (the demo's clip), not code


def _top_level() -> set[str]:
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"} | {"__main__"}
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists() or any(p.glob("*.py"))}
    return (modules | packages) - DATA


def test_the_layer_diagram_places_every_top_level_module():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    diagram = doc.split("## Modules and imports", 1)[1].split("```")[1]
    named = set(re.findall(r"(?<![\w/.])(__main__|[a-z][a-z_]*)(?=[/ ,(]|$)", diagram, re.M))
    found = _top_level()
    assert len(found) > 30, sorted(found)  # the package itself
    assert not found - named, f"not in docs/architecture.md's layer diagram: {sorted(found - named)}"


@pytest.mark.parametrize("folder", ["asr", "asr/whisper", "models"])
def test_asr_md_lists_every_module_of(folder: str):
    doc = (ROOT / "docs" / "asr.md").read_text()
    # The table after the paragraph that names the folder: rows `| `a.py`, `b.py` | job |`.
    named: set[str] = set()
    for row in re.findall(r"^\| (`[a-z_]+\.py`(?:, `[a-z_]+\.py`)*) \|", doc, re.M):
        named |= set(re.findall(r"`([a-z_]+)\.py`", row))
    here = {p.stem for p in (PACKAGE / folder).glob("*.py") if p.stem != "__init__"}
    assert here, folder
    assert not here - named, f"daemon/voxnode/{folder} modules not in docs/asr.md: {sorted(here - named)}"


def test_asr_md_names_no_module_that_is_gone():
    doc = (ROOT / "docs" / "asr.md").read_text()
    named = set()
    for row in re.findall(r"^\| (`[a-z_]+\.py`(?:, `[a-z_]+\.py`)*) \|", doc, re.M):
        named |= set(re.findall(r"`([a-z_]+)\.py`", row))
    existing = {p.stem for d in ("asr", "asr/whisper", "models") for p in (PACKAGE / d).glob("*.py")}
    assert len(named) > 20, named
    assert not named - existing, f"docs/asr.md names modules that do not exist: {sorted(named - existing)}"

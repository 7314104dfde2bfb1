"""scripts/bench/docs_section.py and machine.py: how every benchmark writes its section of
docs/benchmarks.md and says what it ran on."""

from __future__ import annotations

import os
import platform
import re

import pytest

from scripts.bench.docs_section import replace_section
from scripts.bench.machine import cpu_model, describe, load

DOC = "# Benchmarks\n\nintro\n\n## A\n\nold a\n\n### A detail\n\nmore a\n\n## B\n\nold b\n"


def test_a_section_is_replaced_up_to_the_next_section_and_nothing_else_moves(tmp_path):
    path = tmp_path / "benchmarks.md"
    path.write_text(DOC)
    replace_section(path, "A", "## A\n\nnew a\n")
    assert path.read_text() == "# Benchmarks\n\nintro\n\n## A\n\nnew a\n\n## B\n\nold b\n"
    replace_section(path, "B", "## B\n\nnew b\n\n\n")  # trailing blank lines are not piled up
    assert path.read_text() == "# Benchmarks\n\nintro\n\n## A\n\nnew a\n\n## B\n\nnew b\n"


def test_a_new_section_is_appended_and_a_missing_file_created(tmp_path):
    path = tmp_path / "benchmarks.md"
    path.write_text(DOC)
    replace_section(path, "C", "## C\n\nc\n")
    assert path.read_text() == DOC + "\n## C\n\nc\n"
    fresh = tmp_path / "new.md"
    replace_section(fresh, "A", "## A\n\na\n")
    assert fresh.read_text() == "# Benchmarks\n\n## A\n\na\n"


def test_titles_are_matched_whole_and_literally(tmp_path):
    path = tmp_path / "benchmarks.md"
    path.write_text("## ASR (x)\n\none\n\n## ASR (x) more\n\ntwo\n")
    replace_section(path, "ASR (x)", "## ASR (x)\n\nthree\n")
    assert path.read_text() == "## ASR (x)\n\nthree\n\n## ASR (x) more\n\ntwo\n"


def test_a_section_without_its_heading_is_refused(tmp_path):
    with pytest.raises(ValueError, match="must start with '## A'"):
        replace_section(tmp_path / "b.md", "A", "## B\n\nb\n")


def test_the_machine_line_names_the_cpu_cores_and_python_and_the_load_its_figures():
    line = describe()
    assert cpu_model() in line and cpu_model() not in ("", "unknown CPU")
    assert f"{os.cpu_count()} logical CPUs" in line and platform.python_version() in line
    assert re.fullmatch(r"load average \d+\.\d\d / \d+\.\d\d / \d+\.\d\d \(1 / 5 / 15 min\)", load())

"""scripts/ split by role, imported without path tricks (issue 25): no Python file of the checkout
changes `sys.path`, no tool imports a sibling by its bare name (which works only with such a trick),
every module the Makefile runs exists, every tool is in scripts/README.md's index, and the
benchmarks' saved figures live beside them (scripts/bench/results/), not in docs/."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("scripts", "tests", "daemon")
OUR_PACKAGES = {"scripts", "tests", "voxnode"}


def python_files() -> list[Path]:
    files = [p for d in SCANNED for p in (ROOT / d).rglob("*.py")]
    assert len(files) > 300, len(files)  # the checkout itself, not an empty or wrong folder
    return files


def path_changes(source: str) -> list[int]:
    """Lines that change sys.path: sys.path.insert/append/extend/remove, or an assignment to it."""

    def is_sys_path(node: ast.AST) -> bool:
        if isinstance(node, ast.Subscript):
            node = node.value
        return (
            isinstance(node, ast.Attribute)
            and node.attr == "path"
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        )

    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "sys" and any(a.name == "path" for a in node.names):
            lines.append(node.lineno)  # `from sys import path`: then changed through another name
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in {"insert", "append", "extend", "remove", "__setitem__"} and is_sys_path(
                node.func.value
            ):
                lines.append(node.lineno)
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(is_sys_path(t) for t in targets):
                lines.append(node.lineno)
    return lines


def bare_sibling_imports(source: str, siblings: set[str]) -> list[str]:
    """Imports of one of our own modules by its bare file name (`import speech_corpus`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [n for n in names if n.split(".")[0] in siblings]
    return found


@pytest.mark.parametrize(
    "source, lines",
    [
        ("import sys\nsys.path.insert(0, 'scripts')\n", [2]),
        ("import sys\n\ndef f():\n    sys.path.append('x')\n", [4]),
        ("import sys\nsys.path = ['x', *sys.path]\n", [2]),
        ("import sys\nsys.path += ['x']\n", [2]),
        ("import sys\nsys.path[0:0] = ['x']\n", [2]),
        ("from sys import path\npath.insert(0, 'x')\n", [1]),
        ("import sys\nsite = [p for p in sys.path if p]\n", []),  # reading it is fine
    ],
)
def test_the_check_sees_a_path_change(source: str, lines: list[int]) -> None:
    assert path_changes(source) == lines


def test_no_file_changes_sys_path() -> None:
    sources = {p: p.read_text() for p in python_files()}
    # Only files that name sys.path are parsed (a few of ~400; a parse of all takes seconds).
    pattern = re.compile(r"sys\.path|from\s+sys\s+import[^\n]*\bpath\b")
    found = {str(p.relative_to(ROOT)): n for p, s in sources.items() if pattern.search(s) and (n := path_changes(s))}
    assert not found, f"sys.path changed (run tools as modules, scripts/README.md): {found}"


def test_our_modules_are_imported_by_their_full_names() -> None:
    tools = [p for p in python_files() if not p.is_relative_to(ROOT / "daemon")]
    siblings = {p.stem for p in tools} - {"__init__", "__main__", "conftest"}
    assert {"speech_corpus", "wyoming_client", "emulate_board", "helpers"} <= siblings
    assert bare_sibling_imports("import speech_corpus as sc\nfrom mic_daemon import x\n", siblings) == [
        "speech_corpus",
        "mic_daemon",
    ]
    found = {str(p.relative_to(ROOT)): names for p in tools if (names := bare_sibling_imports(p.read_text(), siblings))}
    assert not found, f"bare imports of our own modules (import them as scripts.bench.X, tests.X): {found}"


def test_every_module_the_makefile_runs_exists() -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipes = "\n".join(line for line in makefile.splitlines() if line.startswith("\t"))
    modules = set(re.findall(r"python -m (scripts(?:\.\w+)+)", recipes))
    assert {"scripts.test_arm64", "scripts.bench.wake", "scripts.convert.whisper.convert"} <= modules

    def exists(module: str) -> bool:
        path = ROOT / module.replace(".", "/")
        return path.with_suffix(".py").is_file() or (path / "__main__.py").is_file()

    assert {m for m in modules if not exists(m)} == set()
    paths = set(re.findall(r"(?<![\w.])(scripts/[\w./-]+\.(?:py|sh|txt))", makefile))
    assert {p for p in paths if not (ROOT / p).is_file()} == set()


def test_every_tool_is_in_the_index() -> None:
    """Each tool by its path inside its role's folder (`whisper/convert.py`, `wake.py`, `install.sh`);
    adapt's parts by name (`weights`)."""
    index = (ROOT / "scripts" / "README.md").read_text()
    scripts = ROOT / "scripts"
    tools = [p.relative_to(scripts) for p in scripts.rglob("*") if p.is_file() and p.suffix in {".py", ".sh", ""}]
    tools = [t for t in tools if t.name != "__init__.py"]
    assert len(tools) > 40, tools

    def named(t: Path) -> bool:
        if t.parts[0] == "adapt" and t.name != "__main__.py":
            return f"`{t.stem}`" in index
        return f"`{'/'.join(t.parts[1:]) or t.name}`" in index

    absent = [str(t) for t in tools if not named(t)]
    assert not absent, f"not in scripts/README.md's index: {absent}"


def test_benchmark_results_live_beside_the_benchmarks() -> None:
    in_docs = sorted(p.name for p in (ROOT / "docs").glob("*.json*"))
    assert not in_docs, f"benchmark results belong in scripts/bench/results/, not docs/: {in_docs}"
    assert len(list((ROOT / "scripts" / "bench" / "results").glob("*.json*"))) > 20

"""The docs' cross-references lead somewhere: every relative link `[x](file.md#anchor)` in README.md,
docs/, the model cards and scripts/README.md names a file that exists and, for a Markdown file, a
heading it has (GitHub's anchors); every section named in prose the project's way, `docs/asr.md
"Drafts"` or `benchmarks.md, "Another host"`, is a heading or a bold paragraph label (`**Drafts**`) of
that file; every `make TARGET` the docs name is a Makefile target. A heading renamed without its
links left readers at the top of a 4300-line file (stop 46 checked them by hand: none broken then)."""

from __future__ import annotations

import collections
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)

ROOT = Path(__file__).resolve().parents[1]
LINKED = [
    ROOT / "README.md",
    ROOT / "CHANGELOG.md",
    ROOT / "scripts" / "README.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted(ROOT.glob("models/*/MODEL.md")),
]
# Prose that names a section: the docs, the config reference and the code's comments.
NAMING = [*LINKED, ROOT / "config" / "voxnode.toml", ROOT / "Makefile"] + sorted(
    p for d in ("daemon", "scripts", "tests") for p in (ROOT / d).rglob("*.py")
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
QUOTED = re.compile(r"((?:docs/)?[a-z0-9_-]+\.md)(?:'s)?,? +((?:\"[^\"\n]+\"(?: and | or |, )?)+)")


def _lines_outside_code(path: Path) -> list[tuple[int, str]]:
    out, fence = [], False
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
        elif not fence:
            out.append((n, line))
    return out


def _headings(path: Path) -> list[str]:
    return [m.group(1) for _, line in _lines_outside_code(path) if (m := re.match(r"#{1,6} +(.*?)[ #]*$", line))]


def _slug(heading: str) -> str:
    """GitHub's anchor: link text kept, lower case, punctuation but - and _ dropped, spaces to -."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: collections.Counter[str] = collections.Counter()
    out = set()
    for heading in _headings(path):
        slug = _slug(heading)
        out.add(f"{slug}-{seen[slug]}" if seen[slug] else slug)
        seen[slug] += 1
    return out


def test_relative_links_name_a_file_and_a_heading_it_has():
    checked, wrong = 0, []
    for doc in LINKED:
        for n, line in _lines_outside_code(doc):
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):  # https:, mailto:
                    continue
                name, _, anchor = target.partition("#")
                path = (doc.parent / name).resolve() if name else doc
                checked += 1
                where = f"{doc.relative_to(ROOT)}:{n}: {target}"
                if not path.exists():
                    wrong.append(f"{where}: no such file")
                elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                    wrong.append(f"{where}: no such heading in {path.relative_to(ROOT)}")
    assert checked > 100, checked  # the pattern still finds the links (147 in stop 46)
    assert not wrong, "links that lead nowhere:\n" + "\n".join(wrong)


def test_sections_named_in_prose_exist():
    docs = {p.name: p for p in (ROOT / "docs").glob("*.md")}
    checked, wrong = 0, []
    for path in NAMING:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for m in QUOTED.finditer(line):
                target = docs.get(Path(m.group(1)).name)
                if target is None:
                    continue
                text = target.read_text()
                titles = [h.lower() for h in _headings(target)]
                titles += [b.lower() for b in re.findall(r"^\s*(?:- )?\*\*([^*]+)\*\*", text, re.M)]
                for quoted in re.findall(r"\"([^\"]+)\"", m.group(2)):
                    checked += 1
                    name = re.sub(r"[`*]", "", quoted).lower().rstrip(".,")
                    if not any(name in re.sub(r"[`*]", "", t) for t in titles):
                        wrong.append(f'{path.relative_to(ROOT)}:{n}: {m.group(1)} "{quoted}"')
    assert checked > 50, checked  # the pattern still finds them (83 in stop 46)
    assert not wrong, "sections named that the file does not have:\n" + "\n".join(wrong)


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Whisper base in noise: issue 22's targets (stop 42)", "whisper-base-in-noise-issue-22s-targets-stop-42"),
        ("Per-board figures (issue 23)", "per-board-figures-issue-23"),
        ("`[asr] model` and `num_threads`", "asr-model-and-num_threads"),
    ],
)
def test_anchor_is_githubs(heading: str, anchor: str):
    assert _slug(heading) == anchor


def test_make_targets_named_in_the_docs_exist():
    """`make bench-wake`, `sudo make install`: a code span or command block naming a make target names
    one the Makefile has."""
    targets = set(re.findall(r"^([a-z][a-z0-9-]*):", (ROOT / "Makefile").read_text(), re.M))
    checked, wrong = 0, []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        fence = False
        for n, line in enumerate(doc.read_text().splitlines(), 1):
            if line.lstrip().startswith("```"):
                fence = not fence
                continue
            spans = [line.split("#", 1)[0]] if fence else re.findall(r"`([^`\n]+)`", line)
            for span in spans:
                for target in re.findall(r"(?:^|[\s;&(])(?<!install )make ([a-z][a-z0-9-]*)", span):
                    checked += 1
                    if target not in targets:
                        wrong.append(f"{doc.relative_to(ROOT)}:{n}: make {target}")
    assert checked > 30, checked  # the pattern still finds them (118 in stop 46)
    assert not wrong, "make targets the Makefile does not have:\n" + "\n".join(wrong)

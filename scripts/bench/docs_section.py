"""Write one benchmark's section of docs/benchmarks.md without touching the others' sections."""

from __future__ import annotations

import re
from pathlib import Path


def replace_section(path: Path, title: str, section: str) -> None:
    """Replace the `## {title}` section (up to the next `## ` heading) with `section`, which starts with
    that heading; append it when the file has no such section; create the file when it is missing."""
    head = f"## {title}\n"
    if not section.startswith(head):
        raise ValueError(f"the section for {path} must start with {head.strip()!r}")
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    body = section.rstrip("\n") + "\n"
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda m: body + ("\n" if m.end() < len(text) else ""), text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + body
    path.write_text(text)

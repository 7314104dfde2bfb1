"""README's table of commands says what `voxnode <command> --help` says: every command the parser has
is in the table, and each row names every option of its command and no other. Stop 46 found
the `demo`, `transcribe` and `fleet` rows missing nine options between them (`--config`, `--prompt`,
`--hotwords`, `--beam-size`, `--interval`, `--stall-after`, ...); `adapt` passes its options to the
build-time tool, whose own options docs/adapt.md lists."""

from __future__ import annotations

import argparse
import re

import pytest

from tests.alsa_env import ROOT
from voxnode.cli import build_parser

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)

PASSED_ON = {"adapt"}  # its arguments go to scripts/adapt unparsed (argparse.REMAINDER)


def _readme_rows() -> dict[str, set[str]]:
    """`voxnode CMD [--opt X] ...` in the first cell of README's commands table -> the options it names."""
    text = (ROOT / "README.md").read_text()
    table = text.split("## Commands", 1)[1].split("\n\n", 2)[1]
    rows: dict[str, set[str]] = {}
    for line in table.splitlines():
        if m := re.match(r"\| `voxnode ([a-z][a-z-]*)([^`]*)` \|", line):
            rows[m.group(1)] = set(re.findall(r"--[a-z][a-z-]*", m.group(2)))
    return rows


def _subcommands() -> dict[str, set[str]]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {
        name: {o for a in p._actions for o in a.option_strings if o.startswith("--") and o != "--help"}
        for name, p in sub.choices.items()
    }


def test_the_readme_names_every_command_and_option_the_parser_has():
    rows, commands = _readme_rows(), _subcommands()
    assert len(rows) >= 7, rows  # the pattern still finds the table (8 commands in stop 46)
    assert set(rows) == set(commands), f"README has {sorted(rows)}, the parser {sorted(commands)}"
    wrong = {
        name: {"missing": sorted(commands[name] - rows[name]), "not an option": sorted(rows[name] - commands[name])}
        for name in commands
        if name not in PASSED_ON and rows[name] != commands[name]
    }
    assert not wrong, f"README's commands table against --help: {wrong}"

"""What a node says it runs is read without waiting and without end (voxnode.regular_file): a board
name, os-release or model manifest that is a FIFO or /dev/zero behind a link is left out with one
warning naming the file, and /proc files (regular, of no size) are read, capped."""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

import pytest

from tests.helpers import outcome_within
from voxnode.config.asr import AsrConfig
from voxnode.health.nodeinfo import DEVICE_TREE_MODEL, board_model, model_sha256, os_name

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)


def place(root: Path, name: str, make) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    make(path)
    return path


def warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_proc_file_is_read_though_it_has_no_size(tmp_path):
    """/proc/version is regular with st_size 0: a size check would call it empty; the capped read gets it."""
    assert os.stat("/proc/version").st_size == 0
    place(tmp_path, DEVICE_TREE_MODEL, lambda p: p.symlink_to("/proc/version"))
    assert board_model(tmp_path) == Path("/proc/version").read_text().splitlines()[0][:100]


def test_a_board_name_that_is_a_fifo_is_one_warning_not_a_hang(tmp_path, caplog):
    """Before: read_bytes waited for a writer (the MQTT bridge's start and every status)."""
    fifo = place(tmp_path, DEVICE_TREE_MODEL, os.mkfifo)
    assert outcome_within(lambda: board_model(tmp_path), fifo) is None
    assert warnings(caplog) == [f"node info: board name file {fifo} is a FIFO (named pipe), not a regular file"]


def test_os_release_linked_to_dev_zero_is_one_warning_not_read(tmp_path, caplog):
    """Before: read_text read /dev/zero until memory ran out."""
    link = place(tmp_path, "etc/os-release", lambda p: p.symlink_to("/dev/zero"))
    place(tmp_path, "usr/lib/os-release", lambda p: p.write_text('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n'))
    assert outcome_within(lambda: os_name(tmp_path)) == "Debian GNU/Linux 12 (bookworm)"  # the next one is read
    assert warnings(caplog) == [f"node info: OS release file {link} is a device, not a regular file"]


def test_a_model_manifest_that_is_a_fifo_gives_no_checksum_not_a_hang(tmp_path):
    asr = AsrConfig(model_dir=str(tmp_path))
    fifo = place(tmp_path, "manifest.json", os.mkfifo)
    assert outcome_within(lambda: model_sha256(asr), fifo) is None
    fifo.unlink()
    fifo.write_bytes(b"{}")
    assert model_sha256(asr) == hashlib.sha256(b"{}").hexdigest()

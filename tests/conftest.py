"""Shared fixtures. Importing tests.alsa_env points ALSA at the test PCMs before anything opens one."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from tests.alsa_env import ALSA_DIR

# `voxnode run --stdout` keeps a spool (its finals' seq): in $STATE_DIRECTORY, else /var/lib/voxnode.
# Every daemon the tests start (in-process or a subprocess, which inherits this) gets its own place
# for this session, never the machine's, so no test sees finals another run left.
STATE_DIR = tempfile.mkdtemp(prefix="voxnode-test-state-")
os.environ["STATE_DIRECTORY"] = STATE_DIR


@pytest.fixture(autouse=True)
def state_directory(tmp_path_factory, monkeypatch) -> Path:
    """Each test's own state folder (the spool a stdout-only daemon keeps): finals a killed daemon left
    unprinted are printed by the next daemon started with the same folder, never by another test's."""
    folder = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("STATE_DIRECTORY", str(folder))
    return folder


@pytest.fixture
def alsa_dir() -> Path:
    return ALSA_DIR


@pytest.fixture
def voxnode_cmd() -> list[str]:
    return [sys.executable, "-m", "voxnode"]


def pytest_sessionfinish(session, exitstatus):
    import shutil

    shutil.rmtree(ALSA_DIR, ignore_errors=True)
    shutil.rmtree(STATE_DIR, ignore_errors=True)

"""Shared fixtures. Importing tests.alsa_env points ALSA at the test PCMs before anything opens one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.alsa_env import ALSA_DIR


@pytest.fixture
def alsa_dir() -> Path:
    return ALSA_DIR


@pytest.fixture
def voxnode_cmd() -> list[str]:
    return [sys.executable, "-m", "voxnode"]


def pytest_sessionfinish(session, exitstatus):
    import shutil

    shutil.rmtree(ALSA_DIR, ignore_errors=True)

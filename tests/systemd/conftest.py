"""Fixtures shared by the service tests."""

import pytest

from tests.systemd.helpers import NotifySocket


@pytest.fixture
def notify(tmp_path):
    s = NotifySocket(tmp_path)
    yield s
    s.close()

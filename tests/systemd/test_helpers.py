"""The service tests' own aids: a daemon started and stopped through them leaves no file handle behind."""

from __future__ import annotations

import gc
import warnings

from tests.systemd.helpers import start_daemon, stop


def test_a_daemon_started_and_stopped_leaves_no_file_open(tmp_path):
    """Before: start_daemon opened stderr.log for the child and dropped it open (a ResourceWarning per
    daemon, an error under -W error)."""
    gc.collect()  # garbage earlier tests left in reference cycles is collected here, not counted as this test's
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p = start_daemon(["--config", str(tmp_path / "missing.toml")], None, tmp_path)
        rc = p.wait(60)  # it stops on the missing config by itself
        stop(p)
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
    assert rc == 1 and "missing.toml" in (tmp_path / "stderr.log").read_text()  # the child's stderr is still there

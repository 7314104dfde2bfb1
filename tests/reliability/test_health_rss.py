"""The health report's RSS is the process's RSS between reports, not the dip right after malloc_trim (issue 11:
it read about 12 MB under VmRSS)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHILD = r"""
import json
from voxnode.config.health import HealthConfig
from voxnode.health.process import rss_bytes
from voxnode.health.report import HealthMonitor

m = HealthMonitor(HealthConfig(malloc_trim_interval_s=300.0), "n", clock=lambda: 0.0)
junk = [bytes(200) + bytes([i % 256]) for i in range(300_000)]  # ~80 MB of small heap blocks
del junk[:250_000]              # the older part freed: pages inside the heap, held by malloc until trimmed
vmrss = rss_bytes()             # what `ps` shows now, and until the next report
m.housekeeping(1.0)             # >= 16 MB freed: trims now
report = m.collect({"uptime_s": 1.0, "streams": {}}, None, None)
print(json.dumps({"vmrss": vmrss, "reported": report["process"]["rss_bytes"],
                  "trimmed": report["memory"]["trim"]["last_returned_bytes"], "after": rss_bytes()}))
"""


def test_reported_rss_is_not_sampled_after_the_trim():
    p = subprocess.run(
        [sys.executable, "-c", CHILD],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONMALLOC": "malloc"},
    )
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    mb = {k: round(v / 2**20, 1) for k, v in r.items()}
    print(f"\n{mb}")
    assert r["trimmed"] > 8 << 20, mb  # the trim did return memory: the case that matters
    assert abs(r["reported"] - r["vmrss"]) < 2 << 20, mb  # before: reported == after the trim

"""`voxnode run --stdout` without MQTT: finals get their durable `seq` (the spool, voxnode.delivery),
and one stored but not printed when the daemon died is printed at the next start, with its seq.

Before [delivery], durability existed only with MQTT: stdout-only runs had no seq and no spool.
The daemon is the real one in a subprocess (tests/mqtt/feeder.py), fed synthetic finals: the
decoder's timing plays no part in what is checked here."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from tests.mqtt.conftest import Feeder
from voxnode.delivery.spool import Spool


def stdout_only_config(folder: Path) -> Path:
    path = folder / "stdout.toml"
    path.write_text(f'[log]\nlevel = "info"\n\n[delivery]\nspool_path = "{folder / "spool.sqlite"}"\n')
    return path


def run(config: Path, tag: str, count: int) -> list[dict]:
    f = Feeder(config, count=count, interval=0.02, tag=tag, linger=0.5, stdout=True)
    try:
        assert f.proc.wait(60) == 0, f.log()
    finally:
        f.stop()
    return f.finals()


def test_stdout_only_finals_have_a_seq_and_an_unprinted_one_comes_back(tmp_path):
    config = stdout_only_config(tmp_path)
    # What a crash between storing a final and printing it leaves: the final on disk, pending for stdout.
    left = Spool(tmp_path / "spool.sqlite", 100, ("stdout",))
    stored = {"type": "final", "stream": "mic", "id": "before-0001", "text": "from the run that died"}
    left.append("mic", lambda seq: json.dumps({**stored, "seq": seq, "model": "whisper-tiny.en"}).encode())
    left.close()

    finals = run(config, "one", 3)
    assert [(e["id"], e["seq"]) for e in finals] == [
        ("before-0001", 1),
        ("one-0001", 2),
        ("one-0002", 3),
        ("one-0003", 4),
    ]
    assert all("model" in e for e in finals)  # as MQTT publishes them

    again = run(config, "two", 2)
    assert [(e["id"], e["seq"]) for e in again] == [("two-0001", 5), ("two-0002", 6)]  # nothing twice; seq goes on
    spool = Spool(tmp_path / "spool.sqlite", 100, ("stdout",))
    assert spool.pending("stdout") == 0 and spool.count == 0  # printed finals leave the spool


def test_no_stored_final_is_lost_to_a_kill(tmp_path):
    """SIGKILL while finals pour in: every final that got a seq is printed, by this run or the next,
    and a seq always names the same final."""
    config = stdout_only_config(tmp_path)
    f = Feeder(config, count=400, interval=0.005, tag="killed", stdout=True)
    try:
        f.wait_accepted(150)
    finally:
        f.stop(signal.SIGKILL)
    printed = f.finals()
    printed += run(config, "after", 1)
    by_seq: dict[int, str] = {}
    for e in printed:
        assert by_seq.setdefault(e["seq"], e["id"]) == e["id"], f"seq {e['seq']} names two finals"
    assert sorted(by_seq) == list(range(1, max(by_seq) + 1)), "a stored final was never printed"
    assert by_seq[max(by_seq)] == "after-0001"

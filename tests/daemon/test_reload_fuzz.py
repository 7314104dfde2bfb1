"""Every malformed config of the config fuzz sets, sent as a reload to a running daemon (issue 27):
each is refused by check-config, each reload is rejected with the old config still running, and
the daemon never exits. Before: a `[wake] model` whose manifest did not exist passed check-config
and ended the daemon at reload; so did a NUL character in a device name ("every stream worker has
ended; exiting with status 1"); a config replaced by a FIFO hung the main loop, SIGTERM included.
The MQTT `{"cmd": "reload"}` command goes through the same path (Daemon.request_reload)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.alsa_env import alsa_file_pcm
from tests.config.test_config import BAD_CONFIGS
from tests.reliability.test_config_holes import CLI_CASES, FILE_CASES, FLOATS, mqtt_config
from tests.systemd.helpers import NotifySocket, PacedMic, has, start_daemon, stop

BASE = '[service]\nstop_timeout_s = 2.0\ncapture_stall_s = 5.0\n[[streams]]\nname = "a"\ndevice = "vx_live"\n'

Prepare = Callable[[Path], None]  # puts a malformed config at the given path


def _text(text: str | bytes) -> Prepare:
    def put(path: Path) -> None:
        _clear(path)
        (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)  # type: ignore[operator]

    return put


def _clear(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        path.rmdir()
    else:
        path.unlink(missing_ok=True)


def _fifo(path: Path) -> None:
    _clear(path)
    os.mkfifo(path)


def _directory(path: Path) -> None:
    _clear(path)
    path.mkdir()


def _manifest(folder: Path, with_model: bool) -> Path:
    """A microWakeWord manifest; its model file is left out when `with_model` is false."""
    manifest = folder / ("hey_box.json" if with_model else "no_model.json")
    manifest.write_text(
        json.dumps(
            {
                "type": "micro",
                "wake_word": "Hey Box",
                "model": manifest.stem + ".tflite",
                "micro": {"probability_cutoff": 0.9, "sliding_window_size": 5},
            }
        )
    )
    return manifest


def fuzz_set(work: Path) -> dict[str, Prepare]:
    """The config fuzz sets of tests/config and tests/reliability, and issue 27's holes."""
    cases: dict[str, Prepare] = {}
    for name, (text, _key, _detail) in BAD_CONFIGS.items():
        cases[f"config: {name}"] = _text(BASE + text)
    for name, (data, _expected) in CLI_CASES.items():
        cases[f"holes: {name}"] = _text(data)
    for name, (keys, _expected) in FILE_CASES.items():
        d = work / f"files-{len(cases)}"
        d.mkdir()
        cases[f"files: {name}"] = _text(mqtt_config(d, **keys(d)).read_text() + BASE)
    for key, _meta in FLOATS:
        if not key.startswith("streams."):
            section, name = key.rsplit(".", 1)
            cases[f"nan: {key}"] = _text(f"[{section}]\n{name} = nan\n")
    missing_model = _manifest(work, with_model=False)
    cases.update(
        {
            "wake: no manifest": _text(BASE + f'[wake]\nenabled = true\nmodel = "{work}/nope.json"\n'),
            "wake: stream's manifest missing": _text(BASE + f'wake = "{work}/nope/kitchen.json"\n'),
            "wake: model file missing": _text(BASE + f'[wake]\nenabled = true\nmodel = "{missing_model}"\n'),
            "wake: confirm without alexa": _text(BASE + '[wake]\nenabled = true\nconfirm = "openwakeword"\n'),
            "NUL in audio.device": _text('[audio]\ndevice = "vx_live\\u0000x"\n'),
            "NUL in a stream's device": _text(BASE.replace('"vx_live"', '"vx_\\u0000live"')),
            "config is a FIFO": _fifo,
            "config is a directory": _directory,
            "config removed": _clear,
        }
    )
    return cases


def check_config(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "voxnode", "check-config", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_the_fuzz_set_is_big_enough(tmp_path):
    assert len(fuzz_set(tmp_path)) >= 50, len(fuzz_set(tmp_path))


def test_check_config_refuses_every_one_with_one_line(tmp_path, capsys):
    from voxnode.cli import main

    cfg = tmp_path / "config.toml"
    for name, prepare in fuzz_set(tmp_path).items():
        if name == "config is a FIFO":
            continue  # in a child process below: before the fix, this open waited for a writer
        prepare(cfg)
        assert main(["check-config", "--config", str(cfg)]) == 1, name
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and err.startswith("voxnode: error: "), (name, err)
        if name.startswith(("wake:", "NUL")):
            assert re.search(r"wake\.(model|confirm)|streams\[0\]\.(wake|device)|audio\.device", err), (name, err)


def test_check_config_on_a_fifo_does_not_wait_for_a_writer(tmp_path):
    cfg = tmp_path / "config.toml"
    os.mkfifo(cfg)
    p = check_config(cfg)  # before: blocked in open() until a writer came (timeout=60 here)
    assert (
        p.returncode == 1
        and p.stderr.strip() == f"voxnode: error: config file {cfg} is a FIFO (named pipe), not a regular file"
    )


def test_malformed_reloads_never_stop_the_daemon(tmp_path):
    (tmp_path / "alsa").mkdir()
    live = tmp_path / "live.fifo"
    os.mkfifo(live)
    (tmp_path / "alsa" / "asoundrc").write_text(alsa_file_pcm("vx_live", live))
    cases = fuzz_set(tmp_path)
    cfg = tmp_path / "config.toml"
    cfg.write_text(BASE)
    mic = PacedMic(live)
    notify = NotifySocket(tmp_path)
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    p = start_daemon(["--config", str(cfg)], notify, tmp_path, watchdog_s=2.0, extra_env=env)
    rejected: dict[str, str] = {}
    try:
        notify.wait_for(has("READY", "1"), timeout=30)
        for name, prepare in cases.items():
            prepare(cfg)
            p.send_signal(signal.SIGHUP)
            ready = notify.wait_for(has("READY", "1"), timeout=15)
            status = ready.fields.get("STATUS", "")
            assert p.poll() is None, f"the daemon exited after {name!r}"
            assert "reload failed, previous config still running" in status, (name, status)
            assert "1 stream: a running" in status, (name, status)
            rejected[name] = status
        _text(BASE)(cfg)  # a good config still applies after all of them
        p.send_signal(signal.SIGHUP)
        status = notify.wait_for(has("READY", "1"), timeout=15).fields.get("STATUS", "")
        assert "reload failed" not in status and "1 stream: a running" in status, status
        t = time.monotonic()
        notify.wait_for(lambda m: has("WATCHDOG")(m) and m.t > t, timeout=5)
    finally:
        rc = stop(p)
        mic.close()
        notify.close()
    assert rc == 0
    assert len(rejected) == len(cases) >= 50
    log = (tmp_path / "stderr.log").read_text()
    assert "Traceback" not in log and "every stream worker has ended" not in log, log
    assert log.count("config reload failed, previous config still running") == len(cases)

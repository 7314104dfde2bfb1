"""`voxnode check-config` refuses a wake.confirm the daemon would refuse, with the daemon's words: before,
it passed a config whose second opinion had no alexa to confirm, no pyopen-wakeword package or a missing
model file, and `voxnode run` stopped on it only when its streams started (after loading Whisper)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.alsa_env import ROOT
from tests.helpers import outcome_within
from voxnode.cli import main
from voxnode.errors import ConfigError, ModelError
from voxnode.wake import openwakeword

ALEXA = '[wake]\nenabled = true\nmodel = "alexa"\nconfirm = "openwakeword"\n'
CLIP = ROOT / "daemon" / "voxnode" / "demo_audio" / "demo.wav"


def missing_file(cfg: Path, path: Path) -> str:
    """The daemon's line for a pyopen-wakeword model file that is not there (`cfg`: the config file)."""
    return (
        f'voxnode: error: {cfg}: wake.confirm = "openwakeword": {path} does not exist '
        f"(reinstall: {openwakeword.INSTALL})"
    )


def check_config(capsys, cfg: Path) -> str:
    """check-config in this process: its one error line."""
    assert main(["check-config", "--config", str(cfg)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("voxnode: error: "), err
    return err


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        (
            '[wake]\nenabled = true\nconfirm = "openwakeword"\n',  # okay_nabu, the default word
            'wake.confirm = "openwakeword": gives a second opinion on alexa only; the stream listens for okay_nabu',
        ),
        (
            '[wake]\nenabled = true\nmodel = "alexa"\nconfirm = "oww"\n',
            'wake.confirm = "oww": allowed values are "auto", "whisper", "openwakeword", ""',
        ),
    ],
)
def test_check_config_names_wake_confirm(toml, expected, tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text(toml)
    assert check_config(capsys, cfg) == f"voxnode: error: {cfg}: {expected}"


def test_check_config_says_what_to_install_without_the_package(tmp_path, capsys, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(openwakeword.importlib.util, "find_spec", lambda n: None if n == "pyopen_wakeword" else real(n))
    cfg = tmp_path / "c.toml"
    cfg.write_text(ALEXA)
    err = check_config(capsys, cfg)
    assert err.startswith(f'voxnode: error: {cfg}: wake.confirm = "openwakeword": the pyopen-wakeword package is not')


def test_check_config_without_a_model_file_in_a_stream(tmp_path, capsys, monkeypatch):
    """A stream of its own listening for alexa ([wake] off), the package there but its alexa head gone."""
    folder = tmp_path / "pkg"
    (folder / "models").mkdir(parents=True)
    spec = importlib.machinery.ModuleSpec("pyopen_wakeword", None, is_package=True)
    assert spec.submodule_search_locations is not None
    spec.submodule_search_locations.append(str(folder))
    real = importlib.util.find_spec
    monkeypatch.setattr(openwakeword.importlib.util, "find_spec", lambda n: spec if n == "pyopen_wakeword" else real(n))
    for name in ("melspectrogram.tflite", "embedding_model.tflite"):
        (folder / "models" / name).write_bytes(b"")  # there is all check-config asks (nothing is loaded)
    cfg = tmp_path / "c.toml"
    cfg.write_text('[wake]\nconfirm = "openwakeword"\n[[streams]]\nname = "k"\ndevice = "x"\nwake = "alexa"\n')
    err = check_config(capsys, cfg)
    assert err == missing_file(cfg, folder / "models" / "alexa.tflite")


def test_a_model_file_that_is_a_fifo_is_named_as_one(tmp_path):
    """Before: "... does not exist", of a file that is there (its own is_file check)."""
    for name in ("melspectrogram.tflite", "embedding_model.tflite"):
        (tmp_path / name).write_bytes(b"")
    os.mkfifo(tmp_path / "alexa.tflite")
    got = outcome_within(lambda: openwakeword.model_files("alexa", tmp_path), tmp_path / "alexa.tflite")
    assert isinstance(got, ConfigError), got
    assert str(got) == (
        f'wake.confirm = "openwakeword": {tmp_path / "alexa.tflite"} is a FIFO (named pipe), not a regular file '
        f"(reinstall: {openwakeword.INSTALL})"
    )


def test_a_model_file_holding_another_graph_is_one_line(tmp_path):
    """The alexa head where the mel model should be: its input cannot take a mel window. Before: the
    resize and allocation ran outside the load's error handling, a RuntimeError's traceback."""
    real = openwakeword.models_dir()
    for name in ("embedding_model.tflite", "alexa.tflite"):
        shutil.copy(real / name, tmp_path / name)
    shutil.copy(real / "alexa.tflite", tmp_path / "melspectrogram.tflite")
    with pytest.raises(ModelError) as e:
        openwakeword.OwwScorer(tmp_path)
    msg, mel = str(e.value), tmp_path / "melspectrogram.tflite"
    assert "\n" not in msg and msg.startswith(f'wake.confirm = "openwakeword": {mel} cannot be loaded by '), msg
    assert msg.endswith(f"; reinstall: {openwakeword.INSTALL}"), msg


def _shadow_package(root: Path) -> Path:
    """A copy of the installed pyopen_wakeword package without its alexa model, found first on PYTHONPATH."""
    real = importlib.util.find_spec("pyopen_wakeword")
    assert real is not None and real.submodule_search_locations, "the test extras install pyopen-wakeword"
    copy = root / "pyopen_wakeword"
    shutil.copytree(next(iter(real.submodule_search_locations)), copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "models" / "alexa.tflite").unlink()
    return copy / "models" / "alexa.tflite"


def test_check_config_and_run_stop_with_the_same_line(tmp_path):
    """The real package, its alexa model removed: check-config fails with the line `voxnode run` ends with."""
    missing = _shadow_package(tmp_path / "site")
    path = os.pathsep.join(filter(None, [str(tmp_path / "site"), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    cfg = tmp_path / "c.toml"
    cfg.write_text(ALEXA)
    voxnode = [sys.executable, "-m", "voxnode"]
    check = subprocess.run(
        [*voxnode, "check-config", "--config", str(cfg)], capture_output=True, text=True, timeout=60, env=env
    )
    assert check.returncode == 1 and check.stdout == "", check.stderr
    assert check.stderr.strip() == missing_file(cfg, missing)
    run = subprocess.run(
        [*voxnode, "run", "--config", str(cfg), "--file", str(CLIP), "--duration", "5"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.strip().splitlines()[-1] == check.stderr.strip(), run.stderr

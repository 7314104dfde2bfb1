"""scripts/install.sh (what `sudo make install` runs) in a throwaway root: file layout, a config
that is never overwritten once edited, uninstall keeping the config. The venv step is skipped
(--no-venv): a venv cannot be moved, and building one takes a network and a minute."""

import subprocess

import pytest

from tests.alsa_env import ROOT

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)

SCRIPT = ROOT / "scripts" / "install.sh"
REFERENCE = (ROOT / "config" / "voxnode.toml").read_text()


def _run(*args, root):
    p = subprocess.run([str(SCRIPT), *args, "--root", str(root)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr + p.stdout
    return p.stdout


def _models(tmp_path, content="v1"):
    m = tmp_path / "models" / "whisper-tiny.en"
    m.mkdir(parents=True, exist_ok=True)
    (m / "encoder.int8.tflite").write_text(content)
    t = tmp_path / "models" / "smart-turn-v3.2"
    t.mkdir(parents=True, exist_ok=True)
    (t / "smart_turn.tflite").write_text(content)
    d = tmp_path / "models" / "deepfilternet3"
    d.mkdir(parents=True, exist_ok=True)
    (d / "enc.tflite").write_text(content)
    return tmp_path / "models"


def test_install_layout_and_config_preservation(tmp_path):
    root = tmp_path / "root"
    out = _run("install", "--no-venv", "--models", str(_models(tmp_path)), root=root)
    config = root / "etc/voxnode/config.toml"
    assert config.read_text() == REFERENCE
    assert (root / "etc/systemd/system/voxnode.service").read_text() == (ROOT / "systemd/voxnode.service").read_text()
    # Where voxnode.models.find_model() looks on an installed node: Whisper's model ...
    assert (root / "opt/voxnode/models/whisper-tiny.en/encoder.int8.tflite").read_text() == "v1"
    # ... and the end-of-turn model (vad.end_of_turn).
    assert (root / "opt/voxnode/models/smart-turn-v3.2/smart_turn.tflite").read_text() == "v1"
    # ... and DeepFilterNet 3 (frontend.denoise_engine = "deepfilter").
    assert (root / "opt/voxnode/models/deepfilternet3/enc.tflite").read_text() == "v1"
    assert "skipped enabling/starting voxnode.service" in out

    # Upgrade with an unedited config: it follows the new reference, no .dist.
    _run("install", "--no-venv", "--models", str(_models(tmp_path, "v2")), root=root)
    assert config.read_text() == REFERENCE and not (root / "etc/voxnode/config.toml.dist").exists()
    assert (root / "opt/voxnode/models/whisper-tiny.en/encoder.int8.tflite").read_text() == "v2"
    assert (root / "opt/voxnode/models/smart-turn-v3.2/smart_turn.tflite").read_text() == "v2"
    assert not list((root / "opt/voxnode/models").glob(".whisper*")), "no half-swapped model left behind"
    assert not list((root / "opt/voxnode/models").glob(".smart-turn*")), "no half-swapped model left behind"

    # Upgrade with an edited config: kept byte for byte, the new reference beside it.
    edited = REFERENCE.replace('device = "default"', 'device = "plughw:1,0"')
    config.write_text(edited)
    out = _run("install", "--no-venv", "--models", str(_models(tmp_path)), root=root)
    assert config.read_text() == edited
    assert (root / "etc/voxnode/config.toml.dist").read_text() == REFERENCE
    assert "kept your" in out

    out = _run("uninstall", root=root)
    assert not (root / "opt/voxnode").exists()
    assert not (root / "etc/systemd/system/voxnode.service").exists()
    assert config.read_text() == edited, "uninstall keeps the config"
    _run("uninstall", "--purge", root=root)
    assert not (root / "etc/voxnode").exists()


def test_install_without_models_warns(tmp_path):
    out = _run("install", "--no-venv", "--models", str(tmp_path / "nowhere"), root=tmp_path / "root")
    assert "WARNING: no" in out and "asr.model_dir" in out
    assert 'vad.end_of_turn = "off"' in out

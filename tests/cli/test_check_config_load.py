"""`voxnode check-config --load` (voxnode/load_check.py): each configured model loaded once, as `run` loads
it at start. Before (stop 46, audit3): a model folder of the user's whose manifest matches its files but
whose encoder and decoder are swapped passed check-config, and `run` stopped on it at start."""

import json
import re
import shutil
import subprocess
from importlib.resources import files

import pytest

from voxnode.asr import default_model_dir

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)


def _check(voxnode_cmd, config, *flags):
    return subprocess.run(
        voxnode_cmd + ["check-config", "--config", str(config), *flags], capture_output=True, text=True, timeout=120
    )


def _said(p: subprocess.CompletedProcess) -> list[str]:
    """stderr without LiteRT's own line ("INFO: Created TensorFlow Lite XNNPACK delegate for CPU.")."""
    return [line for line in p.stderr.splitlines() if not line.startswith("INFO: ")]


def test_a_model_folder_with_swapped_graphs_fails_check_config_load_on_one_line(tmp_path, voxnode_cmd):
    folder = tmp_path / "model"
    shutil.copytree(default_model_dir(), folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["variants"]["int8"] = {"encoder": "decoder.int8.tflite", "decoder": "encoder.int8.tflite"}
    (folder / "manifest.json").write_text(json.dumps(manifest))  # the files still match their checksums
    config = tmp_path / "c.toml"
    config.write_text(f'[asr]\nmodel = "{folder}"\n')
    assert _check(voxnode_cmd, config).returncode == 0  # without --load: by design, no model is loaded
    p = _check(voxnode_cmd, config, "--load")
    assert p.returncode == 1 and p.stdout == "", p.stderr
    assert _said(p) == [
        f'voxnode: error: {config}: asr.model = "{folder}": the model in {folder} does not load: '
        f"{folder / 'decoder.int8.tflite'}: encoder model lacks inputs ['mel', 'positions']: not a Whisper "
        "encoder converted for voxnode"
    ], p.stderr


def test_check_config_load_says_what_loaded_one_line_each(tmp_path, voxnode_cmd):
    config = tmp_path / "c.toml"
    config.write_text('[wake]\nenabled = true\nmodel = "okay_nabu, alexa"\n[frontend]\ndenoise = "asr"\n')
    p = _check(voxnode_cmd, config, "--load")
    assert p.returncode == 0 and "[asr]" in p.stdout, p.stderr
    patterns = [
        r'# asr\.model = "tiny\.en": whisper-tiny\.en \(int8\) loaded in \d+ ms',
        r'# front-end \(vad\.engine = "silero", frontend\.denoise = "asr" \(deepfilter\)\): loaded in \d+ ms',
        r'# vad\.end_of_turn = "smart-turn": loaded in \d+ ms',
        r'# wake\.model = "okay_nabu, alexa": okay_nabu, alexa loaded in \d+ ms',
        re.escape(f"# config OK: {config}"),
    ]
    said = _said(p)
    assert len(said) == len(patterns), p.stderr
    assert all(re.fullmatch(r, s) for r, s in zip(patterns, said, strict=True)), p.stderr


def test_a_wake_word_manifest_naming_another_models_file_is_refused_at_load(tmp_path, voxnode_cmd):
    """Silero VAD's .tflite named by a microWakeWord manifest: it loaded, and `run`'s stream ended on its
    first frame ("Cannot set tensor: Dimension mismatch", a traceback in its thread). Now the detector
    refuses it when it is built: check-config --load, run's start and a reload say so on one line."""
    tflite = tmp_path / "hey_box.tflite"
    shutil.copy(files("voxnode.models") / "bundled" / "silero-vad-v6" / "silero_vad.tflite", tflite)
    manifest = tmp_path / "hey_box.json"
    micro = {"probability_cutoff": 0.9, "sliding_window_size": 5}
    manifest.write_text(json.dumps({"type": "micro", "wake_word": "Hey Box", "model": tflite.name, "micro": micro}))
    config = tmp_path / "c.toml"
    config.write_text(f'[wake]\nenabled = true\nmodel = "{manifest}"\n')
    assert _check(voxnode_cmd, config).returncode == 0  # its file is read, not loaded
    p = _check(voxnode_cmd, config, "--load")
    said = _said(p)
    assert p.returncode == 1 and p.stdout == "" and len(said) == 4, p.stderr  # after the three models before it
    assert said[3] == (
        f'voxnode: error: {config}: wake.model = "{manifest}": {tflite} takes (2, 128) float32, not (1, n, 40) '
        "int8 features: not a microWakeWord model"
    ), p.stderr


def test_load_and_reference_are_one_or_the_other(voxnode_cmd):
    p = subprocess.run(voxnode_cmd + ["check-config", "--reference", "--load"], capture_output=True, text=True)
    assert p.returncode == 2 and "not allowed with argument" in p.stderr, p.stderr

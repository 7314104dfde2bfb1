"""`find_model`: one lookup for every model (Whisper, the end-of-turn model, Silero VAD, the wake-word
models), on the real shipped files, and its order, markers, variants, paths and errors in a
throwaway tree standing in for /opt/voxnode/models."""

from __future__ import annotations

import pytest

import voxnode.models.find as find
from voxnode.errors import ModelError
from voxnode.models.find import (
    BUNDLED,
    CHECKOUT_MODELS,
    SILERO_MODEL,
    SILERO_MODEL_FILE,
    TURN_MODEL,
    TURN_MODEL_FILE,
    WAKE_MODELS,
    find_model,
)

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)


def test_every_shipped_model_is_found_where_it_ships():
    assert find_model("whisper-tiny.en", "asr.model") == CHECKOUT_MODELS / "whisper-tiny.en"
    assert (find_model(TURN_MODEL, "vad.end_of_turn") / TURN_MODEL_FILE).is_file()
    # Silero VAD is package data: found in the installed package, not the checkout.
    assert find_model(SILERO_MODEL, "vad.engine") == BUNDLED / SILERO_MODEL
    assert (find_model(SILERO_MODEL, "vad.engine") / SILERO_MODEL_FILE).is_file()
    wake = find_model(WAKE_MODELS, "wake.model")
    assert wake.name == "models" and (wake / "okay_nabu.tflite").is_file()


@pytest.fixture
def roots(tmp_path, monkeypatch):
    """Three roots in search order, as the checkout, /opt/voxnode/models and the package."""
    dirs = [tmp_path / "checkout", tmp_path / "opt", tmp_path / "bundled"]
    for d in dirs:
        d.mkdir()
    monkeypatch.setattr(find, "model_roots", lambda: dirs)
    monkeypatch.setattr(find, "BUNDLED", dirs[2])
    return dirs


def _model(root, name, marker="manifest.json"):
    (root / name).mkdir(parents=True, exist_ok=True)
    (root / name / marker).write_text("{}")
    return root / name


def test_first_root_holding_the_marker_wins(roots):
    checkout, opt, _ = roots
    (checkout / "whisper-base").mkdir()  # empty (a failed copy): skipped
    installed = _model(opt, "whisper-base")
    assert find_model("whisper-base", "asr.model = 'base'") == installed
    first = _model(checkout, "whisper-base")
    assert find_model("whisper-base", "x") == first


def test_a_variant_of_a_shipped_model_is_found_beside_it_with_its_marker(roots):
    _, opt, bundled = roots
    _model(bundled, "whisper-tiny.en+kitchen")  # never from inside the package
    with pytest.raises(ModelError, match=r"asr.model = 'tiny.en\+kitchen': no speech model found"):
        find_model("whisper-tiny.en+kitchen", "asr.model = 'tiny.en+kitchen'")
    (opt / "whisper-tiny.en+kitchen").mkdir()
    with pytest.raises(ModelError):  # no manifest.json: not a Whisper model
        find_model("whisper-tiny.en+kitchen", "asr.model")
    (opt / "whisper-tiny.en+kitchen" / "manifest.json").write_text("{}")
    assert find_model("whisper-tiny.en+kitchen", "asr.model") == opt / "whisper-tiny.en+kitchen"


def test_a_path_is_used_as_it_is(tmp_path, roots):
    mine = _model(tmp_path / "elsewhere", "my-model")
    assert find_model(str(mine), "asr.model") == mine
    with pytest.raises(ModelError, match=r"asr.model: no model found; looked in /nonexistent/model \("):
        find_model("/nonexistent/model", "asr.model")


def test_a_relative_path_that_is_not_there_is_named_absolute(tmp_path, monkeypatch):
    """Before: `asr.model = "./m"` said "looked in m", relative to a working folder the message did not name."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModelError, match=rf"asr.model: no model found; looked in {tmp_path}/m \("):
        find_model("./m", "asr.model")


def test_a_missing_model_is_one_line_naming_the_setting_every_place_and_the_remedy(roots):
    with pytest.raises(ModelError) as e:
        find_model(TURN_MODEL, "vad.end_of_turn")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("vad.end_of_turn: no end-of-turn model found; looked in ")
    assert all(str(r / TURN_MODEL) in msg for r in roots)
    assert msg.endswith('(reinstall voxnode, or set vad.end_of_turn = "off")')

"""A user's wake model file (the .tflite a manifest names) is read through the config file's guard
(voxnode.regular_file): a FIFO there is named as one, never waited on, and a file far larger than a
microWakeWord model is refused instead of read into memory."""

from __future__ import annotations

import os
import re
import threading

import pytest

from voxnode.cli import main
from voxnode.errors import ConfigError
from voxnode.wake.models import MAX_MODEL_BYTES, load_wake_model

MANIFEST = (
    '{"wake_word": "Hey Box", "model": "box.tflite", "micro": {"probability_cutoff": 0.9, "sliding_window_size": 5}}'
)


def user_model(folder, tflite=lambda p: p.write_bytes(b"")):
    manifest = folder / "box.json"
    manifest.write_text(MANIFEST)
    tflite(folder / "box.tflite")
    return manifest, folder / "box.tflite"


def test_a_model_file_that_is_a_fifo_is_named_as_one(tmp_path, capsys):
    """Before: "the model file ... does not exist", of a file that is there."""
    manifest, tflite = user_model(tmp_path, os.mkfifo)
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[wake]\nenabled = true\nmodel = "{manifest}"\n')
    assert main(["check-config", "--config", str(cfg)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (
        f'voxnode: error: {cfg}: wake.model = "{manifest}": the model file {tflite} named by {manifest} '
        "is a FIFO (named pipe), not a regular file"
    ), err
    tflite.unlink()
    with pytest.raises(ConfigError, match=re.escape(f"the model file {tflite} named by {manifest} does not exist")):
        load_wake_model(str(manifest))


def test_content_is_capped(tmp_path):
    """Before: read whole, whatever its size."""
    manifest, tflite = user_model(tmp_path, lambda p: (p.write_bytes(b""), os.truncate(p, MAX_MODEL_BYTES + 1)))
    model = load_wake_model(str(manifest))
    said = f'wake.model = "{manifest}": the model file {tflite} is larger than 4 MiB; is it'
    with pytest.raises(ConfigError, match=re.escape(said)):
        model.content()
    os.truncate(tflite, MAX_MODEL_BYTES)  # at the cap: read
    assert len(model.content()) == MAX_MODEL_BYTES


def test_content_never_waits_on_a_fifo(tmp_path):
    """A model file swapped for a FIFO after the config was checked (a reload reads it again). Before:
    content() waited in read_bytes for a writer, holding the lock every stream's detector takes."""
    manifest, tflite = user_model(tmp_path)
    model = load_wake_model(str(manifest))
    tflite.unlink()
    os.mkfifo(tflite)
    outcome: list[BaseException | bytes] = []

    def read() -> None:
        try:
            outcome.append(model.content())
        except BaseException as e:  # noqa: BLE001 (the test looks at it)
            outcome.append(e)

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(10)
    if t.is_alive():  # a writer that opens and closes at once ends the read it waits in
        os.close(os.open(tflite, os.O_WRONLY | os.O_NONBLOCK))
        t.join(5)
    assert len(outcome) == 1 and isinstance(outcome[0], ConfigError) and not t.is_alive(), outcome
    said = f'wake.model = "{manifest}": the model file {tflite} is a FIFO (named pipe), not a regular file'
    assert str(outcome[0]) == said, outcome


@pytest.mark.parametrize("where", ["wake.model", "streams[0].wake"])
def test_a_model_file_that_does_not_load_names_the_setting_and_its_value(where, tmp_path):
    """A user's model whose file passes check-config (it is a regular file of a model's size) but is no
    model: a stream's start names the key that asked for it and its value, as the loader does. Before:
    "wake.model: ... cannot be loaded ...; reinstall voxnode", for a stream's own `wake` too."""
    from voxnode.config import parse_config
    from voxnode.errors import ModelError
    from voxnode.preflight import check_runnable
    from voxnode.stream.params import wake_params
    from voxnode.wake.detector import WakeDetector

    manifest, tflite = user_model(tmp_path, lambda p: p.write_bytes(os.urandom(60000)))
    if where == "wake.model":
        text = f'[wake]\nenabled = true\nmodel = "{manifest}"\n'
    else:
        text = f'[wake]\nenabled = true\n[[streams]]\nname = "a"\ndevice = "null"\nwake = "{manifest}"\n'
    config = parse_config(text, "c.toml")
    check_runnable(config)  # passes: the file is only read, not loaded, before a stream starts
    params = wake_params(config, "mic" if where == "wake.model" else "a")
    assert params is not None
    with pytest.raises(ModelError) as e:
        WakeDetector(params.models, params.refractory_ms)
    said = f'{where} = "{manifest}": {tflite} cannot be loaded by '
    assert str(e.value).startswith(said) and str(e.value).endswith("; is it a microWakeWord model?"), e.value

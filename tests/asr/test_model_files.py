"""Model directory checks: a missing or corrupt file is named in the ModelError."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from voxnode.asr import default_model_dir
from voxnode.asr.whisper.engine import WhisperEngine
from voxnode.asr.whisper.files import open_model_dir
from voxnode.errors import ModelError
from voxnode.models.files import sha256_of
from voxnode.models.find import candidates

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)


@pytest.fixture(scope="module")
def model_dir() -> Path:
    return default_model_dir()


@pytest.fixture
def model_copy(model_dir, tmp_path) -> Path:
    dst = tmp_path / "model"
    shutil.copytree(model_dir, dst)
    return dst


def test_default_model_dir_is_the_committed_model(model_dir):
    assert model_dir == candidates("whisper-tiny.en")[0]
    assert (model_dir / "manifest.json").is_file()


def test_configured_model_dir_wins(tmp_path):
    assert default_model_dir(str(tmp_path)) == tmp_path


def test_manifest_checksums_match_the_files(model_dir):
    manifest = json.loads((model_dir / "manifest.json").read_text())
    assert "int8" in manifest["variants"]
    for name, entry in manifest["files"].items():
        assert sha256_of(model_dir / name) == entry["sha256"], name
    sums = (model_dir / "SHA256SUMS").read_text().split("\n")
    assert any(line.endswith("  decoder.int8.tflite") for line in sums)


def test_corrupt_file_is_named(model_copy):
    vocab = model_copy / "vocabulary.txt"
    data = bytearray(vocab.read_bytes())
    data[100] ^= 0xFF
    vocab.write_bytes(bytes(data))
    with pytest.raises(ModelError, match=r"vocabulary\.txt: corrupt model file: sha256"):
        WhisperEngine.load(model_copy)


@pytest.mark.parametrize("key", ["model_dir", "model"])
def test_a_graph_that_does_not_load_names_the_setting_and_its_value(key, model_copy):
    """A folder whose manifest matches its files (check-config passes) but whose encoder is no model:
    loading it names the setting and its value, as the loader does. Before: "asr.model:" alone, and
    for asr.model_dir too."""
    from voxnode.config import parse_config
    from voxnode.preflight import check_runnable

    encoder = model_copy / "encoder.int8.tflite"
    encoder.write_bytes(bytes(range(256)) * 64)
    manifest = json.loads((model_copy / "manifest.json").read_text())
    manifest["files"][encoder.name] = {"sha256": sha256_of(encoder), "bytes": encoder.stat().st_size}
    (model_copy / "manifest.json").write_text(json.dumps(manifest))
    config = parse_config(f'[asr]\n{key} = "{model_copy}"\n', "c.toml")
    check_runnable(config)
    with pytest.raises(ModelError) as e:
        WhisperEngine.from_config(config.asr)
    # A folder of the user's: "reinstall voxnode" (before) would not touch it.
    said = f'asr.{key} = "{model_copy}": the model in {model_copy} does not load: {encoder} cannot be loaded by '
    assert str(e.value).startswith(said) and "\n" not in str(e.value), e.value
    assert "reinstall" not in str(e.value), e.value
    with pytest.raises(ModelError, match="; reinstall voxnode$"):  # a shipped model's advice is kept
        WhisperEngine.load(model_copy)


def _rewrite(folder: Path, **files: bytes) -> None:
    """Files of `folder` replaced, and the manifest made to match them (a user who regenerated it)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    for name, data in files.items():
        (folder / name).write_bytes(data)
        manifest["files"][name] = {"sha256": sha256_of(folder / name), "bytes": len(data)}
    (folder / "manifest.json").write_text(json.dumps(manifest))


def _load_own(folder: Path) -> str:
    from voxnode.config import parse_config

    with pytest.raises(ModelError) as e:
        WhisperEngine.from_config(parse_config(f'[asr]\nmodel = "{folder}"\n', "c.toml").asr)
    said = str(e.value)
    assert said.startswith(f'asr.model = "{folder}": ') and "\n" not in said and "reinstall" not in said, said
    return said


def test_graphs_of_the_wrong_kind_are_named_not_a_key_error(model_copy):
    """The manifest's encoder and decoder swapped: before, KeyError: 'mel' (a traceback)."""
    manifest = json.loads((model_copy / "manifest.json").read_text())
    manifest["variants"]["int8"] = {"encoder": "decoder.int8.tflite", "decoder": "encoder.int8.tflite"}
    (model_copy / "manifest.json").write_text(json.dumps(manifest))
    said = _load_own(model_copy)
    assert f"the model in {model_copy} does not load: {model_copy / 'decoder.int8.tflite'}: " in said, said
    assert "encoder model lacks inputs ['mel', 'positions']" in said, said


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda c: c.pop("tokens"), "tokens.eot, tokens.sot, tokens.no_speech, tokens.no_timestamps"),  # KeyError
        (lambda c: c.update(n_heads=0), "n_heads"),  # ZeroDivisionError
        (lambda c: c.update(suppress_ids="1 2"), "suppress_ids (a list of token ids)"),
        (lambda c: c.update(d_model=385), "d_model 385 is not a multiple of n_heads 6"),
    ],
)
def test_a_model_config_that_lacks_an_entry_is_named(change, named, model_copy):
    config = json.loads((model_copy / "model_config.json").read_text())
    change(config)
    _rewrite(model_copy, **{"model_config.json": json.dumps(config).encode()})
    said = _load_own(model_copy)
    assert f"{model_copy / 'model_config.json'}: " in said and named in said, said


def test_a_model_config_that_is_not_an_object_is_named(model_copy):
    _rewrite(model_copy, **{"model_config.json": b"[1, 2]"})  # before: TypeError
    assert f"{model_copy / 'model_config.json'}: not a model configuration" in _load_own(model_copy)


def test_positional_tables_of_the_wrong_shape_are_named_at_load(model_copy):
    """The two tables swapped: before, the model loaded and every transcript failed with "cannot read
    audio: encoder needs an even frame count <= 896", blaming the audio."""
    enc, dec = (model_copy / n for n in ("encoder_positions.npy", "decoder_positions.npy"))
    _rewrite(model_copy, **{enc.name: dec.read_bytes(), dec.name: enc.read_bytes()})
    said = _load_own(model_copy)
    assert f"does not load: {enc}: shape (448, 384), model_config.json's n_audio_ctx and d_model" in said, said


def test_truncated_model_is_named(model_copy):
    dec = model_copy / "decoder.int8.tflite"
    with open(dec, "r+b") as f:
        f.truncate(dec.stat().st_size // 2)
    with pytest.raises(ModelError, match=r"decoder\.int8\.tflite: corrupt model file: \d+ bytes"):
        WhisperEngine.load(model_copy)


def test_missing_file_is_named(model_copy):
    (model_copy / "encoder.int8.tflite").unlink()
    with pytest.raises(ModelError, match=r"encoder\.int8\.tflite: the model file does not exist"):
        WhisperEngine.load(model_copy)


def test_missing_manifest_and_directory(model_copy, tmp_path):
    (model_copy / "manifest.json").unlink()
    with pytest.raises(ModelError, match=r"manifest\.json: missing"):
        WhisperEngine.load(model_copy)
    with pytest.raises(ModelError, match="does not exist"):
        WhisperEngine.load(tmp_path / "nowhere")


def test_unknown_variant(model_dir):
    with pytest.raises(ModelError, match="no 'fp16' model variant"):
        open_model_dir(model_dir, "fp16")


def test_undelegated_ops_are_counted_and_warned(model_dir, monkeypatch, caplog):
    """Without XNNPACK every op runs on reference kernels: the check must see that."""
    from ai_edge_litert import interpreter as lite

    from voxnode.models import interpreter  # opens every model's interpreters
    from voxnode.models.runtime import Runtime

    def no_delegate(**kwargs):
        return lite.Interpreter(
            experimental_op_resolver_type=lite.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES, **kwargs
        )

    monkeypatch.setattr(interpreter, "load_runtime", lambda: Runtime("ai-edge-litert", "test", no_delegate))
    with caplog.at_level(logging.WARNING, logger="voxnode.models.interpreter"):
        eng = WhisperEngine.load(model_dir, num_threads=1)
    eng.close()
    assert eng.info.xnnpack_applied is False
    assert eng.info.ops_not_delegated == eng.info.ops_total > 100
    assert any("XNNPACK did not take the whole model" in r.getMessage() for r in caplog.records)

"""The shipped models' files (Silero VAD, the end-of-turn model, Whisper's manifest and files) are read
through voxnode.regular_file: a FIFO or a device put in a model's place is one line naming the file,
never waited on nor read into memory, and a file far larger than the model is refused unread."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import outcome_within
from voxnode.errors import ModelError
from voxnode.models.files import MAX_SMALL_MODEL_BYTES, check_file, check_model_file, read_manifest
from voxnode.models.find import SILERO_MODEL, SILERO_MODEL_FILE, find_model

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)

OWNER = 'vad.engine = "silero"'


@pytest.fixture
def silero(tmp_path) -> Path:
    """A copy of the shipped Silero VAD folder (model and SHA256SUMS)."""
    folder = tmp_path / "silero"
    shutil.copytree(find_model(SILERO_MODEL, "vad.engine"), folder)
    return folder


def message(result: object) -> str:
    assert isinstance(result, ModelError), result
    assert "\n" not in str(result)
    return str(result)


def test_the_shipped_copy_is_read(silero):
    assert len(check_model_file(silero / SILERO_MODEL_FILE, OWNER)) == (silero / SILERO_MODEL_FILE).stat().st_size


def test_a_model_that_is_a_fifo_is_named_not_waited_on(silero):
    """Before: read_bytes waited for a writer (check-config, run and reloads hung)."""
    model = silero / SILERO_MODEL_FILE
    model.unlink()
    os.mkfifo(model)
    assert message(outcome_within(lambda: check_model_file(model, OWNER), model)) == (
        f"{OWNER}: the model {model} is a FIFO (named pipe), not a regular file; reinstall voxnode"
    )


def test_a_model_linked_to_dev_zero_is_named_not_read(silero):
    """Before: read_bytes read /dev/zero until memory ran out."""
    model = silero / SILERO_MODEL_FILE
    model.unlink()
    model.symlink_to("/dev/zero")
    assert message(outcome_within(lambda: check_model_file(model, OWNER))) == (
        f"{OWNER}: the model {model} is a device, not a regular file; reinstall voxnode"
    )


def test_a_model_far_larger_than_the_shipped_ones_is_refused(silero):
    model = silero / SILERO_MODEL_FILE
    os.truncate(model, MAX_SMALL_MODEL_BYTES + 1)  # sparse: no disk, no time
    assert message(outcome_within(lambda: check_model_file(model, OWNER))) == (
        f"{OWNER}: the model {model} is larger than 32 MiB; is it the right file?; reinstall voxnode"
    )


def test_a_checksum_list_that_is_a_fifo_is_named(silero):
    sums = silero / "SHA256SUMS"
    sums.unlink()
    os.mkfifo(sums)
    assert message(outcome_within(lambda: check_model_file(silero / SILERO_MODEL_FILE, OWNER), sums)) == (
        f"{OWNER}: {sums} is a FIFO (named pipe), not a regular file; reinstall voxnode"
    )


def test_a_whisper_manifest_or_file_that_is_a_fifo_is_named(tmp_path):
    """Before: the manifest's read_text waited for a writer; a model file that is a FIFO was 'missing'."""
    manifest = tmp_path / "manifest.json"
    os.mkfifo(manifest)
    assert message(outcome_within(lambda: read_manifest(tmp_path), manifest)) == (
        f"{manifest}: is a FIFO (named pipe), not a regular file"
    )
    encoder = tmp_path / "encoder.int8.tflite"
    os.mkfifo(encoder)
    assert message(outcome_within(lambda: check_file(tmp_path, encoder.name, {"bytes": 0, "sha256": ""}), encoder)) == (
        f"{encoder}: the model file is a FIFO (named pipe), not a regular file"
    )

"""`voxnode adapt`'s options (scripts/adapt/__main__.py parse(), no TensorFlow): a path given as "" and an
--out that --force must not remove are refused before the training, on one line."""

from __future__ import annotations

import pytest

from scripts.adapt.__main__ import parse


@pytest.fixture
def noise(tmp_path):
    f = tmp_path / "noise.wav"
    f.write_bytes(b"RIFF")  # parse() only looks that it is a file
    return f


def _refused(argv, capsys) -> str:
    with pytest.raises(SystemExit) as e:
        parse(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2, err
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize("option", ["--noise", "--utterances", "--before-from", "--out"])
def test_an_empty_path_is_refused(option, noise, capsys):
    """Before: Path("") is ".": `--out "" --force` removed the current folder after the training."""
    argv = ["--noise", str(noise), "--name", "kitchen", "--force", option, ""]
    said = _refused(argv, capsys)
    assert said == f"voxnode adapt: error: argument {option}: is empty; name a file or folder", said


def test_force_replaces_only_a_folder_adapt_wrote(noise, tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("not a model\n")
    argv = ["--noise", str(noise), "--name", "kitchen", "--out", str(mine)]
    said = _refused([*argv, "--force"], capsys)
    assert said.endswith("--force replaces only a model voxnode adapt wrote (it has adaptation.json); remove it"), said
    assert (mine / "notes.txt").is_file()
    said = _refused([*argv[:-2], "--out", str(noise), "--force"], capsys)  # a file
    assert "--force replaces only a model voxnode adapt wrote" in said, said
    (mine / "adaptation.json").write_text("{}\n")  # an earlier run's
    assert parse([*argv, "--force"]).out == mine
    empty = tmp_path / "empty"
    empty.mkdir()
    assert parse([*argv[:-2], "--out", str(empty), "--force"]).out == empty


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--seed", "-1", "--seed: 0 or more, got -1"),
        ("--accumulate", "0", "--accumulate: at least 1, got 0"),
        ("--max-train", "0", "--max-train: at least 1, got 0"),
        ("--max-test", "-2", "--max-test: at least 1, got -2"),
        ("--lr", "inf", "--lr: 0 or more and finite, got inf"),
    ],
)
def test_numbers_that_would_fail_after_the_conversion_are_refused(option, value, said, noise, capsys):
    """Before: accepted, and the run failed minutes in (a negative seed with numpy's traceback)."""
    argv = ["--noise", str(noise), "--name", "kitchen", option, value]
    assert _refused(argv, capsys) == f"voxnode adapt: error: {said}"

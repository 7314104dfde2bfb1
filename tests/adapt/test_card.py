"""MODEL.md of an adapted model (scripts/adapt/card.py) names where its training and its check's speech
come from, with their licences: with the wide check that includes alsa-utils' speaker-test voice."""

from __future__ import annotations

from scripts.adapt import card, results

WIDE_RUN = "2026-12-05 evening, wide check: --adapter lora:8 --lr 1e-3, seed 0"


def _model_md(tmp_path, report: dict) -> str:
    card.write(tmp_path, report)
    return (tmp_path / "MODEL.md").read_text()


def _line(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(start))


def test_the_wide_check_names_alsa_utils_among_its_sources(tmp_path) -> None:
    report = results.load()["runs"][WIDE_RUN]
    report["training"] = {
        **report["training"],
        "sources": ["asterisk-core-sounds-en"],
        "held_out_sources": ["alsa-utils", "asterisk-core-sounds-en", "pocketsphinx-testdata"],
    }
    text = _model_md(tmp_path, report)
    held = _line(text, "- Held out for the check")
    assert "71 utterances" in held
    for words in ("alsa-utils' speaker-test voice, GPL-2", "pocketsphinx-testdata, BSD-2", "CC-BY-SA-3.0"):
        assert words in held, held
    speech = _line(text, "- Speech:")
    assert "CC-BY-SA-3.0" in speech and "alsa-utils" not in speech and "pocketsphinx" not in speech
    assert "speed" not in speech and "denoise" not in speech  # no speed perturbation, the default front-end
    report["training"]["speed"] = 0.1
    report["training"]["denoise"] = "asr"
    speech = _line(_model_md(tmp_path, report), "- Speech:")
    assert "played at 1 +- 0.1 times the speed" in speech and 'denoise = "asr"' in speech


def test_reports_without_recorded_sources_take_them_from_the_check_set(tmp_path) -> None:
    report = results.load()["runs"][WIDE_RUN]  # written before the sources were recorded
    assert "held_out_sources" not in report["training"]
    assert "alsa-utils" in _line(_model_md(tmp_path, report), "- Held out for the check")


def test_the_users_utterances_are_named(tmp_path) -> None:
    report = results.load()["runs"][WIDE_RUN]
    report["training"] = {**report["training"], "sources": ["user"], "held_out_sources": ["user"]}
    text = _model_md(tmp_path, report)
    assert "the user's own utterances" in _line(text, "- Speech:")
    assert "alsa-utils" not in _line(text, "- Held out for the check")

"""The Wyoming server with Whisper base: a real client sends a real French recording; Describe lists
what the configured model can do, and the transcript says the language it was decoded as."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info

from scripts.bench.wyoming_client import WyomingDaemon, pcm, transcribe
from tests.languages import FR_TEXT, base_config, french_clip_16k, needs_french, wer

pytestmark = needs_french


def start(folder: Path, language: str) -> WyomingDaemon:
    return WyomingDaemon(folder, extra_toml=base_config(language), max_audio_s=10.0, idle_timeout_s=5.0)


@pytest.fixture(scope="module")
def auto(tmp_path_factory):
    d = start(tmp_path_factory.mktemp("wyoming-auto"), "auto")
    yield d
    assert d.stop() == 0, d.log()
    assert "Traceback" not in d.log()


def describe(port: int) -> Info:
    async def ask():
        async with AsyncTcpClient("127.0.0.1", port) as c:
            await c.write_event(Describe().event())
            return Info.from_event(await asyncio.wait_for(c.read_event(), 10))

    return asyncio.run(ask())


def language_of(ex, event_type: str) -> str | None:
    return next((e.data.get("language") for e in ex.events if e.type == event_type), None)


def test_auto_lists_every_language_of_base_and_detects_french(auto):
    (model,) = describe(auto.port).asr[0].models
    assert model.name == "whisper-base"
    assert len(model.languages) == 99 and {"en", "fr", "de", "zh", "ru"} <= set(model.languages)
    ex = asyncio.run(transcribe(auto.port, pcm(french_clip_16k()), language=None))
    assert ex.error is None, ex.error
    assert language_of(ex, "transcript") == "fr", ex.events
    assert language_of(ex, "transcript-start") is None  # not known before the audio is decoded
    assert wer(FR_TEXT, ex.text) <= 0.3, ex.text


def test_a_clients_regional_language_is_decoded_as_its_code(auto):
    # Home Assistant sends the pipeline's language; "fr-CA" (the speaker's) is Whisper's "fr".
    ex = asyncio.run(transcribe(auto.port, pcm(french_clip_16k()), language="fr-CA"))
    assert ex.error is None, ex.error
    assert language_of(ex, "transcript-start") == "fr" and language_of(ex, "transcript") == "fr"
    assert wer(FR_TEXT, ex.text) <= 0.3, ex.text
    ex = asyncio.run(transcribe(auto.port, pcm(french_clip_16k()), language="xx"))
    assert ex.error is not None and ex.error["code"] == "unsupported-language", ex.events
    assert "99 languages" in ex.error["text"]


def test_a_configured_language_is_the_only_one_offered(tmp_path):
    d = start(tmp_path, "fr")
    try:
        (model,) = describe(d.port).asr[0].models
        assert model.languages == ["fr"]
        ex = asyncio.run(transcribe(d.port, pcm(french_clip_16k()), language="en"))
        assert ex.error is not None and ex.error["code"] == "unsupported-language"
        ex = asyncio.run(transcribe(d.port, pcm(french_clip_16k()), language=None))
        assert language_of(ex, "transcript") == "fr" and wer(FR_TEXT, ex.text) <= 0.3, ex.events
    finally:
        assert d.stop() == 0, d.log()

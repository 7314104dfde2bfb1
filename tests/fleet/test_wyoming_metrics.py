"""Decode times of Wyoming requests in the metrics: a real `voxnode run` with no microphone, its
Wyoming server and Prometheus endpoint, and wyoming's own client sending real recorded speech.

Each request has its own scheduler key (wyoming:1, wyoming:2, ...); the histogram must not grow a
label value per request, so every request is observed as one stream, wyoming:requests."""

from __future__ import annotations

import asyncio

import pytest

from tests.fleet.conftest import get
from voxnode.mqtt.localbroker import free_port
from voxnode.wyoming_stt.request import OBSERVED_AS

pytest.importorskip("prometheus_client")
pytest.importorskip("wyoming")
from prometheus_client.parser import text_string_to_metric_families

from scripts.bench import audio_corpus as ac
from scripts.bench import speech_corpus as sc
from scripts.bench.wyoming_client import WyomingDaemon, clip, pcm, transcribe

pytestmark = pytest.mark.skipif(
    not (sc.PS_DATA.exists() and ac.have_espeak()), reason="needs pocketsphinx-testdata, espeak-ng, sox"
)


def test_wyoming_requests_share_one_decode_time_series(tmp_path):
    port = free_port()
    d = WyomingDaemon(tmp_path, extra_toml=f"[health]\nprometheus = true\nprometheus_port = {port}\n")
    try:
        _, audio = clip("0880")
        for _ in range(3):
            ex = asyncio.run(transcribe(d.port, pcm(audio)))
            assert ex.error is None, ex.error
        text = get(f"http://127.0.0.1:{port}/metrics")
    finally:
        assert d.stop() == 0, d.log()
    counts = {
        (sample.labels["stream"], sample.labels["kind"]): sample.value
        for family in text_string_to_metric_families(text)
        if family.name == "voxnode_decode_seconds"
        for sample in family.samples
        if sample.name == "voxnode_decode_seconds_count"
    }
    assert {stream for stream, _ in counts} == {OBSERVED_AS}, counts  # not wyoming:1, wyoming:2, wyoming:3
    assert counts[(OBSERVED_AS, "final")] == 3, counts

"""Back-pressure with the real engine made slow: three streams deliver audio
faster than the engine can decode (as on a Pi, which is several times slower
than this machine).  The engine is the real Whisper engine plus a fixed delay
per call; the delay is the only thing simulated.
"""

import logging
import threading
import time

import numpy as np
import pytest

from scripts.bench import audio_corpus as ac
from tests.stream.test_pipeline_alsa import wer
from voxnode.config import Config
from voxnode.stream.recognition import Recognition

pytestmark = pytest.mark.skipif(not ac.have_espeak(), reason="needs espeak-ng and sox (make deps-test)")

# Sentences and voice that tiny.en gets right in isolation; the test is about delivery, not accuracy.
SENTS = ["turn on the kitchen lights", "please open the garage door", "play some music in the living room"]


class SlowedEngine:
    def __init__(self, engine, extra_s):
        self.engine, self.extra_s = engine, extra_s

    def transcribe(self, audio, role="final", prompt=None, hotwords=None, abandon=None):
        time.sleep(self.extra_s)
        return self.engine.transcribe(audio, role=role, prompt=prompt, hotwords=hotwords, abandon=abandon)


def stream_audio(i):
    a = ac.at_dbfs(ac.tts(SENTS[i], "en-us"), -25)
    b = ac.at_dbfs(ac.tts(SENTS[(i + 1) % 3], "en-us"), -25)
    x = np.concatenate([ac.silence(0.5), a, ac.silence(1.2), b, ac.silence(1.2)])
    return x + ac.at_dbfs(ac.noise("pink", len(x), seed=i), -60)


def feed_all(service, pipelines, n_streams):
    """Each stream's frames as fast as its thread can push them (no pacing). `pipelines` stands in for
    the daemon's Streams: the running pipelines by name, which the recognition's stats read."""

    def feed(i):
        p = pipelines[f"s{i}"]
        x = ac.to_pcm16(stream_audio(i))
        pcm = np.frombuffer(x, dtype="<i2")
        t0 = time.monotonic()
        for k in range(len(pcm) // 320):
            p.feed(pcm[k * 320 : (k + 1) * 320], k, t0 + k * 0.02, time.time() + k * 0.02)
        p.flush()

    for i in range(n_streams):
        pipelines[f"s{i}"] = service.pipeline(f"s{i}")
    threads = [threading.Thread(target=feed, args=(i,)) for i in range(n_streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)


def test_engine_behind_skips_partials_first_and_delivers_every_final(engine):
    events = []
    pipelines = {}
    service = Recognition(Config(), events.append, [SlowedEngine(engine, 0.25)], running=lambda: pipelines)
    service.start()
    feed_all(service, pipelines, 3)
    service.stop(time.monotonic() + 30)
    st = service.stats()
    finals = [e for e in events if e.type == "final"]
    assert len(finals) == 6, [(e.stream, e.text) for e in events]
    for i in range(3):
        got = [e.text for e in finals if e.stream == f"s{i}"]
        assert len(got) == 2
        assert wer(SENTS[i], got[0]) <= 0.2 and wer(SENTS[(i + 1) % 3], got[1]) <= 0.2, got
    sched = st["scheduler"]
    assert sched["finals_dropped"] == 0
    assert sched["partials_skipped"] > 0  # partial work gave way
    assert sched["max_queue_depth"] >= 3  # the backlog was visible
    assert sched["timings_ms"]["FINAL"]["wait_p95"] > 250  # and so was the queueing latency


def test_final_that_must_be_dropped_is_counted_and_logged(engine, caplog):
    cfg = Config()
    import dataclasses

    cfg = dataclasses.replace(cfg, stream=dataclasses.replace(cfg.stream, max_pending_finals=1, partials=False))
    events = []
    pipelines = {}
    service = Recognition(cfg, events.append, [SlowedEngine(engine, 0.4)], running=lambda: pipelines)
    service.start()
    with caplog.at_level(logging.WARNING):
        feed_all(service, pipelines, 3)
        service.stop(time.monotonic() + 30)
    st = service.stats()
    finals = [e for e in events if e.type == "final"]
    lost = sum(s["finals_lost"] for s in st["streams"].values())
    suppressed = sum(s["suppressed"] for s in st["streams"].values())
    assert st["scheduler"]["finals_dropped"] >= 1
    assert lost == st["scheduler"]["finals_dropped"]
    assert len(finals) + lost + suppressed == 6  # every utterance accounted for
    msgs = [r.getMessage() for r in caplog.records]
    assert any("dropped" in m for m in msgs) and any("lost" in m for m in msgs)

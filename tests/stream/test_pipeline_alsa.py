"""End to end through real ALSA at real-time pace: FIFO -> capture -> front-end ->
VAD -> segmenter -> shared Whisper engine -> events.  No stand-ins.

The `vx_fifo` PCM (tests/conftest.py) reads a FIFO the test writes one 20 ms
period at a time, so the daemon sees audio exactly as from a microphone.
"""

from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np
import pytest

from scripts.bench import audio_corpus as ac
from tests.helpers import FifoWriter
from voxnode.asr.wer import wer  # noqa: F401  (other stream tests import it from here)
from voxnode.config import Config
from voxnode.config.audio import AudioConfig
from voxnode.daemon import Daemon, RunOptions
from voxnode.stream.partials import norm

pytestmark = pytest.mark.skipif(not ac.have_espeak(), reason="needs espeak-ng and sox (make deps-test)")

SENT_A = "please open the garage door"
SENT_B = "play some quiet music in the living room and turn the lights down a little"
# Partials need two decodes that agree (stream/partials.py), and a stream spaces them by their own
# decode time (stream.partial_max_share): at load average 7 on the 2-core test machine a partial took
# 1 s instead of 40 ms, the next came 4 s later, and a 2.3 s sentence got none. The tests that check
# partials' content lift that pacing (tests/stream/test_pipeline_paths.py checks the pacing itself) and
# speak long enough (4.6 s) for three such decodes.
UNPACED_TOML = "[stream]\npartial_max_share = 1.0\n"


def unpaced(config: Config) -> Config:
    return dataclasses.replace(config, stream=dataclasses.replace(config.stream, partial_max_share=1.0))


class ListSink:
    def __init__(self):
        self.events = []
        self.lock = threading.Lock()

    def emit(self, event):
        with self.lock:
            self.events.append(event)

    def close(self):
        pass


# The wait after the last audio for the stream to settle (`wait_settled`): each of the 14 runs of
# tests/stream and tests/wake settled 0.10-0.22 s after it (stop 44, load 0.6-1.2); a fixed sleep of
# 1-2 s stood here before. Generous: a loaded machine's last decode may take seconds.
SETTLE_TIMEOUT_S = 20.0


def settled(daemon: Daemon, frames: int, stream: str = "mic") -> tuple[int, int] | None:
    """Whether `stream` has nothing left to do with the first `frames` frames of its audio: its capture
    has read them, its worker has taken everything the capture passed on (a capture relaxed in silence
    keeps its last few frames until its next read, audio/capture_pace.py: they reach the pipeline at
    the stop, with or without a wait), no utterance is open, and every utterance opened has come out
    (a final, suppressed as noise, discarded, lost). Settled: the counts of frames captured and fed."""
    try:
        rt = daemon.streams[stream]
    except KeyError:  # not started yet
        return None
    src, p = rt.source, rt.pipeline
    st = p.stats
    done = st.utterances == st.discarded + st.finals + st.suppressed + st.finals_lost
    if src.stats.frames >= frames and src.ring.depth == 0 and p.idle and done:
        return src.stats.frames, st.frames
    return None


def wait_settled(daemon: Daemon, n_samples: int, stream: str = "mic", timeout: float = SETTLE_TIMEOUT_S) -> None:
    """After the last audio was written: wait until the stream has settled (`settled`, the same twice
    0.1 s apart: a frame's count goes up before it is segmented), at most `timeout` (then the daemon's
    stop ends what is open, and the test's assertions say whether that was enough)."""
    frames = n_samples // ac.FRAME
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        first = settled(daemon, frames, stream)
        if first is not None:
            time.sleep(0.1)
            if settled(daemon, frames, stream) == first:
                return
        time.sleep(0.02)


def run_daemon(alsa_dir, audio, engine, config: Config | None = None, all_events=False):
    """Play `audio` into the FIFO in real time through a Daemon; return its partials and finals
    (every event with `all_events`), the recognition stats and the daemon."""
    config = config or Config()
    config = dataclasses.replace(config, audio=AudioConfig(device="vx_fifo"))
    sink = ListSink()
    writer = FifoWriter(alsa_dir / "mic.fifo", ac.to_pcm16(audio), pace_s=0.02)
    daemon = Daemon(config, [sink], RunOptions(), recognizers=[engine])
    t = threading.Thread(target=daemon.run)
    t.start()
    try:
        assert writer.done.wait(len(audio) / ac.RATE * 3 + 10)
        wait_settled(daemon, len(audio))  # hangover + decode of the last utterance
    finally:
        daemon.request_stop()
        t.join(20)
        writer.close()
    assert not t.is_alive()
    stats = daemon.recognition.stats()
    kinds = ("partial", "final", "wake") if all_events else ("partial", "final")
    return [e for e in sink.events if e["type"] in kinds], stats, daemon


def room_noise(n):
    return ac.at_dbfs(ac.noise("pink", n, seed=5), -60)


def test_speech_silence_speech_gives_two_finals_with_partials_as_prefixes(alsa_dir, engine):
    a = ac.at_dbfs(ac.tts(SENT_A, "en-us"), -24)
    b = ac.at_dbfs(ac.tts(SENT_B, "en-gb"), -28)
    clean = np.concatenate([ac.silence(0.6), a, ac.silence(1.5), b, ac.silence(1.2)])
    audio = clean + room_noise(len(clean))
    events, stats, daemon = run_daemon(alsa_dir, audio, engine, unpaced(Config()))

    finals = [e for e in events if e["type"] == "final"]
    assert len(finals) == 2, events
    assert wer(SENT_A, finals[0]["text"]) <= 0.2, finals[0]
    assert wer(SENT_B, finals[1]["text"]) <= 0.2, finals[1]
    assert finals[0]["id"] != finals[1]["id"]
    assert finals[0]["end"] < finals[1]["start"]  # ISO 8601 UTC strings sort by time
    vad = Config().vad
    # A finished sentence is confirmed after a short hangover (shortest where the end-of-turn model
    # agrees with a sure closing mark), anything else after the ordinary one.
    shortest = min(vad.agreed_end_hangover_ms or vad.hangover_ms, vad.sentence_end_hangover_ms, vad.hangover_ms)
    for f in finals:
        keys = {"type", "stream", "id", "text", "start", "end", "latency_ms", "confidence", "language"}
        assert set(f) == keys | {"speech_snr_db"}, f
        # Speech at -24 and -28 dBFS over pink room noise at -60: ~32-36 dB broadband; the speech band's
        # figure reads a few dB over that in pink noise (docs/frontend.md).
        assert 28.0 <= f["speech_snr_db"] <= 45.0, f
        assert f["language"] == "en"  # tiny.en
        assert f["stream"] == "mic"
        # End of speech -> final: at least the shortest hangover (the endpoint must be confirmed),
        # and not much more than the ordinary one, because the final was decoded speculatively.
        assert shortest - 60 <= f["latency_ms"] <= vad.hangover_ms + 1500, f

    for f in finals:
        partials = [e for e in events if e["type"] == "partial" and e["id"] == f["id"]]
        seq = [[norm(w) for w in p["text"].split()] for p in partials]
        for earlier, later in zip(seq, seq[1:], strict=False):
            assert later[: len(earlier)] == earlier, (earlier, later)  # never contradicts what it showed
            assert len(later) > len(earlier)  # only emitted when it grows
        final_words = [norm(w) for w in f["text"].split()]
        if seq:  # and the final, decoded from the whole utterance, agrees with what was shown
            assert final_words[: len(seq[-1])] == seq[-1], (seq[-1], final_words)
        # Events for one utterance come in order: partials, then its final.
        idx = [i for i, e in enumerate(events) if e["id"] == f["id"]]
        assert events[idx[-1]] is f
    # The 4.6 s second sentence is long enough for at least one partial, even on a loaded machine.
    assert any(e["type"] == "partial" and e["id"] == finals[1]["id"] for e in events), events
    assert stats["scheduler"]["finals_dropped"] == 0
    assert daemon.streams["mic"].source.ring.dropped == 0


def test_noise_only_gives_nothing(alsa_dir, engine):
    n = 6 * ac.RATE
    rng_parts = [
        ac.at_dbfs(ac.noise("hvac", n // 3, seed=1), -35),
        ac.at_dbfs(ac.noise("white", n // 3, seed=2), -45),
        ac.at_dbfs(ac.noise("music", n // 3, seed=3), -35),
    ]
    audio = np.concatenate(rng_parts)
    events, stats, _ = run_daemon(alsa_dir, audio, engine)
    assert events == []

"""How far above the room's noise the talkers reach the microphone (stream/speech_levels.py): the
arithmetic, the one warning each way, and a real recording in pink noise through the real pipeline
(front-end, Silero, segmenter; only the decode scheduler stands in: no transcript is needed)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from scripts.bench import audio_corpus as ac
from scripts.bench import speech_corpus as sc
from voxnode.asr.recognizer import TranscriptResult
from voxnode.config import Config
from voxnode.events import TranscriptEvent
from voxnode.stream.jobs import JobKind, JobOutcome
from voxnode.stream.params import pipeline_params
from voxnode.stream.pipeline import StreamPipeline
from voxnode.stream.speech_levels import LAST, MIN_FRAMES, SpeechLevels

LIBRIVOX = [u for u in sc.pocketsphinx() if u.name.startswith("librivox/")]
needs_speech = pytest.mark.skipif(not LIBRIVOX, reason="needs pocketsphinx-testdata (make deps-test)")


def utterance(levels: SpeechLevels, speech_dbfs: float, floor_dbfs: float, frames: int = 50):
    for _ in range(frames):
        levels.frame(speech_dbfs)
    return levels.ended(floor_dbfs)


def test_the_rooms_noise_is_taken_out_of_the_speech():
    levels = SpeechLevels("kitchen")
    got = utterance(levels, -40.0, -50.0)  # speech + noise 10 dB over the floor: speech alone 9.5 dB over it
    assert got is not None and (got.speech_dbfs, got.snr_db) == (-40.5, 9.5)
    assert utterance(levels, -40.0, -50.0, frames=MIN_FRAMES - 1) is None  # a click: too short to tell
    below = utterance(levels, -50.5, -50.0)  # no louder than the room: as low as it reads, 20 dB under
    assert below is not None and below.snr_db == -20.0
    for _ in range(30):
        levels.frame(-20.0)
    levels.discarded()  # a cough the segmenter dropped leaves nothing behind
    assert utterance(levels, -40.0, -50.0).snr_db == 9.5
    assert levels.snapshot() == {"speech_dbfs": -40.5, "speech_snr_db": 9.5}  # the medians


def test_a_loud_room_is_said_once_each_way_after_ten_utterances(caplog):
    levels = SpeechLevels("hall")
    with caplog.at_level(logging.INFO, logger="voxnode.stream.speech_levels"):
        for _ in range(LAST - 1):
            utterance(levels, -41.0, -45.0)  # +2 dB
        assert caplog.records == []  # too few to judge a room by
        for _ in range(2 * LAST):
            utterance(levels, -41.0, -45.0)
        for _ in range(LAST):
            utterance(levels, -25.0, -45.0)  # the TV off: 20 dB
    said = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert [level for level, _ in said] == ["WARNING", "INFO"], said
    assert said[0][1].startswith("stream hall: speech reaches the microphone at only +2 dB over the room's noise")
    assert "frontend.denoise" in said[0][1]
    assert said[1][1] == "stream hall: speech now reaches the microphone at +20 dB over the room's noise"


class NoDecodes:
    """The decode scheduler's place: jobs are taken and never finished, so every pause ends on the
    ordinary hangover (the levels do not depend on the text)."""

    def submit(self, job):
        pass

    def cancel(self, job):
        pass

    def promote(self, job):
        return False

    def hold_partials(self, stream, hold):
        pass


class FinalsBack(NoDecodes):
    """Keeps the jobs; `finish` brings every final's decode back with a stand-in text (what is checked is
    what the final carries beside its text). A promoted speculation is a final, as in the real one."""

    def __init__(self):
        self.jobs = []

    def submit(self, job):
        self.jobs.append(job)

    def promote(self, job):
        job.kind = JobKind.FINAL
        return True

    def finish(self):
        for job in self.jobs:
            if job.kind == JobKind.FINAL and not job.cancelled:
                job.started, job.finished = 1.0, 1.2
                job.on_done(job, JobOutcome.DONE, TranscriptResult("Read.", [], -0.2, 0.01, 10.0, 20.0, 1.0, "eot"))


def through_the_pipeline(snr_db: float, events: list | None = None) -> dict:
    clip = ac.at_dbfs(LIBRIVOX[0].audio, -26)
    clean = np.concatenate([ac.silence(3.0), clip, ac.silence(2.0), clip, ac.silence(3.0)])
    clean = clean[: len(clean) // ac.FRAME * ac.FRAME]
    x = ac.mix(clean, ac.noise("pink", len(clean), seed=3), snr_db, ac.label_speech(clean))
    pcm = np.clip(np.round(x), -32768, 32767).astype(np.int16)
    sched = NoDecodes() if events is None else FinalsBack()
    emit = (lambda e: None) if events is None else events.append
    pipe = StreamPipeline("desk", pipeline_params(Config()), sched, emit)
    for i in range(len(pcm) // ac.FRAME):
        t = i * ac.FRAME / ac.RATE
        pipe.feed(pcm[i * ac.FRAME : (i + 1) * ac.FRAME], i, t, t)
    pipe.flush()
    if isinstance(sched, FinalsBack):
        sched.finish()
    return pipe.room()


@needs_speech
def test_a_recording_in_pink_noise_reads_its_snr():
    """Measured on 25 utterances (scripts/bench/speech_snr.py): in pink noise the speech-band figure
    reads 4.6 dB (sd 1.4) over the broadband SNR the benchmarks mix at."""
    loud, quiet = through_the_pipeline(20.0), through_the_pipeline(5.0)
    assert 20.0 <= loud["speech_snr_db"] <= 29.0, loud
    assert 5.0 <= quiet["speech_snr_db"] <= 14.0, quiet
    assert abs(loud["speech_dbfs"] - quiet["speech_dbfs"]) <= 3.0, (loud, quiet)  # the same talker
    assert "noise_floor_dbfs" in loud  # beside the room's own figures


@needs_speech
def test_each_final_carries_its_own_utterances_figure():
    """The transcript payload's `speech_snr_db`: each final's, from the same frames the health median is
    taken over; absent on partials."""
    events: list = []
    room = through_the_pipeline(10.0, events)
    finals = [e for e in events if isinstance(e, TranscriptEvent) and e.is_final]
    assert len(finals) == 2, events
    for final in finals:
        assert 10.0 <= final.speech_snr_db <= 19.0, final
        assert final.as_dict()["speech_snr_db"] == final.speech_snr_db
    assert room["speech_snr_db"] == pytest.approx(sum(f.speech_snr_db for f in finals) / 2, abs=0.06)
    partials = [e for e in events if isinstance(e, TranscriptEvent) and not e.is_final]
    assert all("speech_snr_db" not in p.as_dict() for p in partials)

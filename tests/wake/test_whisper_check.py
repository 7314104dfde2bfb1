"""wake.confirm = "whisper" (and "auto", the default, for alexa): the recogniser hears a detected word before it counts.

Real parts: the recordings are ../shared/data/wake/alexa (people saying "alexa", mixed as
scripts/bench/wake.py mixes them) and Asterisk's prompt "dollar sign" (Debian's asterisk-core-sounds-en,
which the alexa detector scores 0.87 at full band, as a room hears it); the detector, front-end, gate,
segmenter and Whisper tiny.en are the real ones. The false word in the pipeline is espeak-ng's "electra"
(en-gb), which the detector takes for alexa at the check's cutoff (this venv's prompts are narrowband, where
"dollar sign" does not fire). The pipeline tests hand the decodes to
tests/stream/test_pipeline_paths.FakeScheduler, which runs each on the real engine when the test says (the
real scheduler's thread would decide when; its order for a check is tested in tests/stream/test_scheduler.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from scripts.bench import audio_corpus as ac
from scripts.bench import speech_corpus as sc
from scripts.bench import wake_audio as wa
from tests.wake.test_confirm import _clip
from tests.wake.test_wake import COMMAND, _offline, speech
from voxnode.asr.recognizer import TranscriptResult
from voxnode.config import Config
from voxnode.config.wake import SHIPPED_CUTOFFS, WakeConfig
from voxnode.stream.jobs import JobKind, JobOutcome
from voxnode.stream.params import wake_params
from voxnode.wake import whisper_check
from voxnode.wake.detector import WakeDetector
from voxnode.wake.models import load_wake_model

FOLDER = wa.default_recordings()
needs_recordings = pytest.mark.skipif(
    FOLDER is None or not (FOLDER / "alexa" / "0.wav").is_file(),
    reason="no real recordings (../shared/data/wake/alexa, see its README)",
)


def _dollar_sign() -> np.ndarray:
    utt = next((u for u in sc.asterisk(0.5, 30.0) if u.name == "asterisk/letters/ascii36"), None)
    if utt is None:
        pytest.skip("no Asterisk prompts (make deps-corpus: asterisk-core-sounds-en)")
    return ac.at_dbfs(utt.audio, -26)


@pytest.fixture(scope="module")
def engine():
    from voxnode.asr import default_model_dir
    from voxnode.asr.whisper.engine import WhisperEngine

    return WhisperEngine.load(default_model_dir(None, "tiny.en"), 1)


def _answering(reply):
    """An `each` for _offline: every check not yet answered gets `reply(job)` -> (result, outcome), as the
    scheduler's thread would report it."""

    def each(pipeline, k):
        for job in pipeline._sched.submitted:
            if job.kind == JobKind.WAKE and not getattr(job, "_ran", False):
                job._ran = True
                pipeline._sched.finish(job, *reply(job))

    return each


def _whisper(engine):
    """A reply: the check decoded by the real engine, as the daemon decodes it (jobs.decode: greedy)."""
    return lambda job: (
        engine.transcribe(job.audio, role="partial", prompt=job.prompt, hotwords=job.hotwords),
        JobOutcome.DONE,
    )


def test_the_default_checks_alexa_only_and_lets_it_fire_lower():
    auto = wake_params(Config(wake=WakeConfig(enabled=True, model="alexa, okay_nabu")), "default")
    assert auto is not None and auto.checked == frozenset({"alexa"})
    assert [m.cutoff for m in auto.models] == [whisper_check.CUTOFF, SHIPPED_CUTOFFS["okay_nabu"]]
    every = wake_params(Config(wake=WakeConfig(enabled=True, model="alexa, okay_nabu", confirm="whisper")), "default")
    assert every is not None and every.checked == frozenset({"alexa", "okay_nabu"})
    assert [m.cutoff for m in every.models] == [whisper_check.CUTOFF, SHIPPED_CUTOFFS["okay_nabu"]]
    off = wake_params(Config(wake=WakeConfig(enabled=True, model="alexa", confirm="")), "default")
    assert off is not None and off.checked == frozenset() and [m.cutoff for m in off.models] == [0.95]
    mine = wake_params(Config(wake=WakeConfig(enabled=True, model="alexa", threshold=0.9)), "default")
    assert mine is not None and mine.checked == frozenset({"alexa"}) and [m.cutoff for m in mine.models] == [0.9]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("Alexa.", True),
        ("Alexa, turn on the lights", True),
        ("alexa's", True),
        ("Lexa", True),
        ("Alex a", True),
        ("Dollar sign.", False),
        ("Are you sorry?", False),
        ("Flexer", False),
        ("", False),
    ],
)
def test_what_counts_as_the_word(text, said):
    assert whisper_check.heard(text, load_wake_model("alexa")) is said


def test_a_several_word_phrase_is_told_by_its_last_word():
    nabu = load_wake_model("okay_nabu")
    assert whisper_check.heard("Okay, Nabu.", nabu) and whisper_check.heard("OK Nabu", nabu)
    assert not whisper_check.heard("Okay, now.", nabu)


@needs_recordings
def test_whisper_hears_a_real_alexa_in_noise_and_not_dollar_sign(engine):
    """0.wav under babble at 5 dB SNR: Whisper writes "Flexer" without the hotword, the word with it; "dollar
    sign", which the detector takes for alexa at full band, stays "dollar sign" with the hotword."""
    pcm, _, _ = _clip("0.wav", "babble", 5.0)  # the bench's trial of the recording, int16
    alexa = load_wake_model("alexa")
    d = WakeDetector((load_wake_model("alexa", threshold=whisper_check.CUTOFF),), 2000)
    at = next(k for k in range(len(pcm) // 320) if d.process(pcm[k * 320 : (k + 1) * 320]) is not None)
    lead, tail = round(whisper_check.LEAD_S / 0.02), round(whisper_check.TAIL_S / 0.02)
    heard = pcm[max(0, at + 1 - lead) * 320 : (at + 1 + tail) * 320].astype(np.float32) / 32768
    plain = engine.transcribe(heard, role="partial", prompt="", hotwords=()).text
    hot = engine.transcribe(heard, role="partial", prompt="", hotwords=whisper_check.hotwords(alexa)).text
    assert not whisper_check.heard(plain, alexa), plain
    assert whisper_check.heard(hot, alexa), hot
    dollar = np.concatenate([ac.silence(1.0), _dollar_sign(), ac.silence(0.3)]).astype(np.float32) / 32768
    text = engine.transcribe(dollar, role="partial", prompt="", hotwords=whisper_check.hotwords(alexa)).text
    assert not whisper_check.heard(text, alexa), text


@needs_recordings
def test_a_word_whisper_does_not_hear_opens_nothing_and_a_command_after_a_real_one_is_kept_whole(engine):
    """The detector fires on "electra" and on a real "alexa"; only the second counts: one Wake word event,
    one final, and the command said 0.3 s after the word is transcribed from its first word though the frames
    after the word waited for the check."""
    word = _clip("10.wav", "pink", 20.0)[0][int(1.5 * ac.RATE) :]
    audio = np.concatenate(
        [
            ac.silence(0.5),
            speech("electra", "en-gb"),
            ac.silence(0.2),
            speech(COMMAND, "en-gb"),
            ac.silence(2.5),
            word[: int(2.2 * ac.RATE)],  # the recording's words end ~1.8-2.0 s into this
            speech(COMMAND),
            ac.silence(1.5),
        ]
    )
    pipeline, sched, events = _offline(
        audio, '[wake]\nenabled = true\nmodel = "alexa"\n', each=_answering(_whisper(engine))
    )
    checks = [j for j in sched.submitted if j.kind == JobKind.WAKE]
    assert len(checks) == 2 and all(j.hotwords == ("Alexa",) and j.prompt == "" for j in checks)
    assert [e.as_dict()["wake_word"] for e in events] == ["alexa"]
    assert pipeline.stats.wakes == 1 and pipeline.stats.wakes_rejected == 1 and pipeline.stats.wakes_unchecked == 0
    finals = [j for j in sched.submitted if j.kind == JobKind.FINAL]
    assert len(finals) == 1
    text = engine.transcribe(finals[0].audio).text
    assert "turn on the kitchen" in text.lower(), text


def test_a_check_the_engine_fails_lets_the_word_count():
    """Fail open: an engine error (or a check skipped at shutdown) costs no command."""
    audio = np.concatenate([ac.silence(0.5), speech("alexa"), ac.silence(0.4), speech(COMMAND), ac.silence(1.5)])
    failed = _answering(lambda job: (RuntimeError("engine exploded"), JobOutcome.FAILED))
    pipeline, sched, events = _offline(audio, '[wake]\nenabled = true\nmodel = "alexa"\n', each=failed)
    assert [e.as_dict()["type"] for e in events] == ["wake"]
    assert pipeline.stats.wakes == 1 and pipeline.stats.wakes_unchecked == 1
    assert len([j for j in sched.submitted if j.kind == JobKind.FINAL]) == 1


def test_a_check_answered_no_drops_what_was_held():
    audio = np.concatenate([ac.silence(0.5), speech("alexa"), ac.silence(0.4), speech(COMMAND), ac.silence(1.5)])
    said = TranscriptResult("Are you sorry?", [], -0.3, 0.01, 1.0, 1.0, 2.3, "eot")
    no = _answering(lambda job: (said, JobOutcome.DONE))
    pipeline, sched, events = _offline(audio, '[wake]\nenabled = true\nmodel = "alexa"\n', each=no)
    assert events == [] and pipeline.stats.wakes == 0 and pipeline.stats.wakes_rejected == 1
    assert [j.kind for j in sched.submitted] == [JobKind.WAKE]  # nothing of the command was decoded
    assert not pipeline.wake.open


def test_a_check_not_answered_in_time_lets_the_word_count(monkeypatch, caplog):
    """An engine too busy to answer within MAX_WAIT_S (here 0: at the first frame after the check went out)
    costs no command: the word counts, said in the log, and the command held meanwhile is transcribed."""
    monkeypatch.setattr(whisper_check, "MAX_WAIT_S", 0.0)
    audio = np.concatenate([ac.silence(0.5), speech("alexa"), ac.silence(0.4), speech(COMMAND), ac.silence(1.5)])
    with caplog.at_level("WARNING", logger="voxnode.stream.wake_check"):
        pipeline, sched, events = _offline(audio, '[wake]\nenabled = true\nmodel = "alexa"\n')
    assert [e.as_dict()["type"] for e in events] == ["wake"]
    assert pipeline.stats.wakes == 1 and pipeline.stats.wakes_unchecked == 1
    assert [j.kind for j in sched.submitted].count(JobKind.FINAL) == 1
    assert "was not answered in 0.0 s: it counts unchecked" in caplog.text


def test_at_the_end_of_a_file_a_word_still_waiting_is_checked_with_what_there_is(engine):
    """A file that ends 60 ms after the word (the check's tail not yet heard): the check goes out at the
    end with the audio there is, and is waited for."""
    clip, _, _ = _clip("10.wav", "pink", 20.0)
    d = WakeDetector((load_wake_model("alexa", threshold=whisper_check.CUTOFF),), 2000)
    at = next(k for k in range(len(clip) // 320) if d.process(clip[k * 320 : (k + 1) * 320]) is not None)
    short = clip[: (at + 4) * 320]
    pipeline, sched, events = _offline(
        short,
        '[wake]\nenabled = true\nmodel = "alexa"\n',
        before=lambda p: setattr(p.check, "_submit", _running(engine, p._sched)),
    )
    assert [j.kind for j in sched.submitted] == [JobKind.WAKE]
    assert len(sched.submitted[0].audio) < (whisper_check.LEAD_S + whisper_check.TAIL_S) * ac.RATE
    assert [e.as_dict()["type"] for e in events] == ["wake"] and pipeline.stats.wakes_unchecked == 0


def _running(engine, sched):
    """The scheduler's submit, decoding a check on the real engine at once on a thread of its own (as the
    decode thread would, while the stream's thread waits at its end)."""
    import threading

    submit = sched.submit

    def run(job):
        submit(job)
        if job.kind == JobKind.WAKE:
            result = engine.transcribe(job.audio, role="partial", prompt=job.prompt, hotwords=job.hotwords)
            threading.Thread(target=sched.finish, args=(job, result)).start()

    return run

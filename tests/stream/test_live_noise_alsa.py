"""Continuous background noise, end to end through real ALSA (issue 9).

Three real recordings (pocketsphinx-testdata's LibriVox reader) with 2 s pauses, noise at
10 dB SNR running all the time (3 s before the first sentence, through the pauses and after),
played in real time into the `vx_fifo` PCM, through the daemon with the real Whisper engine.
The same engine on each sentence cut from the same noisy audio is the yardstick: live
segmentation must not lose many more words than perfect segmentation does (issue 9's targets:
live WER <= 1.15 x that + 1 point for pink noise, <= 1.3 x + 2 points for babble).
Pink noise passes today. Babble (6 espeak-ng voices saying other sentences) does not: the
WebRTC VAD hears the babble as speech, so utterances do not end at the pauses; those
assertions are strict xfails that flip when segmentation copes (issue 9 items 2-4).
The full measurement over many noises and levels is scripts/bench/live_noise.py.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from scripts.bench import audio_corpus as ac
from tests.stream.test_pipeline_alsa import run_daemon
from voxnode.asr.wer import word_errors
from voxnode.config import Config

CLIPS = (
    "librivox-sense_and_sensibility_01_austen_64kb-0880",
    "librivox-sense_and_sensibility_01_austen_64kb-0930",
    "librivox-sense_and_sensibility_01_austen_64kb-0890",
)
SPEECH_DBFS, SNR_DB, PAUSE_S, LEAD_S, TAIL_S = -26.0, 10.0, 2.0, 3.0, 2.5
# Issue 9's targets: live WER <= A x transcribe WER + B, and the words of slack the test allows beyond
# them (with 30 words one word is 3.3 points; babble's limit with one word: 9.4 against 6 on the cuts).
# Stop 44 widened babble's to two: the same recording gave 9 live word errors in most runs and 10 in some
# (2 of 14 at load 0.7-1.4; 2 of 7 on the code before). The cause, traced decode by decode (stop 45): every
# run cut the same utterances at the same frames, and the third sentence's final was the same pause's
# speculative decode of the same audio; what differed was its draft ([asr] draft), the tokens of whichever
# partial had come back last (the machine's load decides), of which the final's beam took the head greedy
# decoding agreed with: "Unless ... cold-hard" (10 errors) or the whole beam's "unless ... cold-hearted" (9).
# Since a final's beam takes only the draft tokens greedy decoding is sure of (`asr.draft_margin`,
# docs/asr.md "Drafts"), one word of slack again: 9 errors in 28 of 28 runs (12 by helper draftgate at load
# 0.3-2.5; 16 by the lead with this limit, 6 quiet, 6 beside one busy core, 4 beside two). Merged sentences
# (11 errors before the noise gate) fail.
TARGETS = {"pink": (1.15, 0.01, 1), "babble": (1.3, 0.02, 1)}
# Before the noise gate (main at 683a7ad, webrtc VAD): 3 sentences, 30 words; babble at 10 dB gave
# 2 finals (the first two sentences and half the third in one), 11 word errors live vs 6 on the cuts.


def speech_level_dbfs(x: np.ndarray) -> float:
    lab = ac.label_speech(x)
    f = x[: len(lab) * ac.FRAME].reshape(len(lab), ac.FRAME).astype(np.float64)
    return 10 * np.log10(np.mean(f[lab] ** 2) / 32768.0**2)


def noisy_session(kind: str = "pink", clips: tuple[str, ...] = CLIPS):
    by_name = {c.name: c for c in ac.recorded_clips()}
    if not all(n in by_name for n in clips):
        pytest.skip("needs pocketsphinx-testdata (make deps-test)")
    parts, spans, refs = [ac.silence(LEAD_S)], [], []
    pos = len(parts[0])
    for name in clips:
        x = by_name[name].audio
        x = (x * 10 ** ((SPEECH_DBFS - speech_level_dbfs(x)) / 20)).astype(np.float32)
        parts += [x, ac.silence(PAUSE_S)]
        spans.append((pos, pos + len(x)))
        refs.append(by_name[name].text)
        pos += len(x) + int(PAUSE_S * ac.RATE)
    parts.append(ac.silence(TAIL_S))
    clean = np.concatenate(parts)
    noise = ac.at_dbfs(ac.noise(kind, len(clean), seed=11), SPEECH_DBFS - SNR_DB)
    return np.clip(clean + noise, -32768, 32767).astype(np.float32), spans, refs


_sessions: dict = {}


def session(kind, alsa_dir, engine):
    """One real-time run per noise kind, shared by that kind's tests."""
    if kind not in _sessions:
        if kind == "babble" and not ac.have_espeak():
            pytest.skip("babble needs espeak-ng and sox (make deps-test)")
        audio, spans, refs = noisy_session(kind)
        events, _, daemon = run_daemon(alsa_dir, audio, engine)
        cuts = [engine.transcribe(audio[max(0, a - 4000) : b + 4000] / 32768.0).text for a, b in spans]
        _sessions[kind] = (refs, [e for e in events if e["type"] == "final"], cuts, daemon)
    return _sessions[kind]


@pytest.fixture(scope="module")
def alsa_dir():
    from tests.alsa_env import ALSA_DIR

    return ALSA_DIR


@pytest.mark.parametrize("kind", ["pink", "babble"])
def test_no_frame_lost_in_continuous_noise(kind, alsa_dir, engine):
    _, _, _, daemon = session(kind, alsa_dir, engine)
    assert daemon.streams["mic"].source.ring.dropped == 0


@pytest.mark.parametrize("kind", ["pink", "babble"])
def test_live_words_close_to_perfect_segmentation(kind, alsa_dir, engine):
    refs, finals, cuts, _ = session(kind, alsa_dir, engine)
    live_err, words = word_errors(" ".join(refs), " ".join(f["text"] for f in finals))
    cut_err, _ = word_errors(" ".join(refs), " ".join(cuts))
    a, b, slack_words = TARGETS[kind]
    assert live_err / words <= a * cut_err / words + b + slack_words / words, ([f["text"] for f in finals], cuts)


@pytest.mark.parametrize("kind", ["pink", "babble"])
def test_one_final_per_sentence_in_continuous_noise(kind, alsa_dir, engine):
    refs, finals, _, _ = session(kind, alsa_dir, engine)
    assert len(finals) == len(refs), [f["text"] for f in finals]


# Two sentences Whisper closes with a sure full stop and Smart Turn hears finished, whole, in pink noise
# at 10 dB (scripts/bench/endpoint_verdicts.py --turn-model litert --noise pink: mark p 0.92 / 0.92,
# model 0.99 / 0.99; clean 0.93 / 0.90, 0.99 / 0.99).
AGREED_CLIPS = (
    "librivox-sense_and_sensibility_01_austen_64kb-0870",
    "librivox-sense_and_sensibility_01_austen_64kb-0920",
)


# The rules decide only on evidence that is in before a hangover runs out: the speculative decode (asked
# at vad.tail_ms) before the plain hangover (700 ms by default), the end-of-turn model's answer before the
# mark's (240 ms). On an idle machine both take 30-250 ms; at load ~5 on 2 cores (stop 43) the test failed
# 3 times in ~40 runs with the defaults or the mark's alone raised: the model took 255-593 ms a call, the
# decode 601-668 ms (a 6x slower encoder), so the pauses ended by the mark alone or by the plain hangover
# before any verdict. These hangovers keep the race out of the test and are still under the 2 s pauses
# (PAUSE_S), so the sentences are not merged either way; agreed_end's own hangover stays the default.
RACE_FREE_HANGOVERS_MS = {"sentence_end_hangover_ms": 1200, "hangover_ms": 1500, "open_hangover_ms": 1500}


def test_sentences_the_model_hears_finished_end_on_the_agreed_hangover(alsa_dir, engine):
    """The mark alone waits vad.sentence_end_hangover_ms; with the end-of-turn model agreeing the pause
    ends after vad.agreed_end_hangover_ms (stream/end_rules.py agreed_end). The hangovers are made
    long enough here that the decode and the model's answer are always in before they run out, so a pause
    ended by the mark alone means agreed_end did not decide; at least one of the two pauses must be ended by it (both
    were in every run here); no timing is asserted."""
    audio, _, refs = noisy_session("pink", AGREED_CLIPS)
    base = Config()
    vad = dataclasses.replace(base.vad, **RACE_FREE_HANGOVERS_MS)
    events, _, daemon = run_daemon(alsa_dir, audio, engine, dataclasses.replace(base, vad=vad))
    finals = [e["text"] for e in events if e["type"] == "final"]
    st = daemon.streams["mic"].pipeline.stats
    assert len(finals) == len(refs), finals
    assert 1 <= st.endpoints_agreed <= st.endpoints_sentence_end, (
        st.endpoints_agreed,
        st.endpoints_sentence_end,
        finals,
    )

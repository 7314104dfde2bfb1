"""While the node plays (issue 24, stream/playback.py): nothing it hears is taken without the wake
word, the wake word is still heard over it (barge-in), and an open follow-up window waits for the
playback to end. Here the `playing` input is set as MQTT sets it (tests/mqtt/test_playing.py covers
the topic); the node's own voice reaches the microphone without an echo canceller.

The spoken words are espeak-ng's; the detector, front-end, gate and segmenter are the real ones.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.wake.test_follow_up import utterances_decoded
from tests.wake.test_wake import AFTER, BEFORE, COMMAND, WAKE, _offline, ac, speech

pytestmark = pytest.mark.skipif(not ac.have_espeak(), reason="needs espeak-ng and sox (make deps-test)")


def frames(x: np.ndarray) -> int:
    return len(x) // 320


def test_an_open_follow_up_window_waits_while_the_node_plays_its_answer():
    """Wake word, command; the node answers (AFTER, its own voice, while `playing`); the user
    replies 1 s after the answer: the reply is the follow-up, the answer is not transcribed."""
    head = np.concatenate([ac.silence(0.5), speech(WAKE, speed=150), ac.silence(0.6), speech(COMMAND)])
    answer = np.concatenate([ac.silence(1.0), speech(AFTER, "en-gb")])
    reply = np.concatenate([ac.silence(1.0), speech(BEFORE), ac.silence(1.0)])
    audio = np.concatenate([head, answer, reply])
    on_at, off_at = frames(head) + 10, frames(head) + frames(answer) + 15  # 0.3 s of room tail

    def playing(p, k):
        p.playback.input = on_at <= k < off_at

    config = "[wake]\nenabled = true\nfollow_up_s = 2.5\n"
    pipeline, sched, events = _offline(audio, config, each=playing)
    assert utterances_decoded(sched) == [0, 1], [(j.kind, j.tag) for j in sched.submitted]
    reply_job = [j for j in sched.submitted if j.tag[0] == 1][-1]
    assert len(reply_job.audio) < len(speech(BEFORE)) + 2 * 16000  # the reply alone, not the answer with it
    assert pipeline.playback.held > frames(answer) // 2
    # Without the input, the answer itself is taken as the follow-up (and the reply as the next one).
    _, sched, _ = _offline(audio, config)
    assert utterances_decoded(sched) == [0, 1, 2]


def test_the_wake_word_is_heard_while_the_node_plays():
    audio = np.concatenate(
        [ac.silence(0.5), speech(WAKE, speed=150), ac.silence(0.6), speech(COMMAND), ac.silence(1.0)]
    )
    pipeline, sched, events = _offline(
        audio, "[wake]\nenabled = true\n", before=lambda p: setattr(p.playback, "input", True)
    )
    assert [e.as_dict()["type"] for e in events] == ["wake"]  # barge-in
    assert utterances_decoded(sched) == [0]
    assert pipeline.playback.frames == frames(audio)


def no_wake(audio: np.ndarray, playing_until: int):
    """The real front-end and segmenter of a stream without a wake word; `playing` for the first
    `playing_until` frames."""
    from tests.stream.test_pipeline_paths import FakeScheduler
    from voxnode.config import Config
    from voxnode.stream.params import pipeline_params
    from voxnode.stream.pipeline import StreamPipeline

    sched = FakeScheduler()
    pipeline = StreamPipeline("mic", pipeline_params(Config()), sched, lambda e: None)
    pcm = np.clip(np.round(audio), -32768, 32767).astype(np.int16)
    for k in range(len(pcm) // 320):
        pipeline.playback.input = k < playing_until
        pipeline.feed(pcm[k * 320 : (k + 1) * 320], k, k * 0.02, 1_700_000_000.0 + k * 0.02)
    pipeline.flush()
    return pipeline, sched


def test_without_wake_word_or_echo_canceller_nothing_is_taken_while_the_node_plays():
    command = np.concatenate([ac.silence(0.5), speech(COMMAND), ac.silence(1.0)])
    audio = np.concatenate([command, command])
    pipeline, sched = no_wake(audio, playing_until=frames(audio))
    assert utterances_decoded(sched) == []
    assert pipeline.playback.held > 0
    _, sched = no_wake(audio, playing_until=frames(command))
    assert utterances_decoded(sched) == [0]  # the second command, said after the playback stopped


def test_the_wake_word_is_heard_over_the_nodes_own_music_with_an_echo_reference():
    """Barge-in over music at 0 dB through a room path: the detector hears SpeexDSP's output, the VAD
    AEC3's (frontend/chain.py); the command after the word is decoded."""
    from scripts.bench import echo_audio as ea
    from scripts.bench import speech_corpus as sc
    from tests.stream.test_pipeline_paths import FakeScheduler
    from voxnode.config import parse_config
    from voxnode.stream.params import pipeline_params, wake_params
    from voxnode.stream.pipeline import StreamPipeline
    from voxnode.stream.wake_gate import WakeGate

    lead = ac.silence(4.0)  # the music alone first: the cancellers converge
    near = np.concatenate([lead, speech(WAKE, speed=150), ac.silence(0.6), speech(COMMAND), ac.silence(1.5)])
    music = np.concatenate([x for _, x in sc.music_tracks()])[: len(near)].astype(np.float32)
    echo = ea.echo_at(music, ea.room_response(90.0, seed=4), ea.active_power(speech(WAKE, speed=150)), 0.0)
    config = parse_config('[audio]\necho_reference = "ref"\n[wake]\nenabled = true\n')
    sched, events = FakeScheduler(), []
    pipeline = StreamPipeline(
        "mic", pipeline_params(config, "mic"), sched, events.append, wake=WakeGate(wake_params(config, "mic"))
    )
    mic = np.clip(np.round(near + echo), -32768, 32767).astype(np.int16)
    ref = np.clip(np.round(music), -32768, 32767).astype(np.int16)
    for k in range(len(mic) // 320):
        s = slice(k * 320, (k + 1) * 320)
        pipeline.feed(mic[s], k, k * 0.02, 1_700_000_000.0 + k * 0.02, ref[s])
    pipeline.flush()
    assert [e.as_dict()["type"] for e in events] == ["wake"]
    assert utterances_decoded(sched) == [0]
    assert pipeline.playback.frames > 0.8 * len(mic) / 320  # the reference said the node was playing

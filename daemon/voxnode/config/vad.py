"""[vad]: which frames are speech, and where an utterance starts and ends."""

from dataclasses import dataclass

from voxnode.config.fields import InvalidValue, setting

# vad.engine -> (module, class) of the VAD that implements it (frontend/vad.py FrameVad, imported only
# when chosen: Silero loads LiteRT, WebRTC's needs webrtcvad-wheels): the one list of VAD names. A VAD
# reads its own settings below (`from_config`); adding one is its module, its settings and a line here.
VADS: dict[str, tuple[str, str]] = {
    "webrtc": ("voxnode.frontend.vad", "WebRtcVad"),
    "spectral": ("voxnode.frontend.vad", "SpectralVad"),
    "both": ("voxnode.frontend.vad", "BothVad"),
    "silero": ("voxnode.frontend.silero_vad", "SileroVad"),
}


@dataclass(frozen=True)
class VadConfig:
    # silero by default: with the noise gate and sentence-aware endpoints both VADs reach the same
    # live WER and latency in white/pink/HVAC/babble-10 (scripts/bench/sim_live.py), silero is ahead at
    # babble 5 dB (p95 786 vs 967 ms), never triggers on music (WebRTC: 300-920/h) and does not
    # depend on the input level; it costs +0.3-0.6 % of a core per stream (docs/frontend.md).
    engine: str = setting(
        "silero",
        'Frame classifier: "webrtc" (WebRTC GMM), "spectral" (numpy likelihood ratio, no extra package), '
        '"both" (speech where both agree) or "silero" (Silero VAD v6, a small neural network on LiteRT: '
        "keeps finding speech in loud steady noise and ignores music, but hears background talk as speech; "
        "+0.3-0.6 % of a core per stream). "
        "See docs/frontend.md for the measurements.",
        choices=tuple(VADS),
    )
    threshold: float = setting(
        1.0,
        "spectral: band-mean log-likelihood ratio above which a frame is speech (noise alone: 0.58).",
        min=0.6,
        max=20.0,
    )
    aggressiveness: int = setting(3, "webrtc: 0 (lenient) .. 3 (strict).", min=0, max=3)
    silero_threshold: float = setting(
        0.5,
        "silero: speech probability (0..1) at or above which a frame is speech. 0.5 had the best F1 in "
        "noise; lower hears more speech under loud music and more noise as speech.",
        min=0.2,
        max=0.9,
    )
    min_level_dbfs: float = setting(
        -62.0, "spectral, both: frames quieter than this (speech band) are never speech.", min=-100.0, max=-10.0
    )
    noise_gate: bool = setting(
        True,
        "Speech must also stand above the room's noise floor (tracked per stream, reported in health): an "
        "utterance ends when the level falls back to the floor even if the VAD still hears voices (TV, other "
        "talkers), and loud steady noise never starts one. See docs/frontend.md.",
    )
    floor_margin_db: float = setting(
        2.0,
        "noise_gate: how far (dB) the last 200 ms must stand above the floor, plus floor_spread_factor times "
        "the room's own fluctuation.",
        min=0.0,
        max=30.0,
    )
    # 1.6. 2.0 was tried (scripts/bench/live_noise.py, babble 10 dB: 1.6 let 4 of 25 utterances hang
    # on 0.5-1.4 s on background talk, p95 1838 ms; 2.0: p95 709 ms at live WER 25.1 %, limit 28.9)
    # and dropped: it lowered Silero's speech recall on clean recordings to 0.79, split a sentence
    # and lost words under babble in tests/stream/test_live_noise_alsa.py, and let a click after a
    # wake word open an utterance (tests/wake). 2.5 cut into the speech (31.2 %, 1.36 finals/utt).
    floor_spread_factor: float = setting(
        1.6,
        "noise_gate: extra margin per dB of the room's fluctuation (20th minus 5th percentile of its level): "
        "steady fan noise needs a voice a little above it, babble one clearly above its peaks.",
        min=0.0,
        max=10.0,
    )
    floor_window_ms: int = setting(
        10000,
        "noise_gate: how far back the floor looks (the 20th percentile of the level over this window).",
        min=2000,
        max=60000,
    )
    pre_roll_ms: int = setting(
        300, "Audio kept before the detected onset, so first syllables are not clipped.", min=0, max=2000
    )
    onset_ms: int = setting(60, "Speech needed within onset_window_ms to start an utterance.", min=20, max=1000)
    onset_window_ms: int = setting(100, "Window for onset_ms.", min=20, max=2000)
    # 700: the speculative decode often cannot tell (no closing mark, or a hesitant one), and a
    # speaker pausing mid-sentence for up to ~700 ms should still get one final. Measured with
    # scripts/bench/sim_live.py (clean, one 700 ms pause inside each sentence, sentence-aware endpoints):
    # 650 ms -> 1.64 finals per utterance, 700 and 750 ms -> 1.32 (the splits left are fragments
    # the decoder closed with a sure full stop). 750 put the finals it decides 760-820 ms after the
    # speech (the VAD's end lags the speech by 15-70 ms): over the 800 ms p95 target.
    hangover_ms: int = setting(
        700,
        "Silence after the last speech that ends an utterance (endpoint) when the speculative decode has not "
        "(or not surely) ended a sentence.",
        min=100,
        max=5000,
    )
    # 240 with tail_ms 100: a finished sentence is final max(tail + decode, 240 ms) after the speech;
    # a pause mid-sentence must outlast 240 ms *and* be judged finished to split it. (Set as 250 until
    # stop 36, which ran as 240 ms: 12 frames, rounded to nearest; durations now round up, so the
    # default says what was measured: live finals 241-345 ms after the VAD's end, docs/benchmarks.md.) Measured with
    # scripts/bench/sim_live.py (clean / pink 10 dB / babble 10 dB / one 450 ms pause inside each sentence;
    # sentence_end_min_prob 0.6 then):
    #   tail 200, 200: p50 355 / 365 / 252 ms, finals per utterance 1.0 / 1.0 / 1.08 / 1.24
    #   tail 100, 200: p50 286 / 238 / 172 ms,                     1.04 / 1.12 / 1.2 / 1.24
    #   tail 100, 300: p50 337 / 284 / 250 ms,                     1.0 / 1.0 / 1.12 / 1.2
    # Live with min_prob 0.8 (scripts/bench/live_noise.py, clean): 300 ms held 12 of 25 finals the
    # decode had ready sooner (published at 300-302 ms); the live inner pauses are 300-700 ms, so
    # 240 splits no more of them than 300.
    sentence_end_hangover_ms: int = setting(
        240,
        "Sentence-aware endpoint: once the speculative decode at tail_ms ends a sentence (a closing mark the "
        "decoder gave at least sentence_end_min_prob, decoder finished on its own), the pause ends after this "
        "much silence instead of hangover_ms.",
        min=20,
        max=5000,
    )
    # 0.8 (was a fixed 0.6): cut at a mid-sentence pause, 9 of 16 fragments got a closing mark with
    # p >= 0.6 against 18 of 25 whole utterances; at 0.8: 3 of 16 against 15 of 25 (the live-noise
    # corpus with a 100 ms tail, scripts/bench/endpoint_verdicts.py). Live, 0.6 split 8 of 22 sentences
    # with 300-700 ms pauses (1.32 finals per utterance, tail_ms 100). 0.75 live: 2 more of 25
    # sentences with a pause split (1.24 finals per utterance) for 1-2 more quick finals.
    sentence_end_min_prob: float = setting(
        0.8,
        "Sentence-aware endpoint: the decoder's probability of the closing '.', '?' or '!' needed to call "
        "the sentence finished (lower: faster finals, more sentences split at a pause).",
        min=0.0,
        max=1.0,
    )
    # smart-turn: measured below (end_of_turn_min_prob) and live in docs/benchmarks.md ("End-of-turn model").
    end_of_turn: str = setting(
        "smart-turn",
        'Sentence-aware endpoint: "smart-turn" also asks an end-of-turn model (Pipecat\'s Smart Turn v3.2, '
        "BSD-2-Clause, 8.7 MB, on LiteRT: 30-100 ms per pause on its own thread on x86) whether the speaker "
        "sounds finished: it decides where the speculative decode's text cannot tell (no sure closing mark), and "
        "where the text ends a sentence its agreement shortens the pause (agreed_end_hangover_ms); not asked "
        'while its answers come after hangover_ms (a slow board); "off": the text decides alone.',
        choices=("smart-turn", "off"),
    )
    # 0.9. Whole utterances / the same cut at a mid-sentence pause (25 / 17, 100 ms tail) called
    # finished, python -m scripts.bench.endpoint_verdicts --turn-model litert:
    #                         clean     pink 10 dB   babble 10 dB
    #   closing mark p >= 0.8   12 / 3    13 / 2       2 / 1
    #   ... or turn >= 0.9      23 / 5    22 / 6       17 / 3
    end_of_turn_min_prob: float = setting(
        0.9,
        "Sentence-aware endpoint: the end-of-turn model's probability that the speaker has finished which "
        "calls the sentence finished when the text has no sure closing mark (and does not end on 'and', a "
        "comma ...). Lower: faster finals, more sentences split at a pause.",
        min=0.0,
        max=1.0,
    )
    # 160 (issue 23, stop 38). On x86 and a Pi 5 the speculative final is back ~140 ms after the speech,
    # so the 240 ms above set p50. Both agreeing marks few fragments (whole / cut at a mid-sentence
    # pause, scripts/bench/endpoint_verdicts.py: mark p >= 0.8 and model >= 0.9 clean 12 / 3, pink 10 dB
    # 9 / 2, babble 10 dB 0 / 1), and every pause it ends sooner is one the mark (240 ms) would end too:
    # only pauses shorter than 240 ms split more. scripts/bench/sim_live.py --track (live_noise's
    # recordings, simulated time, x86 CPU times), sentences p50 / p95 ms, finals per utterance:
    #             clean             pink 10 dB        babble 10 dB     pauses (300-700 ms inside)
    #   off       281 / 605, 1.04   210 / 635, 1.12   200 / 819, 1.08  268 / 705, 1.16
    #   120       174 / 604, 1.08   127 / 635, 1.12   195 / 815, 1.08  186 / 705, 1.16
    #   160       208 / 604, 1.08   151 / 635, 1.12   195 / 791, 1.08  196 / 705, 1.16
    #   200       248 / 604, 1.08   171 / 635, 1.12   195 / 845, 1.08  231 / 705, 1.16
    # The one split more (clean, at any of these): "Please enter a new extension, [~200 ms] followed by
    # pound." (same words). Pi 5-like decode and model times (x2.3 / x3.8): clean 285 -> 238 ms.
    agreed_end_hangover_ms: int = setting(
        160,
        "Sentence-aware endpoint: where the speculative decode ends a sentence with a sure closing mark "
        "(sentence_end_min_prob) and the end-of-turn model also hears the speaker finished "
        "(agreed_end_min_prob), the pause ends after this much silence instead of sentence_end_hangover_ms "
        "(0 = off; needs end_of_turn). Lower: faster finals, more sentences split at a short pause.",
        min=0,
        max=5000,
    )
    agreed_end_min_prob: float = setting(
        0.9,
        "Sentence-aware endpoint: the end-of-turn model's probability that the speaker has finished which, "
        "with a sure closing mark, ends the pause after agreed_end_hangover_ms.",
        min=0.0,
        max=1.0,
    )
    open_hangover_ms: int = setting(
        1000,
        "Sentence-aware endpoint: when the speculative decode ends mid-sentence (a comma, 'and', 'for', 'the' "
        "at the end), the pause must last this long: a speaker thinking mid-sentence gets one final.",
        min=100,
        max=10000,
    )
    # 100 (was 200): the speculative decode starts 100 ms sooner; the 100 ms of silence kept after
    # the VAD's end of speech (which lies ~5 ms after the true end at the median, 60 ms at p95,
    # scripts/bench/live_noise.py) changed no word in scripts/bench/sim_live.py (see sentence_end_hangover_ms).
    tail_ms: int = setting(
        100,
        "Silence kept after the last speech; once this much silence is seen the final is decoded ahead of "
        "the endpoint, so it is ready when hangover_ms confirms it.",
        min=20,
        max=2000,
    )
    # Issue 23: the pause's speculative decode may start before tail_ms, at the first silence after
    # speech; when no speech follows until tail_ms its result is the pause's, so the final is ready
    # tail_ms - speculate_ms sooner where the decode, not the hangover, sets the latency (a Pi 4). It
    # decodes the audio up to speculate_ms after the VAD's end of speech, zero-padded, instead of
    # tail_ms after it, and in noise the VAD's end lies ~100 ms *before* the true end at the median
    # (pink 10 dB): the word's last sounds are cut. Measured live (scripts/bench/live_noise.py, 25
    # utterances, x86, back to back; docs/benchmarks.md "Per-board figures"): 40 ms, clean WER 5.4 ->
    # 5.4 %, pink 10 dB 6.9 -> 9.8 % (tail_ms 60 earlier: 6.4 -> 8.3 %). So off by default. On an emulated
    # Pi 4 (4 threads, stop 39) it made the final later, not sooner: clean sentences p50 426-436 -> 506 ms
    # (every 40 ms gap between words starts an early decode that holds partials off and is cancelled by
    # the next word, so the final's draft is staler: its decoder 176 -> 223 ms at the median).
    speculate_ms: int = setting(
        0,
        "Silence after the last speech at which the pause's speculative decode starts, if sooner than "
        "tail_ms (0 = at tail_ms); its result stands if no speech follows before tail_ms. Finals come "
        "tail_ms - speculate_ms sooner on a slow board; in noise the last word's end may be cut "
        "(docs/benchmarks.md).",
        min=0,
        max=2000,
    )
    min_speech_ms: int = setting(
        240, "Utterances with less speech than this are discarded (clicks, coughs, door slams).", min=20, max=5000
    )

    def check(self) -> None:
        if self.onset_ms > self.onset_window_ms:
            raise InvalidValue("onset_ms", f"must not exceed onset_window_ms ({self.onset_window_ms})")
        if self.speculate_ms and self.speculate_ms > self.tail_ms:
            raise InvalidValue("speculate_ms", f"must not exceed tail_ms ({self.tail_ms})")
        if self.tail_ms > self.hangover_ms:
            raise InvalidValue("tail_ms", f"must not exceed hangover_ms ({self.hangover_ms})")
        if self.agreed_end_hangover_ms > self.sentence_end_hangover_ms:
            raise InvalidValue(
                "agreed_end_hangover_ms", f"must not exceed sentence_end_hangover_ms ({self.sentence_end_hangover_ms})"
            )
        if self.open_hangover_ms < self.hangover_ms:
            raise InvalidValue("open_hangover_ms", f"must not be shorter than hangover_ms ({self.hangover_ms})")

"""[asr]: the speech model and how it decodes."""

from dataclasses import dataclass

from voxnode.config.fields import InvalidValue, setting

ENGINES = ("whisper-litert",)  # asr/backends.py maps each to its module


@dataclass(frozen=True)
class AsrConfig:
    engine: str = setting(
        "whisper-litert", "Recognition backend: Whisper tiny.en on LiteRT with XNNPACK (docs/asr.md).", choices=ENGINES
    )
    model_dir: str = setting("", 'Folder of the converted model; "" = the bundled models/whisper-tiny.en.')
    num_threads: int = setting(0, "Inference threads; 0 = half the CPU cores, at least 1.", min=0, max=64)
    # Finals' defaults, chosen for live latency (end of speech -> final p95 <= 800 ms with the hangover,
    # so a final of an utterance < 8 s should decode in a median ~150-200 ms on a 2-core x86) and for WER
    # (docs/benchmarks.md, "ASR beam size" and "ASR decode time per final"; 50 real utterances, clean /
    # babble 10 dB; final wall ms median with 2 threads, machine shared, load ~4-5):
    #   greedy, 6 s: 7.3 / 27.8 %, 208 ms     beam 3, 6 s: 4.4 / 22.0 %, 225 ms
    #   beam 2, 6 s: 5.6 / 22.0 %, 212 ms     beam 5, 6 s: 4.1 / 22.0 %, 244 ms
    #   beam 5, 10 s (the earlier default): 3.4 / 22.0 %, 291 ms (the 10 s window doubles the encode)
    # Beam 3 in 6 s keeps most of beam 5's gain over greedy at +8 % time instead of +40 %.
    beam_size: int = setting(3, "Beam width for finals (1 = greedy); partials are always greedy.", min=1, max=8)
    min_window_s: float = setting(
        6.0,
        "Shortest encoder window for finals, seconds (audio is zero-padded up to it); partials use 6.",
        min=6.0,
        max=30.0,
    )
    fallback_temperatures: tuple[float, ...] = setting(
        (0.2, 0.4, 0.6, 0.8, 1.0),
        "Finals that loop or are unsure are decoded again by sampling at these temperatures; [] = never.",
        min=0.01,
        max=2.0,
    )
    prompt: str = setting(
        "",
        "Text the model reads as if said just before each utterance: names, spelling, style. Per stream: "
        "[[streams]] prompt.",
    )
    hotwords: tuple[str, ...] = setting(
        (), 'Words or phrases made more likely, e.g. ["Kitchen", "Living room"]. Per stream: [[streams]] hotwords.'
    )

    hotword_boost: float = setting(
        2.0,
        "Bonus per hotword token when ranking hypotheses, in nats (log-probability); 0 = hotwords only "
        "go into the prompt.",
        min=0.0,
        max=10.0,
    )

    def check(self) -> None:
        if list(self.fallback_temperatures) != sorted(self.fallback_temperatures):
            raise InvalidValue("fallback_temperatures", "must be in increasing order")

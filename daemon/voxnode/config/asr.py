"""[asr]: the speech model."""

from dataclasses import dataclass

from voxnode.config.fields import setting

ENGINES = ("whisper-litert",)  # asr/backends.py maps each to its module


@dataclass(frozen=True)
class AsrConfig:
    engine: str = setting(
        "whisper-litert", "Recognition backend: Whisper tiny.en on LiteRT with XNNPACK (docs/asr.md).", choices=ENGINES
    )
    model_dir: str = setting("", 'Folder of the converted model; "" = the bundled models/whisper-tiny.en.')
    num_threads: int = setting(0, "Inference threads; 0 = half the CPU cores, at least 1.", min=0, max=64)

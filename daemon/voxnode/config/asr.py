"""[asr]: the speech model."""

from dataclasses import dataclass

from voxnode.config.fields import setting


@dataclass(frozen=True)
class AsrConfig:
    model_dir: str = setting(
        "", 'Folder of the converted model; "" = the bundled models/whisper-tiny.en.'
    )
    num_threads: int = setting(0, "Inference threads; 0 = half the CPU cores, at least 1.", min=0, max=64)

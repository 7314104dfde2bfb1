"""Speech recognition: Whisper tiny.en on LiteRT (TFLite) with XNNPACK, numpy around it."""

from voxnode.asr.engine import EngineInfo, TranscriptResult, WhisperEngine
from voxnode.asr.locate import default_model_dir

__all__ = ["EngineInfo", "TranscriptResult", "WhisperEngine", "default_model_dir"]

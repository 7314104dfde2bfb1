"""Speech recognition: the `Recognizer` interface (recognizer.py) and one module per backend.

Backends are imported only through backends.py, when `[asr] engine` chooses them.
"""

from voxnode.asr.recognizer import EngineInfo, Recognizer, TranscriptResult
from voxnode.asr.whisper.files import default_model_dir

__all__ = ["EngineInfo", "Recognizer", "TranscriptResult", "default_model_dir"]

"""The models voxnode runs and what they share: where each is found (`find_model`), how its files are
checked (SHA256SUMS, a manifest), and the LiteRT runtime they load into with the one XNNPACK check.

Four models use it: Whisper (asr/), the end-of-turn model (stream/turn.py), Silero VAD
(frontend/silero_vad.py) and the microWakeWord models (wake/). Nothing here knows how a model is
called: each loader opens its own interpreter through `open_interpreter` and reads its own tensors.
"""

from voxnode.models.find import find_model
from voxnode.models.interpreter import open_interpreter

__all__ = ["find_model", "open_interpreter"]

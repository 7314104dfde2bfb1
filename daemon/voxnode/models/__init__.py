"""The models voxnode runs and what they share: where each is found (`find_model`), how its files are
checked (SHA256SUMS, a manifest), and the LiteRT runtime they load into with the one XNNPACK check.

Five kinds use it: Whisper (asr/), the end-of-turn model (stream/turn.py), Silero VAD
(frontend/silero_vad.py), DeepFilterNet 3 (frontend/dfn3.py) and the wake-word models (wake/:
microWakeWord's, and openWakeWord's for wake.confirm). Nothing here knows how a model is
called: each loader opens its own interpreter through `open_interpreter` and reads its own tensors.
"""

from voxnode.models.find import find_model
from voxnode.models.interpreter import open_interpreter

__all__ = ["find_model", "open_interpreter"]

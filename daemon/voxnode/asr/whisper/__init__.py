"""Whisper on LiteRT (`[asr] engine = "whisper-litert"`): the backend `engine.WhisperEngine` and its
internals: the model folder (files), loading the interpreters (load), the encoder and decoder
runners, the tokenizer, beam search and sampling (search), hotwords, the guards against invented
text, the second looks at a final (redecode) and the decode options. Nothing outside asr/ imports
these; the rest of voxnode sees the `Recognizer` interface (asr/recognizer.py).
"""

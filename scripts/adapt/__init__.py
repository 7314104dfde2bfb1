"""`voxnode adapt` (build-time): fine-tune Whisper tiny.en on a room's noise, export int8 LiteRT.

Entry point: scripts/adapt/__main__.py (run in .venv-adapt; `voxnode adapt` runs it there).
Modules: choices (the layer sets and adapters the options name, without TensorFlow), weights (trainable
layers on the exporter's own graphs), data (speech x noise mixing,
held-out split), train (teacher-forced loop), evaluate (before/after WER with the runtime engine),
export (the converter + the runtime's XNNPACK check + model card), seeds (several runs' mean and spread),
home_noise (a home's mix of noises as one --noise WAV: a general noise-robust adaptation).
"""

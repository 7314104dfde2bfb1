"""Audio in: ALSA capture threads, file sources, the ring buffer between them and the pipeline."""

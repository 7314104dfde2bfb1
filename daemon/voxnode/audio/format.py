"""The one audio format the pipeline runs on."""

SAMPLE_RATE = 16000
PERIOD_FRAMES = 320  # 20 ms at 16 kHz
PERIOD_S = PERIOD_FRAMES / SAMPLE_RATE
BYTES_PER_SAMPLE = 2  # S16_LE

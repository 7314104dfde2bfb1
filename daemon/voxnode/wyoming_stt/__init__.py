"""A Wyoming speech-to-text server (Home Assistant Assist, ESPHome voice satellites through it):
requests are decoded by the same scheduler and engines as the microphones (docs/voice-assistant.md)."""

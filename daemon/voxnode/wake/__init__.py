"""Wake word: a microWakeWord detector per stream and the gate that keeps what precedes the word
away from the recogniser (docs/voice-assistant.md)."""

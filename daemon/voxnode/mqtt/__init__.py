"""MQTT: transcripts with a durable spool, health, commands and Home Assistant discovery (docs/mqtt.md)."""

"""Process health: CPU, memory (glibc malloc), SoC temperature, leak watch, Prometheus."""

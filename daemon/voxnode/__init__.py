"""voxnode: on-device speech-to-text daemon for ARM voice nodes."""

__version__ = "0.1.0"

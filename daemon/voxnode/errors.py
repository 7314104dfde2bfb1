"""Exception types a user can act on.

Every error that reaches the command line is a VoxnodeError: the CLI prints its
message on one line and exits non-zero, without a traceback.
"""


class VoxnodeError(Exception):
    """Base class: the message is written for the person running voxnode."""


class ConfigError(VoxnodeError):
    """The configuration file or a command-line override is invalid."""


class AudioDeviceError(VoxnodeError):
    """An ALSA device could not be opened or does not support what we need."""


class AudioFileError(VoxnodeError):
    """An audio file is missing, empty, truncated, corrupt or not audio."""


class ModelError(VoxnodeError):
    """The speech model is missing, corrupt or cannot be loaded."""


class MqttConfigError(VoxnodeError):
    """The MQTT settings cannot work (unreadable password file, TLS files missing)."""

from dataclasses import dataclass

from voxnode.config.fields import setting


@dataclass(frozen=True)
class LogConfig:
    level: str = setting("info", "Log level.", choices=("debug", "info", "warning", "error"))

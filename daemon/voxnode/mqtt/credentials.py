"""The MQTT password: from a file, the config, or a systemd credential."""

from __future__ import annotations

import os
from collections.abc import Mapping

from voxnode.config.mqtt import MqttConfig
from voxnode.errors import MqttConfigError

CREDENTIAL_NAME = "mqtt-password"


def read_password(c: MqttConfig, environ: Mapping[str, str] = os.environ) -> str | None:
    """mqtt.password_file (first line), else mqtt.password, else the systemd credential `mqtt-password`.

    Under DynamicUser no file can be private to the service, so the unit passes the password
    with LoadCredential=mqtt-password:/etc/voxnode/mqtt-password ($CREDENTIALS_DIRECTORY).
    """
    path, key = c.password_file, "mqtt.password_file"
    if not path and not c.password and environ.get("CREDENTIALS_DIRECTORY"):
        candidate = os.path.join(environ["CREDENTIALS_DIRECTORY"], CREDENTIAL_NAME)
        if os.path.exists(candidate):
            path, key = candidate, f"systemd credential {CREDENTIAL_NAME}"
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                return f.readline().rstrip("\r\n")
        except OSError as e:
            raise MqttConfigError(f"{key} = {path!r}: {e.strerror or e}") from None
    return c.password or None

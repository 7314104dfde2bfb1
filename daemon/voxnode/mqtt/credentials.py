"""The files [mqtt] refers to: the password (file or systemd credential) and the TLS files.

`voxnode run` and `voxnode check-config` both go through `check_files`, so a
config that check-config passes does not fail at start for a missing,
unreadable or malformed password or certificate file.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping

from voxnode.config.mqtt import MAX_STRING_BYTES, MqttConfig
from voxnode.config.wording import toml_value
from voxnode.errors import MqttConfigError
from voxnode.regular_file import check_regular_file, read_head

CREDENTIAL_NAME = "mqtt-password"
# A password is one line; reading more would let a wrong path (a device, a log) fill memory.
MAX_PASSWORD_BYTES = MAX_STRING_BYTES


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
    if not path:
        return c.password or None
    # Never waits on a FIFO given as the file: voxnode.regular_file, as for the config file.
    raw = read_head(path, f"{key} = {toml_value(path)}:", MAX_PASSWORD_BYTES + 1, MqttConfigError)
    line = raw.split(b"\n", 1)[0].rstrip(b"\r")
    if b"\n" not in raw and len(raw) > MAX_PASSWORD_BYTES:
        raise MqttConfigError(
            f"{key} = {toml_value(path)}: first line is longer than {MAX_PASSWORD_BYTES} bytes; "
            "is it the password file?"
        )
    if not line:
        # Mosquitto (2.0.11, tests/mqtt/test_security.py) refuses every empty password, that of a user
        # whose password file entry was made empty included: the node would retry "Not authorized" for ever.
        what = "is empty" if not raw.strip(b"\r\n") else "has an empty first line"
        raise MqttConfigError(
            f"{key} = {toml_value(path)}: {what}; its first line is the password, and Mosquitto refuses an empty one"
        )
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as e:
        raise MqttConfigError(
            f"{key} = {toml_value(path)}: the password is not UTF-8 text (byte {e.start} of the first "
            "line); MQTT passwords are UTF-8"
        ) from None


def tls_context(c: MqttConfig) -> ssl.SSLContext | None:
    """The client's TLS context (None without TLS): the CA, the client certificate, host name checks."""
    if not c.tls:
        return None
    for key in ("tls_ca", "tls_cert", "tls_key"):
        path = getattr(c, key)
        if path:  # the TLS library opens them blocking: a FIFO there would hang the start
            check_regular_file(path, f"mqtt.{key} = {toml_value(path)}:", MqttConfigError)
    try:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=c.tls_ca or None)
    except (ssl.SSLError, OSError, ValueError) as e:
        raise MqttConfigError(f"mqtt.tls_ca = {toml_value(c.tls_ca)}: not a PEM CA certificate ({_why(e)})") from None
    if c.tls_cert:
        try:
            context.load_cert_chain(c.tls_cert, c.tls_key)
        except (ssl.SSLError, OSError, ValueError) as e:
            raise MqttConfigError(
                f"mqtt.tls_cert = {toml_value(c.tls_cert)} / tls_key = {toml_value(c.tls_key)}: cannot be loaded "
                f"({_why(e)}); both must be PEM and the key must match the certificate"
            ) from None
    context.check_hostname = not c.tls_insecure
    context.verify_mode = ssl.CERT_REQUIRED
    return context


def _why(e: Exception) -> str:
    if isinstance(e, ssl.SSLError):
        return e.reason or str(e)
    if isinstance(e, OSError):
        return e.strerror or str(e)
    return str(e)


def check_files(c: MqttConfig, environ: Mapping[str, str] = os.environ) -> None:
    """Everything `voxnode run` reads for [mqtt] before connecting; raises MqttConfigError."""
    if not c.enabled:
        return
    if c.username:
        read_password(c, environ)
    tls_context(c)

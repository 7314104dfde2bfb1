"""The paho client as [mqtt] configures it (protocol, credentials, TLS), and what a failed
connection means, in words that say what to check."""

from __future__ import annotations

import logging
import ssl

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from voxnode.config.mqtt import MqttConfig
from voxnode.mqtt.credentials import read_password, tls_context

log = logging.getLogger("voxnode.mqtt")

# What to check when the broker refuses the connection (its CONNACK reason, as paho words it).
REFUSAL_HINTS = {
    "Not authorized": "check mqtt.username and mqtt.password/password_file and the broker's ACL",
    "Bad user name or password": "check mqtt.username and mqtt.password/password_file",
    "Client identifier not valid": "set mqtt.client_id to something the broker accepts",
}


def make_paho_client(c: MqttConfig, client_id: str) -> mqtt.Client:
    """A paho client with the configured protocol, credentials and TLS (not yet connected).
    Raises MqttConfigError for a password or TLS file that cannot work, as check-config does."""
    protocol = mqtt.MQTTv5 if c.protocol == "5" else mqtt.MQTTv311
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=protocol)
    if c.username:
        client.username_pw_set(c.username, read_password(c))
    context = tls_context(c)  # the same checks as check-config
    if context is not None:
        client.tls_set_context(context)
    return client


def refusal_hint(reason_code: object) -> str:
    return REFUSAL_HINTS.get(str(reason_code), "see the broker's log")


def connect_failure(err: BaseException | None) -> str:
    """Why a connection attempt failed (`err`: what paho's on_connect_fail is handling)."""
    if isinstance(err, ssl.SSLCertVerificationError):
        return f"TLS certificate not accepted: {err.verify_message} (check mqtt.tls_ca and the broker's host name)"
    if isinstance(err, ssl.SSLError):
        return f"TLS handshake failed: {err.reason or err} (is the port a TLS listener? is mqtt.tls right?)"
    if isinstance(err, OSError):
        return err.strerror or str(err) or type(err).__name__
    return "connection failed"


def warn_about_protocol(config: MqttConfig) -> None:
    if config.protocol == "3.1.1" and config.qos:
        log.warning(
            "MQTT 3.1.1: a broker that refuses a final (an ACL denial) drops it without telling "
            'voxnode, so refused finals are lost unnoticed; use mqtt.protocol = "5" to have them '
            "detected, reported and retried"
        )

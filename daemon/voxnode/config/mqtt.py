"""[mqtt]: the broker, topics and Home Assistant discovery (the spool is [delivery]'s)."""

import re
import socket
from dataclasses import dataclass

from voxnode.config.fields import InvalidValue, setting

TOPIC_WORD = r"[^#+/\x00]+(/[^#+/\x00]+)*"  # MQTT topic levels without wildcards
# MQTT strings (client id, user name, password, topic) are at most 65535 bytes: a 70000-byte client_id
# killed paho's network thread (struct.error, a traceback) and the node never connected, saying nothing
# more; a topic over it raises in publish. 4096 bytes each (the password file's limit too) keeps every
# topic built from the prefixes, the node and the stream name far under it.
MAX_STRING_BYTES = 4096
# Topics that begin with "$" are the broker's (MQTT 5 4.7.2, "$SYS/..."): Mosquitto 2.0.11 denied every
# publish under topic_prefix = "$SYS/voxtest" (the node logged "Not authorized (check the broker's ACL)"
# and kept its finals for ever), and "$share/..." is shared-subscription syntax.


@dataclass(frozen=True)
class MqttConfig:
    enabled: bool = setting(False, "Publish transcripts and health over MQTT.")
    host: str = setting("localhost", "Broker host name or address.")
    port: int = setting(0, "Broker port; 0 = 1883, or 8883 with tls.", min=0, max=65535)
    protocol: str = setting("5", 'MQTT protocol version: "5" or "3.1.1".', choices=("5", "3.1.1"))
    username: str = setting("", 'User name; "" = connect anonymously.')
    password: str = setting("", "Password (prefer password_file, which keeps it out of this file).", secret=True)
    password_file: str = setting(
        "",
        "File whose first line is the password. With neither set, the systemd credential "
        "$CREDENTIALS_DIRECTORY/mqtt-password is used when present (LoadCredential=, see docs/systemd.md).",
    )
    tls: bool = setting(False, "Connect with TLS (certificate and host name verified).")
    tls_ca: str = setting("", 'CA certificate file (PEM); "" = the system CA store.')
    tls_cert: str = setting("", "Client certificate (PEM) for brokers that require one; needs tls_key.")
    tls_key: str = setting("", "Private key of tls_cert (PEM).")
    tls_insecure: bool = setting(
        False, "Skip the host name check (the certificate chain is still verified). Tests only."
    )
    client_id: str = setting("", 'MQTT client id; "" = voxnode-<node_id>.')
    keepalive: int = setting(
        30, "Keep-alive interval in seconds; a dead link is noticed after about 1.5x this.", min=5, max=3600
    )
    reconnect_min_s: float = setting(
        1.0, "First reconnect delay; it doubles on each failure up to reconnect_max_s.", min=0.1, max=60.0
    )
    reconnect_max_s: float = setting(30.0, "Longest reconnect delay. Reconnecting never stops.", min=1.0, max=3600.0)
    topic_prefix: str = setting(
        "voxnode", "First level of every voxnode topic: {prefix}/{node_id}/...", pattern=TOPIC_WORD
    )
    node_id: str = setting(
        "",
        'This node\'s name in topics; "" = the host name with anything outside [a-zA-Z0-9_-] replaced by "_".',
        pattern=r"[A-Za-z0-9_-]{1,64}",
    )
    qos: int = setting(
        1,
        "QoS of final transcripts (1 = at least once; the spool guarantees delivery to the broker only with 1).",
        choices=(0, 1),
    )
    inflight_window: int = setting(
        50, "Finals handed to the MQTT client at once; the rest wait in the spool.", min=1, max=1000
    )
    max_command_bytes: int = setting(
        4096, "Longest accepted command payload on {prefix}/{node}/cmd.", min=64, max=1048576
    )
    discovery: bool = setting(
        True,
        "Announce the node and its streams to Home Assistant (MQTT discovery); false also "
        "removes what an earlier run announced.",
    )
    discovery_prefix: str = setting("homeassistant", "Home Assistant discovery prefix.", pattern=TOPIC_WORD)

    def check(self) -> None:
        if self.enabled and not self.host.strip():
            raise InvalidValue("host", "must not be empty when MQTT is enabled (the broker's host name or address)")
        if "://" in self.host or any(c.isspace() for c in self.host) or "/" in self.host:
            raise InvalidValue(
                "host",
                "must be a bare host name or address, e.g. homeassistant.local "
                "(no mqtt:// scheme, path or spaces; the port goes in mqtt.port)",
            )
        for key in ("topic_prefix", "discovery_prefix"):
            if getattr(self, key).startswith("$"):
                raise InvalidValue(key, 'must not start with "$": topics beginning with $ are the broker\'s own')
        for key in ("host", "username", "password", "client_id", "topic_prefix", "discovery_prefix"):
            size = len(getattr(self, key).encode("utf-8", "surrogatepass"))
            if size > MAX_STRING_BYTES:
                raise InvalidValue(key, f"is {size} bytes long; MQTT takes at most {MAX_STRING_BYTES} here")
        if self.password and self.password_file:
            raise InvalidValue("password_file", "set either password or password_file, not both")
        if (self.password or self.password_file) and not self.username:
            raise InvalidValue("username", "is required when a password is set")
        if bool(self.tls_cert) != bool(self.tls_key):
            raise InvalidValue("tls_cert", "tls_cert and tls_key must be set together")
        if (self.tls_ca or self.tls_cert or self.tls_insecure) and not self.tls:
            raise InvalidValue("tls", "must be true when tls_ca, tls_cert or tls_insecure is set")
        if self.reconnect_max_s < self.reconnect_min_s:
            raise InvalidValue("reconnect_max_s", f"must not be smaller than reconnect_min_s ({self.reconnect_min_s})")

    @property
    def effective_port(self) -> int:
        return self.port or (8883 if self.tls else 1883)


def sanitize_node_id(name: str) -> str:
    """A host name -> a topic- and Home-Assistant-safe id ([a-zA-Z0-9_-], at most 64 characters)."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]", "_", name.split(".")[0] if name else "")[:64]
    return cleaned or "voxnode"


def node_id_for(config: MqttConfig) -> str:
    """This node's name in topics and health reports: mqtt.node_id, else the host name."""
    return config.node_id or sanitize_node_id(socket.gethostname())

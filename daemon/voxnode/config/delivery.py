"""[delivery]: the spool that gives finals their `seq` and keeps them until every durable output
(stdout, MQTT, webhook) has delivered them (voxnode.delivery)."""

from dataclasses import dataclass

from voxnode.config.fields import setting


@dataclass(frozen=True)
class DeliveryConfig:
    spool_path: str = setting(
        "",
        'SQLite file holding finals until every durable output has delivered them; "" = $STATE_DIRECTORY, '
        "else /var/lib/voxnode, else ~/.local/state/voxnode (with a warning), + /spool.sqlite "
        "(an existing mqtt-spool.sqlite there is kept: its unsent finals and seq carry on). "
        "A folder, or a path under a file, is refused at start (check-config too).",
        formerly="mqtt.spool_path",
    )
    spool_max_messages: int = setting(
        100000,
        "Spool bound; beyond it the oldest undelivered finals are dropped (counted in health and logged).",
        min=10,
        max=10000000,
        formerly="mqtt.spool_max_messages",
    )

"""Home Assistant MQTT discovery: one device-based config message announcing every entity.

Topic {discovery_prefix}/device/{node}/config, retained. Availability follows the `state` of
{prefix}/{node}/status; sensors read the transcript and health topics, and a
switch per stream sends mute/unmute commands and reads its state from health.
"""

from __future__ import annotations

from voxnode import __version__
from voxnode.mqtt.topics import Topics

ORIGIN = {"name": "voxnode", "sw": __version__}


def discovery_payload(topics: Topics, streams: list[str]) -> dict:
    node = topics.node
    cmps: dict[str, dict] = {}
    for s in streams:
        cmps[f"{s}_transcript"] = {
            "p": "sensor",
            "name": f"{s} transcript",
            "unique_id": f"voxnode_{node}_{s}_transcript",
            "state_topic": topics.transcript(s),
            # HA states are limited to 255 characters; the full text is in the attributes.
            "value_template": "{{ value_json.text[:255] }}",
            "json_attributes_topic": topics.transcript(s),
            "icon": "mdi:microphone-message",
        }
        cmps[f"{s}_latency"] = {
            "p": "sensor",
            "name": f"{s} latency p95",
            "unique_id": f"voxnode_{node}_{s}_latency_p95",
            "state_topic": topics.health,
            "value_template": "{{ value_json.streams['%s'].latency_p95_ms | default(None) }}" % s,  # noqa: UP031 (Jinja and JSON braces)
            "unit_of_measurement": "ms",
            "device_class": "duration",
            "state_class": "measurement",
            "entity_category": "diagnostic",
        }
        cmps[f"{s}_mute"] = {
            "p": "switch",
            "name": f"{s} mute",
            "unique_id": f"voxnode_{node}_{s}_mute",
            "command_topic": topics.cmd,
            "payload_on": '{"cmd":"mute","stream":"%s"}' % s,  # noqa: UP031 (Jinja and JSON braces)
            "payload_off": '{"cmd":"unmute","stream":"%s"}' % s,  # noqa: UP031 (Jinja and JSON braces)
            "state_topic": topics.health,
            "value_template": "{{ 'ON' if value_json.streams['%s'].muted else 'OFF' }}" % s,  # noqa: UP031 (Jinja and JSON braces)
            "icon": "mdi:microphone-off",
        }
    cmps["rss"] = {
        "p": "sensor",
        "name": "Memory (RSS)",
        "unique_id": f"voxnode_{node}_rss",
        "state_topic": topics.health,
        "value_template": "{{ (value_json.process.rss_bytes / 1048576) | round(1) }}",
        "unit_of_measurement": "MiB",
        "device_class": "data_size",
        "state_class": "measurement",
        "entity_category": "diagnostic",
    }
    cmps["cpu"] = {
        "p": "sensor",
        "name": "CPU",
        "unique_id": f"voxnode_{node}_cpu",
        "state_topic": topics.health,
        "value_template": "{{ value_json.process.cpu_percent }}",
        "unit_of_measurement": "%",
        "state_class": "measurement",
        "entity_category": "diagnostic",
        "icon": "mdi:cpu-64-bit",
    }
    cmps["temperature"] = {
        "p": "sensor",
        "name": "SoC temperature",
        "unique_id": f"voxnode_{node}_soc_temp",
        "state_topic": topics.health,
        "value_template": "{{ value_json.thermal.soc_temp_c }}",
        "unit_of_measurement": "°C",
        "device_class": "temperature",
        "state_class": "measurement",
        "entity_category": "diagnostic",
    }
    cmps["backlog"] = {
        "p": "sensor",
        "name": "MQTT backlog",
        "unique_id": f"voxnode_{node}_mqtt_backlog",
        "state_topic": topics.health,
        "value_template": "{{ value_json.mqtt.backlog }}",
        "unit_of_measurement": "messages",
        "state_class": "measurement",
        "entity_category": "diagnostic",
    }
    return {
        "dev": {
            "ids": [f"voxnode_{node}"],
            "name": f"voxnode {node}",
            "mf": "voxnode",
            "mdl": "voxnode speech-to-text node",
            "sw": __version__,
        },
        "o": ORIGIN,
        "avty_t": topics.status,
        "avty_tpl": "{{ value_json.state }}",  # the status is JSON (mqtt/status.py)
        "pl_avail": "online",
        "pl_not_avail": "offline",
        "cmps": cmps,
        "qos": 1,
    }

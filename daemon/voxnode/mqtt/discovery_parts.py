"""The pieces every Home Assistant discovery payload is made of (mqtt/discovery.py): the device
payload around the components, and one builder per kind of component, each with the rules checked
against a real Home Assistant (tests/ha/): `qos` on every component, diagnostic sensors with the
unit and state class that long-term statistics need, switches that show the daemon's state.
"""

from __future__ import annotations

from voxnode import __version__
from voxnode.mqtt.topics import Topics

ORIGIN = {"name": "voxnode", "sw": __version__}
QOS = 1  # on every component: the switch and buttons publish with it, the rest subscribe with it
# Home Assistant keeps at most 255 characters of a state; the whole final is in the attributes.
STATE_MAX = 255
MUTE_ON, MUTE_OFF = "ON", "OFF"


def stream_json(s: str) -> str:
    """Jinja for one stream's health object; {} when the report lacks the stream (it stopped)."""
    return f"(value_json.streams[{s!r}] | default({{}}))"


def device_payload(topics: Topics, device: dict) -> dict:
    return {
        "dev": device,
        "o": ORIGIN,
        "avty_t": topics.status,
        "avty_tpl": "{{ value_json.state }}",  # the status is JSON (mqtt/status.py)
        "pl_avail": "online",
        "pl_not_avail": "offline",
        "cmps": {},
    }


def sensor(uid: str, name: str, state_topic: str, template: str, **extra) -> dict:
    return {
        "p": "sensor",
        "name": name,
        "unique_id": uid,
        "state_topic": state_topic,
        "value_template": template,
        "qos": QOS,
        **extra,
    }


def diagnostic(
    uid: str, name: str, health: str, template: str, *, unit: str, state_class: str, device_class: str = "", **extra
) -> dict:
    """A diagnostic sensor on a figure of the health report, with the unit and state class that
    Home Assistant's long-term statistics need."""
    classes = {"device_class": device_class} if device_class else {}
    return sensor(
        uid,
        name,
        health,
        template,
        unit_of_measurement=unit,
        **classes,
        state_class=state_class,
        **extra,
        entity_category="diagnostic",
    )


def problem(uid: str, name: str, state_topic: str, template: str, attributes: str | None = None, **extra) -> dict:
    cfg = {
        "p": "binary_sensor",
        "name": name,
        "unique_id": uid,
        "state_topic": state_topic,
        "value_template": template,
        "device_class": "problem",
        "payload_on": "ON",
        "payload_off": "OFF",
        "qos": QOS,
        "entity_category": "diagnostic",
        **extra,
    }
    if attributes:
        cfg["json_attributes_topic"] = state_topic
        cfg["json_attributes_template"] = attributes
    return cfg


def switch(uid: str, name: str, command_topic: str, state_topic: str, icon: str) -> dict:
    """ON/OFF in; the daemon's state, retained, out (not optimistic: it shows what the daemon did)."""
    io = {"command_topic": command_topic, "state_topic": state_topic, "optimistic": False, "retain": False}
    on_off = {"payload_on": MUTE_ON, "payload_off": MUTE_OFF, "state_on": MUTE_ON, "state_off": MUTE_OFF}
    return {"p": "switch", "name": name, "unique_id": uid, **io, **on_off, "qos": QOS, "icon": icon}


def button(uid: str, name: str, topics: Topics, command: str, **extra) -> dict:
    return {
        "p": "button",
        "name": name,
        "unique_id": uid,
        "command_topic": topics.cmd,
        "payload_press": '{"cmd":"%s"}' % command,
        "qos": QOS,
        "retain": False,
        **extra,
    }

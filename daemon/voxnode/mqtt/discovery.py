"""Home Assistant MQTT device discovery: the payloads, as pure functions of what the node knows.

Two kinds of device (docs/mqtt.md#home-assistant), each one retained message:
- the node, {discovery_prefix}/device/{node}/config: process, board and MQTT
  entities, and the reload / publish-health buttons;
- one per stream, {discovery_prefix}/device/{node}/{stream}/config, linked to the
  node (`via_device`) and placed in the stream's `area`: transcript, final event,
  partial, last final, mute switch, capture problem, counters, latency, noise floor, speech over
  noise, and on a stream that listens for a wake word ([wake]) a wake event.
Availability follows the `state` of the JSON {prefix}/{node}/status (mqtt/status.py).

The components are made by mqtt/discovery_parts.py. Rules checked against a real Home Assistant
(tests/ha/):
- `qos` sits on every component: releases before mid-2026 ignore a device-level one
  and would subscribe to finals at QoS 0.
- Optional entities are announced only when the health report carries the field
  they read (`capabilities.Capabilities`), so nothing stays `unknown` forever.
- A component that is no longer announced is sent once as {"p": platform} (a
  tombstone); without it Home Assistant keeps the entity as an orphan.
"""

from __future__ import annotations

from dataclasses import dataclass

from voxnode import __version__
from voxnode.mqtt.capabilities import Capabilities
from voxnode.mqtt.discovery_parts import (
    QOS,
    STATE_MAX,
    button,
    device_payload,
    diagnostic,
    problem,
    sensor,
    stream_json,
    switch,
)
from voxnode.mqtt.topics import Topics

# A stream whose capture is in neither state is a problem (backoff = the device keeps failing).
CAPTURE_OK_STATES = ("running", "starting")


@dataclass(frozen=True)
class StreamDevice:
    name: str
    area: str = ""  # Home Assistant's suggested_area for the stream's device ("" = none)
    wake: bool = False  # listens for a wake word: a wake event entity and the follow-up switch (off: tombstones)


def node_device_id(topics: Topics) -> str:
    return f"voxnode_{topics.node}"


def stream_device_id(topics: Topics, stream: str) -> str:
    # ":" cannot occur in a node id or a stream name: node "a_b" and stream "b" of node "a" stay apart.
    return f"voxnode_{topics.node}:{stream}"


def node_payload(topics: Topics, caps: Capabilities, *, board: str | None, backlog_limit: int) -> dict:
    """The node's device: process, board and MQTT health, and the buttons."""
    node, health = topics.node, topics.health
    device = {
        "ids": [node_device_id(topics)],
        "name": f"voxnode {node}",
        "mf": "voxnode",
        "mdl": "voxnode speech-to-text node",
        "sw": __version__,
    }
    if board:
        device["hw"] = board
    out = device_payload(topics, device)
    c = out["cmps"]
    c["rss"] = diagnostic(
        f"voxnode_{node}_rss",
        "Memory (RSS)",
        health,
        "{{ (value_json.process.rss_bytes / 1048576) | round(1) }}",
        unit="MiB",
        state_class="measurement",
        device_class="data_size",
    )
    c["cpu"] = diagnostic(
        f"voxnode_{node}_cpu",
        "CPU",
        health,
        "{{ value_json.process.cpu_percent }}",
        unit="%",
        state_class="measurement",
        icon="mdi:cpu-64-bit",
    )
    if caps.temperature:
        c["temperature"] = diagnostic(
            f"voxnode_{node}_soc_temp",
            "SoC temperature",
            health,
            "{{ value_json.thermal.soc_temp_c }}",
            unit="°C",
            state_class="measurement",
            device_class="temperature",
        )
    c["backlog"] = diagnostic(
        f"voxnode_{node}_mqtt_backlog",
        "MQTT backlog",
        health,
        "{{ (value_json.mqtt or {}).backlog | default(None) }}",
        unit="messages",
        state_class="measurement",
        icon="mdi:tray-full",
    )
    c["finals_refused"] = diagnostic(
        f"voxnode_{node}_finals_refused",
        "Finals refused",
        health,
        "{{ (value_json.mqtt or {}).finals_refused | default(None) }}",
        unit="finals",
        state_class="total_increasing",
    )
    c["finals_lost"] = diagnostic(
        f"voxnode_{node}_finals_lost",
        "Finals lost",
        health,
        # Finals with no durable copy (the spool could not store them) that the broker refused.
        "{{ (value_json.mqtt or {}).unstored_lost | default(None) }}",
        unit="finals",
        state_class="total_increasing",
    )
    # Which Whisper runs: "whisper-tiny.en", or a `voxnode adapt` variant such as "whisper-tiny.en+kitchen".
    model_name = "{{ (value_json.model or {}).name | default(None) }}"
    c["model"] = sensor(f"voxnode_{node}_model", "Speech model", health, model_name, entity_category="diagnostic")
    c["leak"] = problem(
        f"voxnode_{node}_leak",
        "Memory leak",
        health,
        "{{ 'ON' if value_json.memory.leak.suspected else 'OFF' }}",
        "{{ value_json.memory.leak | to_json }}",
    )
    # More finals waiting than one in-flight window: the broker is not taking them as fast as they come
    # (link down between reports, or refused by an ACL: they stay in the spool).
    c["spool_backlog"] = problem(
        f"voxnode_{node}_spool_backlog",
        "Spool backlog",
        health,
        "{{ 'ON' if ((value_json.mqtt or {}).backlog | default(0)) > %d else 'OFF' }}" % backlog_limit,
    )
    c["spool_problem"] = problem(
        f"voxnode_{node}_spool_problem",
        "Spool problem",
        health,
        # On while the spool cannot store finals; the attribute says why, and what to do.
        "{{ 'ON' if (value_json.mqtt or {}).spool_writable == false else 'OFF' }}",
        "{{ {'problem': (value_json.mqtt or {}).spool_error or none} | to_json }}",
    )
    if caps.throttling:
        flags = "(value_json.thermal.throttled or {})"
        c["throttled"] = problem(
            f"voxnode_{node}_throttled",
            "Throttled or under-voltage",
            health,
            "{%% set t = %s %%}{{ 'ON' if t.get('under_voltage') or t.get('throttled') or t.get('freq_capped') "
            "or t.get('soft_temp_limit') else 'OFF' }}" % flags,
            "{{ %s | to_json }}" % flags,
        )
    c["reload"] = button(
        f"voxnode_{node}_reload", "Reload config", topics, "reload", entity_category="config", icon="mdi:reload"
    )
    c["publish_health"] = button(
        f"voxnode_{node}_publish_health",
        "Publish health",
        topics,
        "health",
        entity_category="diagnostic",
        icon="mdi:heart-pulse",
    )
    return out


def stream_payload(topics: Topics, stream: StreamDevice) -> dict:
    """One stream's device: what it hears and how its capture is doing."""
    node, s, health = topics.node, stream.name, topics.health
    device = {
        "ids": [stream_device_id(topics, s)],
        "name": f"voxnode {node} {s}",
        "mf": "voxnode",
        "mdl": "voxnode microphone stream",
        "sw": __version__,
        "via_device": node_device_id(topics),
    }
    if stream.area:
        device["sa"] = stream.area
    out = device_payload(topics, device)
    c = out["cmps"]
    uid = f"voxnode_{node}_{s}"
    st = stream_json(s)
    transcript = topics.transcript(s)
    c["transcript"] = sensor(
        f"{uid}_transcript",
        "Transcript",
        transcript,
        "{{ value_json.text[:%d] }}" % STATE_MAX,
        json_attributes_topic=transcript,
        icon="mdi:microphone-message",
    )
    # A state trigger on the transcript sensor does not fire when the same sentence is said twice;
    # an event entity does, once per final (automations: docs/blueprints/).
    final = (
        "'event_type': 'final', 'text': value_json.text, 'id': value_json.id, "
        "'confidence': value_json.confidence, 'latency_ms': value_json.latency_ms, "
        "'seq': value_json.seq, 'stream': value_json.stream, "
        "'language': value_json.language | default(None), "
        "'speech_snr_db': value_json.speech_snr_db | default(None)"
    )
    if stream.wake:  # the word that opened the final, as in the Transcript sensor's attributes
        final += ", 'wake_word': value_json.wake_word | default(None)"
        final += ", 'follow_up': value_json.follow_up | default(false)"
    c["final"] = {
        "p": "event",
        "name": "Final",
        "unique_id": f"{uid}_final",
        "state_topic": transcript,
        "event_types": ["final"],
        "qos": QOS,
        "icon": "mdi:account-voice",
        "value_template": "{{ {%s} | to_json }}" % final,
    }
    c["partial"] = sensor(
        f"{uid}_partial",
        "Partial",
        topics.partial(s),
        "{{ value_json.text[:%d] }}" % STATE_MAX,
        enabled_by_default=False,
        icon="mdi:text-short",
    )
    if stream.wake:
        c["wake"] = wake_event_component(topics, s)
        c["follow_up"] = switch(
            f"{uid}_follow_up", "Follow-up", topics.follow_up_set(s), topics.follow_up_state(s), "mdi:chat-processing"
        )
    c["last_final"] = sensor(
        f"{uid}_last_final", "Last final", transcript, "{{ value_json.end }}", device_class="timestamp"
    )
    c["mute"] = switch(f"{uid}_mute", "Mute", topics.mute_set(s), topics.mute_state(s), "mdi:microphone-off")
    c["playing"] = switch(f"{uid}_playing", "Playing", topics.playing_set(s), topics.playing_state(s), "mdi:speaker")
    c["capture"] = problem(
        f"{uid}_capture",
        "Capture",
        health,
        # A device that opens but gives zeros (muted) or clips (audio/input_check.py) is a problem too.
        "{{ 'OFF' if %s.state | default('') in %r and %s.input | default('ok') == 'ok' else 'ON' }}"
        % (st, CAPTURE_OK_STATES, st),
        "{{ %s | to_json }}" % st,
    )
    c["latency"] = diagnostic(
        f"{uid}_latency_p95",
        "Latency p95",
        health,
        "{{ %s.latency_p95_ms | default(None) }}" % st,
        unit="ms",
        state_class="measurement",
        device_class="duration",
    )
    c["dropped_frames"] = diagnostic(
        f"{uid}_dropped_frames",
        "Dropped frames",
        health,
        "{{ %s.dropped_frames | default(None) }}" % st,
        unit="frames",
        state_class="total_increasing",
    )
    c["xruns"] = diagnostic(
        f"{uid}_xruns",
        "Xruns",
        health,
        "{{ %s.xruns | default(None) }}" % st,
        unit="xruns",
        state_class="total_increasing",
    )
    # The room's level under the speech (frontend/noise_floor.py), in the stream's report once it
    # has had audio; unknown before.
    c["noise_floor"] = diagnostic(
        f"{uid}_noise_floor",
        "Noise floor",
        health,
        "{{ %s.noise_floor_dbfs | default(None) }}" % st,
        unit="dBFS",
        state_class="measurement",
        suggested_display_precision=1,
        icon="mdi:waveform",
    )
    # How far above that room the talkers reach the microphone (stream/speech_levels.py): the median of
    # the last 10 utterances, unknown before the first; under ~10 dB Whisper loses many words.
    c["speech_snr"] = diagnostic(
        f"{uid}_speech_snr",
        "Speech over noise",
        health,
        "{{ %s.speech_snr_db | default(None) }}" % st,
        unit="dB",
        state_class="measurement",
        suggested_display_precision=0,
        icon="mdi:account-voice",
    )
    return out


def wake_event_component(topics: Topics, stream: str) -> dict:
    """An event entity per wake word heard: automations trigger on it (a chime, a light); its
    attributes carry the word and the probability. Payload: docs/schemas/wake.json."""
    return {
        "p": "event",
        "name": "Wake word",
        "unique_id": f"voxnode_{topics.node}_{stream}_wake",
        "state_topic": topics.wake(stream),
        "event_types": ["wake"],
        "qos": QOS,
        "icon": "mdi:account-voice",
        "value_template": "{{ {'event_type': 'wake', 'wake_word': value_json.wake_word, "
        "'phrase': value_json.phrase, 'probability': value_json.probability} | to_json }}",
    }


def tombstones(platforms: dict[str, str]) -> dict[str, dict]:
    """Components to remove: each sent once with nothing but its platform."""
    return {key: {"p": p} for key, p in platforms.items()}


def stream_tombstone_payload(topics: Topics, stream: str, platforms: dict[str, str]) -> dict:
    """A removed stream's device: every component it had, as a tombstone (HA then drops the device)."""
    out = device_payload(topics, {"ids": [stream_device_id(topics, stream)], "name": f"voxnode {topics.node} {stream}"})
    out["cmps"] = tombstones(platforms)
    return out

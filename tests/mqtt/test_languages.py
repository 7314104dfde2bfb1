"""A French final end to end: `voxnode run` with Whisper base ([asr] language = "auto") on a real
French recording, published to a real Mosquitto; the payload matches docs/schemas/transcript.json
and says "fr", and Home Assistant's Final event (its discovery template) carries it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import wave

from tests.languages import FR_TEXT, base_config, french_clip_16k, needs_french, wer
from tests.mqtt.conftest import write_config

BASE = "voxnode/testnode"


def render_final_event(template: str, payload: dict) -> dict:
    """Home Assistant's rendering of the Final entity's value_template, for its one shape here:
    `{{ {'key': value_json.key, 'k2': value_json.k2 | default(None), ...} | to_json }}`."""
    body = re.fullmatch(r"\{\{ \{(.*)\} \| to_json \}\}", template)
    assert body, template
    out = {}
    for item in re.findall(r"'(\w+)': ([^,]+)", body.group(1)):
        key, expr = item
        if expr.startswith("'"):
            out[key] = expr.strip("'")
            continue
        m = re.fullmatch(r"value_json\.(\w+)( \| default\(None\))?", expr.strip())
        assert m, expr
        out[key] = payload.get(m.group(1)) if m.group(2) else payload[m.group(1)]
    return out


@needs_french
def test_a_french_final_reaches_mqtt_with_its_language(tmp_path, broker, monitor_for, validate, voxnode_cmd):
    mon = monitor_for(broker)
    cfg = write_config(tmp_path / "c.toml", broker)
    cfg.write_text(cfg.read_text() + "\n" + base_config("auto"))
    wav = tmp_path / "fr.wav"
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(french_clip_16k().astype("<i2").tobytes())
    p = subprocess.run(
        voxnode_cmd + ["run", "--config", str(cfg), "--file", str(wav), "--stdout"],
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, "PYTHONMALLOC": "malloc"},
    )
    assert p.returncode == 0, p.stderr
    topic = f"{BASE}/mic/transcript"
    assert mon.wait_for(lambda: mon.on(topic)), p.stderr
    (payload,) = mon.on(topic)
    final = validate("transcript", payload)
    assert final["language"] == "fr" and final["model"] == "whisper-base", final
    assert wer(FR_TEXT, final["text"]) <= 0.3, final["text"]
    # stdout says the same (the sequencer stores a final once; every sink shows that copy)
    (line,) = [e for e in map(json.loads, p.stdout.splitlines()) if e["type"] == "final"]
    assert line["language"] == "fr" and line["text"] == final["text"]
    # Home Assistant: the stream device's Final event entity, as discovery announced it.
    (config,) = [json.loads(m[1]) for m in mon.matching("/config") if m[0].endswith("/testnode/mic/config")]
    event = render_final_event(config["cmps"]["final"]["value_template"], final)
    assert event["event_type"] == "final" and event["language"] == "fr" and event["text"] == final["text"]

"""A real Home Assistant for the tests: `hass` from build/ha-venv in a throwaway config folder.

Set up the way a person does it, through Home Assistant's own APIs:
- onboarding: POST /api/onboarding/users creates the owner and returns an auth code,
  exchanged at /auth/token for an access token; over the websocket API that token
  creates the long-lived token every later call uses;
- the MQTT integration: a config flow (POST /api/config/config_entries/flow, handler
  "mqtt", then the broker form), exactly what Settings > Add integration does;
- everything checked is read back from Home Assistant's state machine and registries
  (REST /api/states, websocket config/entity_registry/list, device and area registries,
  subscribe_events, trace/list).

Home Assistant 2025.4.4 needs CPython 3.13: scripts/ha_venv.sh builds the venv.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from websockets.sync.client import connect as ws_connect

from voxnode.mqtt.localbroker import free_port

ROOT = Path(__file__).resolve().parents[2]
HA_VENV = Path(os.environ.get("VOXNODE_HA_VENV", ROOT / "build" / "ha-venv"))
HA_VERSION = "2025.4.4"  # tests/ha/requirements-ha.txt


class HomeAssistantError(AssertionError):
    pass


class HomeAssistant:
    def __init__(self, work: Path, *, extra_config: str = ""):
        self.work = work
        self.config_dir = work / "config"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.extra_config = extra_config
        self.proc: subprocess.Popen | None = None
        self.token = ""
        self._ws = None
        self._ws_stack = contextlib.ExitStack()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._results: dict[int, dict] = {}
        self._events: dict[int, list[dict]] = {}
        self._cond = threading.Condition(self._lock)
        self._reader: threading.Thread | None = None

    # ---- life cycle -----------------------------------------------------------------------------

    def start(self, timeout: float = 300.0) -> HomeAssistant:
        c = self.config_dir
        (c / "blueprints" / "automation").mkdir(parents=True, exist_ok=True)
        (c / "automations.yaml").write_text("[]\n")
        (c / "configuration.yaml").write_text(
            "homeassistant:\n  name: voxnode test\n  latitude: 52.37\n  longitude: 4.89\n  elevation: 0\n"
            "  unit_system: metric\n  time_zone: UTC\n  country: NL\n  currency: EUR\n"
            f"http:\n  server_host: 127.0.0.1\n  server_port: {self.port}\n"
            "automation: !include automations.yaml\n"
            "logger:\n  default: warning\n  logs:\n    homeassistant.components.mqtt: info\n" + self.extra_config
        )
        self.log_path = self.work / "home-assistant.log"
        self._out = open(self.work / "hass.stdout", "wb")  # noqa: SIM115 (Home Assistant writes to it until stop())
        # --skip-pip: everything it needs is in the venv already; nothing is installed at run time.
        self.proc = subprocess.Popen(
            [str(HA_VENV / "bin" / "hass"), "--config", str(c), "--skip-pip", "--log-file", str(self.log_path)],
            stdout=self._out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        end = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise HomeAssistantError(f"hass exited with {self.proc.returncode}; log:\n{self.log_tail()}")
            try:
                if self._get("/api/onboarding", auth=False) is not None:
                    break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if time.monotonic() > end:
                raise HomeAssistantError(f"Home Assistant did not answer within {timeout:.0f} s:\n{self.log_tail()}")
            time.sleep(0.5)
        self._onboard()
        return self

    def _onboard(self) -> None:
        client_id = f"{self.url}/"
        r = self._post(
            "/api/onboarding/users",
            {
                "client_id": client_id,
                "name": "Test",
                "username": "test",
                "password": "voxnode-test-password",
                "language": "en",
            },
            auth=False,
        )
        form = urllib.parse.urlencode(
            {"grant_type": "authorization_code", "code": r["auth_code"], "client_id": client_id}
        ).encode()
        with urllib.request.urlopen(urllib.request.Request(f"{self.url}/auth/token", data=form), timeout=30) as resp:
            self.token = json.loads(resp.read())["access_token"]
        self._connect_ws()
        self.token = self.ws("auth/long_lived_access_token", client_name="voxnode tests", lifespan=1)
        self._connect_ws()  # from now on everything uses the long-lived token

    def add_mqtt(self, host: str, port: int) -> dict:
        """The MQTT integration, added through its config flow as in Settings > Devices & services."""
        flow = self._post("/api/config/config_entries/flow", {"handler": "mqtt", "show_advanced_options": False})
        if flow.get("type") == "form" and flow.get("step_id") == "broker":
            flow = self._post(f"/api/config/config_entries/flow/{flow['flow_id']}", {"broker": host, "port": port})
        if flow.get("type") != "create_entry":
            raise HomeAssistantError(f"MQTT config flow did not create an entry: {flow}")
        return flow["result"]

    def add_wyoming(self, host: str, port: int) -> dict:
        """The Wyoming integration, added through its config flow (Settings > Devices & services >
        Add integration > Wyoming Protocol): Home Assistant asks the server to describe itself."""
        flow = self._post("/api/config/config_entries/flow", {"handler": "wyoming", "show_advanced_options": False})
        if flow.get("type") == "form" and flow.get("step_id") == "user":
            flow = self._post(f"/api/config/config_entries/flow/{flow['flow_id']}", {"host": host, "port": port})
        if flow.get("type") != "create_entry":
            raise HomeAssistantError(f"Wyoming config flow did not create an entry: {flow}")
        return flow["result"]

    def speech_to_text(self, provider: str, pcm16: bytes, language: str = "en") -> dict:
        """POST /api/stt/<provider>: 16 kHz mono 16-bit PCM through a speech-to-text entity, as Assist
        hands a pipeline's audio to it; returns {"text": ..., "result": "success" | "error"}."""
        headers = {
            "Authorization": f"Bearer {self.token}",
            "X-Speech-Content": (
                f"format=wav; codec=pcm; sample_rate=16000; bit_rate=16; channel=1; language={language}"
            ),
        }
        req = urllib.request.Request(f"{self.url}/api/stt/{provider}", data=pcm16, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            raise HomeAssistantError(f"POST /api/stt/{provider}: HTTP {e.code}: {e.read()[:500]!r}") from None

    def stop(self) -> None:
        self._ws_stack.close()
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        if getattr(self, "_out", None):
            self._out.close()

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def install_blueprint(self, src: Path, folder: str = "voxnode") -> str:
        """Copy a blueprint where `blueprint/import` would put it; returns its path for use_blueprint."""
        dest = self.config_dir / "blueprints" / "automation" / folder
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, dest / src.name)
        return f"{folder}/{src.name}"

    def set_automations(self, yaml_text: str) -> None:
        (self.config_dir / "automations.yaml").write_text(yaml_text)
        self.call("automation", "reload")

    # ---- REST -----------------------------------------------------------------------------------

    def _request(self, method: str, path: str, body: dict | None, auth: bool):
        headers = {"Content-Type": "application/json"}
        if auth:
            headers["Authorization"] = f"Bearer {self.token}"
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise HomeAssistantError(f"{method} {path}: HTTP {e.code}: {e.read()[:500]!r}") from None
        return json.loads(raw) if raw else {}

    def _get(self, path: str, auth: bool = True):
        return self._request("GET", path, None, auth)

    def _post(self, path: str, body: dict, auth: bool = True):
        return self._request("POST", path, body, auth)

    def state(self, entity_id: str) -> dict | None:
        """The entity's state object from the state machine; None when it has none."""
        return self._get(f"/api/states/{entity_id}")

    def states(self) -> list[dict]:
        return self._get("/api/states")

    def call(self, domain: str, service: str, **data) -> None:
        self._post(f"/api/services/{domain}/{service}", data)

    def render(self, template: str) -> str:
        req = urllib.request.Request(
            f"{self.url}/api/template",
            data=json.dumps({"template": template}).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.read().decode()

    # ---- websocket ------------------------------------------------------------------------------

    def _connect_ws(self) -> None:
        self._ws_stack.close()  # the previous connection, if any; its reader thread ends with it
        if self._reader is not None:
            self._reader.join(5)
        self._ws_stack = contextlib.ExitStack()
        ws = self._ws_stack.enter_context(
            ws_connect(f"ws://127.0.0.1:{self.port}/api/websocket", max_size=None, open_timeout=30, proxy=None)
        )
        hello = json.loads(ws.recv(timeout=30))
        assert hello["type"] == "auth_required", hello
        ws.send(json.dumps({"type": "auth", "access_token": self.token}))
        ok = json.loads(ws.recv(timeout=30))
        if ok["type"] != "auth_ok":
            raise HomeAssistantError(f"websocket auth failed: {ok}")
        self._ws = ws
        self._reader = threading.Thread(target=self._read, args=(ws,), daemon=True)
        self._reader.start()

    def _read(self, ws) -> None:
        try:
            for raw in ws:
                msgs = json.loads(raw)
                for msg in msgs if isinstance(msgs, list) else [msgs]:
                    with self._cond:
                        if msg.get("type") == "event":
                            self._events.setdefault(msg["id"], []).append(msg["event"])
                        else:
                            self._results[msg["id"]] = msg
                        self._cond.notify_all()
        except Exception:  # noqa: BLE001 - closed at the end of the test
            return

    def ws(self, kind: str, timeout: float = 30.0, **data):
        """One websocket command; returns its result or raises with Home Assistant's error."""
        mid = next(self._ids)
        self._ws.send(json.dumps({"id": mid, "type": kind, **data}))
        with self._cond:
            if not self._cond.wait_for(lambda: mid in self._results, timeout):
                raise HomeAssistantError(f"no answer to websocket {kind} within {timeout:.0f} s")
            msg = self._results.pop(mid)
        if not msg.get("success"):
            raise HomeAssistantError(f"websocket {kind} failed: {msg.get('error')}")
        return msg.get("result")

    def subscribe(self, event_type: str) -> list[dict]:
        """Every `event_type` event from now on, appended to the returned list as it comes."""
        mid = next(self._ids)
        with self._cond:
            self._events[mid] = []
            events = self._events[mid]
        self._ws.send(json.dumps({"id": mid, "type": "subscribe_events", "event_type": event_type}))
        with self._cond:
            if not self._cond.wait_for(lambda: mid in self._results, 30):
                raise HomeAssistantError("subscribe_events not answered")
            self._results.pop(mid)
        return events

    def events_lock(self) -> threading.Lock:
        return self._lock

    def entity_registry(self) -> list[dict]:
        return self.ws("config/entity_registry/list")

    def device_registry(self) -> list[dict]:
        return self.ws("config/device_registry/list")

    def area_registry(self) -> list[dict]:
        return self.ws("config/area_registry/list")


def wait_until(cond, timeout: float, step: float = 0.25, what: str = "condition", detail=None):
    """Poll `cond` until it returns something truthy; returns it, or raises naming `what` (and
    `detail()`, what there is to see instead)."""
    end = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > end:
            extra = f"\n{detail()}" if detail is not None else ""
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}{extra}")
        time.sleep(step)

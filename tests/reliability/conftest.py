"""The MQTT fixtures (real Mosquitto, monitor, feeder daemon) are shared with tests/mqtt."""

from tests.mqtt.conftest import broker, feeders, monitor_for, validate  # noqa: F401

"""Output name -> the module and class that implement it, and the daemon's assembly from them.

An output is imported only when its name is looked up (MQTT loads paho, Prometheus its client).
To add one: write outputs/<name>.py with an `Output` subclass (outputs/base.py) and, if it has
settings, config/<name>.py with its section (and one line in config/root.py); then one line here.
A durable output (`durable = True`) gets the spool's cursor: no queue or retry of its own to write.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from voxnode.outputs.base import Output, OutputContext

if TYPE_CHECKING:
    from voxnode.daemon import Daemon

# name -> (module, class), in fan-out order: stdout first, as `voxnode run --stdout` always printed.
OUTPUTS: dict[str, tuple[str, str]] = {
    "stdout": ("voxnode.outputs.stdout", "StdoutOutput"),
    "log": ("voxnode.outputs.stdout", "LogOutput"),
    "mqtt": ("voxnode.mqtt.bridge", "MqttBridge"),
    "prometheus": ("voxnode.health.prometheus", "PrometheusExporter"),
    "webhook": ("voxnode.outputs.webhook", "WebhookOutput"),
}


def output_class(name: str) -> type[Output]:
    module_name, class_name = OUTPUTS[name]
    cls = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(cls, type) and issubclass(cls, Output) and cls.name == name):
        raise TypeError(f"{module_name}.{class_name} is not the Output named {name!r}")
    return cls


def configured_outputs(ctx: OutputContext) -> list[Output]:
    """The outputs the config and command line ask for; raises VoxnodeError subclasses on settings
    that cannot work (before anything starts)."""
    outputs = []
    for name in OUTPUTS:
        output = output_class(name).from_context(ctx)
        if output is not None:
            outputs.append(output)
    return outputs


def add_outputs(daemon: Daemon, *, stdout: bool = False) -> None:
    """The outputs, then the `[wyoming]` server (it submits to the recognition's decode scheduler)."""
    for output in configured_outputs(OutputContext(daemon.config, daemon.reporter, stdout)):
        daemon.add_output(output)
    if daemon.config.wyoming.enabled:
        from voxnode.wyoming_stt.server import WyomingServer

        wyoming = WyomingServer(daemon.config, daemon.recognition)
        daemon.add_server(wyoming)
        daemon.reporter.add_section("wyoming", wyoming.health)

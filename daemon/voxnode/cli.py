"""The `voxnode` command line."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import shutil
import sys
import time

from voxnode import __version__
from voxnode.config import Config, load_config, loader, render_effective, render_reference
from voxnode.config.wording import in_config
from voxnode.errors import VoxnodeError
from voxnode.fleet.nodes import Limits
from voxnode.logs import setup_logging

log = logging.getLogger("voxnode")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="voxnode", description="On-device speech-to-text daemon for voice nodes.")
    p.add_argument("--version", action="version", version=f"voxnode {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def with_config(sp: argparse.ArgumentParser) -> argparse.ArgumentParser:
        sp.add_argument("--config", metavar="PATH", help="config file (default /etc/voxnode/config.toml if it exists)")
        return sp

    run = with_config(sub.add_parser("run", help="capture, transcribe and publish (the daemon)"))
    run.add_argument("--device", metavar="PCM", help="ALSA capture PCM of the single stream (overrides audio.device)")
    run.add_argument("--stdout", action="store_true", help="write every event as one JSON line on stdout")
    # nan ran for ever (no deadline compares true), a negative value stopped at once: positive only
    run.add_argument("--duration", type=_positive, metavar="S", help="stop after S seconds")
    run.add_argument("--file", metavar="WAV", help="play this file instead of capturing (real time)")
    run.add_argument("--levels", action="store_true", help="also report sound levels every second (mic check)")

    devices = sub.add_parser("devices", help="list ALSA capture devices and what they support")
    devices.add_argument("--no-probe", action="store_true", help="only list names, do not open the devices")

    check = with_config(sub.add_parser("check-config", help="validate the config and print it (secrets masked)"))
    what = check.add_mutually_exclusive_group()
    what.add_argument("--reference", action="store_true", help="print the documented default config instead")
    what.add_argument(
        "--load",
        action="store_true",
        help="also load each configured model once, as run does at start, and say how it went (no microphone)",
    )

    tr = with_config(sub.add_parser("transcribe", help="transcribe audio files (WAV, or raw with --raw)"))
    tr.add_argument(
        "files", nargs="+", metavar="FILE", help="WAV files of any rate/channels (files over 30 s are cut at pauses)"
    )
    tr.add_argument("--raw", action="store_true", help="files are headerless S16_LE 16 kHz mono")
    tr.add_argument("--json", action="store_true", help="one JSON object per file instead of plain text")
    tr.add_argument(
        "--prompt",
        metavar="TEXT",
        help="text the model reads as if said just before (names, spelling); replaces [asr] prompt",
    )
    tr.add_argument(
        "--hotwords", metavar="WORDS", help="comma-separated words or phrases made more likely; replaces [asr] hotwords"
    )
    tr.add_argument("--beam-size", type=int, metavar="N", help="beam width (1 = greedy); replaces [asr] beam_size")
    tr.add_argument(
        "--max-duration",
        type=float,
        default=None,
        metavar="S",
        help="refuse files longer than S seconds of audio (default 4 h); files are streamed, "
        "FIFOs/pipes read with a 10 s timeout, devices refused",
    )

    with_config(
        sub.add_parser(
            "mqtt-forget",
            help="remove this node's retained MQTT messages (Home Assistant drops its devices); "
            "make uninstall/purge run it",
        )
    )

    fleet = with_config(
        sub.add_parser("fleet", help="every node's status and health from the MQTT broker, as a live table")
    )
    fleet.add_argument("--once", action="store_true", help="print once; exit 1 if a node has a problem (for cron)")
    fleet.add_argument("--json", action="store_true", help="JSON instead of a table (live: one document per line)")
    fleet.add_argument("--timeout", type=_positive, default=5.0, metavar="S", help="wait for the broker (default 5)")
    fleet.add_argument("--interval", type=_positive, default=2.0, metavar="S", help="live: redraw every S (default 2)")
    limits = Limits()
    for flag, kind, default, metavar, meaning in (
        ("--stall-after", _positive, limits.stall_s, "S", "a stream with no audio for S counts as stalled"),
        ("--latency-target", _positive, limits.latency_p95_s, "S", "a final latency p95 above S is a problem"),
        ("--backlog-max", _count, limits.backlog, "N", "more than N finals waiting for the broker is a problem"),
    ):
        fleet.add_argument(flag, type=kind, default=default, metavar=metavar, help=f"{meaning} (default {default:g})")

    adapt = sub.add_parser(
        "adapt",
        add_help=False,
        help="fine-tune Whisper tiny.en on this room's noise (build-time venv; `voxnode adapt --help`)",
    )
    adapt.add_argument("args", nargs=argparse.REMAINDER)  # all of them go to the tool (main())

    demo = with_config(sub.add_parser("demo", help="run on a bundled speech clip through a real ALSA PCM"))
    demo.add_argument("--stdout", action="store_true", help="write every event as one JSON line on stdout")
    demo.add_argument("--clip", metavar="WAV", help="play this file instead of the bundled clip")
    return p


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (value > 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number of seconds")
    return value


def _count(text: str) -> int:
    # -1 made every node a problem (a backlog of 0 is more than -1), without a word
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or more")
    return value


# Options whose empty value can only be a mistake (`--device "$MIC"` with MIC unset), and what to give
# instead. Before, `run --device ""` and `run --file ""` were ignored (run captured from audio.device),
# `demo --clip ""` played the bundled clip and `--config ""` said "config file . is a directory". An
# empty --prompt or --hotwords is meant: it clears [asr] prompt or hotwords (a test walks the parser
# and finds each string option in one of the two).
NOT_EMPTY = {
    "config": ("--config", f"name a config file, or leave --config out for {loader.DEFAULT_PATH}"),
    "device": ("--device", "name an ALSA capture PCM (`voxnode devices` lists them), or leave --device out"),
    "file": ("--file", "name a WAV file, or leave --file out to capture from the device"),
    "clip": ("--clip", "name a WAV file, or leave --clip out for the bundled clip"),
}
MAY_BE_EMPTY = ("prompt", "hotwords")


def refuse_empty(args: argparse.Namespace) -> None:
    """A VoxnodeError for the first option of NOT_EMPTY given as ""."""
    for dest, (option, instead) in NOT_EMPTY.items():
        if getattr(args, dest, None) == "":
            raise VoxnodeError(f'{option} "": is empty; {instead}')


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["adapt"]:  # every option belongs to the tool, --help included
        args = argparse.Namespace(command="adapt", args=argv[1:])
    else:
        args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        refuse_empty(args)
        code = COMMANDS[args.command](args)
        sys.stdout.flush()  # here, not at exit, so that a reader that has gone is handled below
        return code
    except VoxnodeError as e:
        print(f"voxnode: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `voxnode devices | head -1`: the reader left; no traceback. What is still buffered goes to
        # /dev/null, or the flush at exit fails again (the recipe of Python's signal module docs).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _load(args: argparse.Namespace) -> Config:
    config = load_config(getattr(args, "config", None))
    setup_logging(config.log)
    return config


def cmd_check_config(args: argparse.Namespace) -> int:
    if args.reference:
        sys.stdout.write(render_reference())
        return 0
    config = load_config(args.config)
    # The files and models the config refers to, checked as `voxnode run` checks them at start.
    from voxnode.preflight import check_runnable

    check_runnable(config)
    if args.load:  # the models themselves, as run loads them (voxnode/load_check.py)
        from voxnode.load_check import load_each

        for line in load_each(config):
            print(f"# {line}", file=sys.stderr)
    sys.stdout.write(render_effective(config))
    for warning in config.warnings():  # left over, loaded anyway: run and a reload log the same lines
        print(f"voxnode: warning: {warning}", file=sys.stderr)
    # Which one was read, in the errors' words (it said "built-in defaults or /etc/voxnode/config.toml"
    # when no --config, then "built-in defaults: there is no ..." where errors say "(there is no ...)").
    print(f"# config OK: {config.source}", file=sys.stderr)  # no "(... (there is no ...))"
    return 0


def cmd_devices(args: argparse.Namespace) -> int:
    from voxnode.audio.devices import format_devices, list_capture_devices

    print(format_devices(list_capture_devices(probe=not args.no_probe), probed=not args.no_probe))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from voxnode.daemon import Daemon, RunOptions
    from voxnode.outputs.table import add_outputs
    from voxnode.reload import config_loader, running_config
    from voxnode.systemd.hooks import systemd_hooks

    if args.device is not None and args.file is not None:  # before: --device was ignored without a word
        raise VoxnodeError(
            f"--device {args.device!r} and --file cannot be used together: --file plays the file "
            "instead of capturing; leave one out"
        )
    config = running_config(_load(args), args.device, log)
    if args.file is not None:
        from voxnode.audio.sources import check_file

        check_file(args.file)  # before the models load (seconds on a Pi)
    options = RunOptions(duration_s=args.duration, file=args.file, levels=args.levels)
    # SIGHUP re-reads the same file with the same overrides.
    reloader = config_loader(args.config, args.device)
    daemon = Daemon(config, [], options, hooks=systemd_hooks(), reloader=reloader)
    try:
        add_outputs(daemon, stdout=args.stdout)  # MQTT reads its password and TLS files here
        return daemon.run()
    except VoxnodeError as e:  # a setting that cannot work: named with the config file, as check-config does
        raise in_config(e, config.source) from None


def cmd_demo(args: argparse.Namespace) -> int:
    from voxnode import demo
    from voxnode.daemon import Daemon, RunOptions
    from voxnode.lifecycle import Component, start_all, stop_all
    from voxnode.outputs.table import add_outputs

    config = _load(args)
    if config.streams:
        config = dataclasses.replace(config, streams=())
    work, feeder, seconds = demo.prepare(args.clip)
    config = demo.with_name_hotword(config.with_device(demo.DEMO_PCM), args.clip)
    broker, config = demo.mqtt_setup(config, work)  # a local Mosquitto when no broker is configured
    printer = demo.MqttPrinter(config, sys.stderr if args.stdout else sys.stdout)
    log.info("demo: playing %s through ALSA PCM %r (%.1f s)", args.clip or "the bundled clip", demo.DEMO_PCM, seconds)
    started: list[Component] = [broker] if broker is not None else []
    try:
        start_all([feeder, printer])
        started += [feeder, printer]
        daemon = Daemon(config, [], RunOptions(duration_s=seconds, levels=True))
        add_outputs(daemon, stdout=args.stdout)
        return daemon.run()
    finally:
        stop_all(started, time.monotonic() + demo.STOP_S)  # the printer, the feeder, then the broker
        shutil.rmtree(work, ignore_errors=True)


def cmd_adapt(args: argparse.Namespace) -> int:
    from voxnode import adapt_tool

    return adapt_tool.run(args.args)


def cmd_fleet(args: argparse.Namespace) -> int:
    from voxnode.fleet.waits import Waits

    with Waits().taking_ctrl_c() as waits:  # before paho loads (see fleet/waits.py, voxnode/__main__.py)
        from voxnode.fleet.command import FleetOptions, run_fleet

        config = _load(args)
        limits = Limits(stall_s=args.stall_after, latency_p95_s=args.latency_target, backlog=args.backlog_max)
        options = FleetOptions(
            once=args.once, as_json=args.json, timeout_s=args.timeout, interval_s=args.interval, limits=limits
        )
        return run_fleet(config.mqtt, args.config or "the config", options, waits=waits)


def cmd_transcribe(args: argparse.Namespace) -> int:
    from voxnode.asr.backends import load_recognizer
    from voxnode.asr.transcribe import readable_files, transcribe_files
    from voxnode.audio.audio_stream import MAX_SECONDS
    from voxnode.stream.params import frontend_params

    limit = MAX_SECONDS if args.max_duration is None else args.max_duration
    if not 0 < limit < float("inf"):
        raise VoxnodeError(f"--max-duration {args.max_duration}: must be a positive number of seconds")
    config = _load(args)
    overrides: dict = {}
    if args.prompt is not None:
        overrides["prompt"] = args.prompt
    if args.hotwords is not None:
        overrides["hotwords"] = tuple(w.strip() for w in args.hotwords.split(",") if w.strip())
    if args.beam_size is not None:
        if not 1 <= args.beam_size <= 8:
            raise VoxnodeError(f"--beam-size {args.beam_size}: must be between 1 and 8")
        overrides["beam_size"] = args.beam_size
    asr = dataclasses.replace(config.asr, **overrides)
    # The files' headers before the model (it loaded first, and `transcribe typo.wav` waited for it).
    files = readable_files(args.files, raw=args.raw, max_seconds=limit)
    if not files:
        return 1
    try:
        engine = load_recognizer(asr)
    except VoxnodeError as e:
        raise in_config(e, config.source) from None
    with engine:
        status = transcribe_files(
            engine, files, raw=args.raw, as_json=args.json, max_seconds=limit, frontend=frontend_params(config)
        )
    return 1 if len(files) < len(args.files) else status


def cmd_mqtt_forget(args: argparse.Namespace) -> int:
    from voxnode.mqtt.forget import forget

    config = _load(args)
    if not config.mqtt.enabled:
        print("voxnode mqtt-forget: mqtt.enabled is false in the config; no broker to clean up", file=sys.stderr)
        return 0
    cleared = forget(config)
    for topic in cleared:
        print(f"cleared {topic}")
    print(f"voxnode mqtt-forget: {len(cleared)} retained message(s) removed from {config.mqtt.host}", file=sys.stderr)
    return 0


COMMANDS = {
    "run": cmd_run,
    "devices": cmd_devices,
    "check-config": cmd_check_config,
    "demo": cmd_demo,
    "transcribe": cmd_transcribe,
    "mqtt-forget": cmd_mqtt_forget,
    "fleet": cmd_fleet,
    "adapt": cmd_adapt,
}

import dataclasses
import json
import re
import subprocess
import typing

import pytest

from tests.alsa_env import ROOT
from voxnode.config import Config, load_config, parse_config, render_reference
from voxnode.config.root import Config as RootConfig
from voxnode.errors import ConfigError

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)

BAD_CONFIGS = {
    "unknown key": ('[audio]\ndevise = "hw:1"\n', "audio.devise", "did you mean 'device'"),
    "wrong type": ('[audio]\nring_seconds = "ten"\n', "audio.ring_seconds", "expected a number"),
    "out of range": ("[audio]\nbuffer_periods = 1000\n", "audio.buffer_periods", "between 2 and 64"),
    "TOML syntax": ("[audio\ndevice = 1\n", "TOML syntax error", "line 1"),
    "bad choice": ('[log]\nlevel = "loud"\n', "log.level", '"debug", "info", "warning", "error"'),
    "bad vad engine": ('[vad]\nengine = "neural"\n', "vad.engine", '"webrtc", "spectral", "both", "silero"'),
    "silero threshold": ("[vad]\nsilero_threshold = 1.5\n", "vad.silero_threshold", "between 0.2 and 0.9"),
    "unknown section": ("[audoi]\n", "'audoi'", "did you mean 'audio'"),
    # Before: "did you mean 'service'?" and the list of the top level's keys, not where the key goes.
    "section header missing": ('device = "hw:1"\n', "'device' in the top level", "a key of [audio] and [[streams]]"),
    "key under another section": ('[audio]\nmodel = "base"\n', "'audio.model' in [audio]", "it is a key of [asr]"),
    "stream without device": ('[[streams]]\nname = "k"\n', "streams[0].device", "required"),
    "duplicate stream": (
        '[[streams]]\nname = "k"\ndevice = "a"\n[[streams]]\nname = "k"\ndevice = "b"\n',
        'streams[1].name = "k"',
        "streams[0] has this name too",
    ),
    "bad stream name": ('[[streams]]\nname = "kit chen"\ndevice = "a"\n', "streams[0].name", "must match"),
    "bad denoise mode": ('[frontend]\ndenoise = "loud"\n', "frontend.denoise", '"off", "vad", "all"'),
    # Before (stop 46): both passed check-config, run and a reload; [audio]'s echo reference was dropped
    # without a word, and a stream cancelled another microphone's speech from its own.
    "[audio] echo_reference beside [[streams]]": (
        '[audio]\necho_reference = "hw:Loopback,1"\n[[streams]]\nname = "k"\ndevice = "hw:1"\n',
        'audio.echo_reference = "hw:Loopback,1"',
        "not used with [[streams]]",
    ),
    "echo reference is another stream's microphone": (
        '[[streams]]\nname = "k"\ndevice = "hw:1"\necho_reference = "hw:2"\n[[streams]]\nname = "h"\ndevice = "hw:2"\n',
        'streams[0].echo_reference = "hw:2"',
        'is the microphone of streams[1] ("h")',
    ),
    "language in capitals": ('[asr]\nlanguage = "EN"\n', 'asr.language = "EN"', "lower-case Whisper language code"),
}


@pytest.mark.parametrize("case", list(BAD_CONFIGS))
def test_check_config_rejects_with_one_line_naming_the_key(case, tmp_path, voxnode_cmd):
    text, key, detail = BAD_CONFIGS[case]
    f = tmp_path / "bad.toml"
    f.write_text(text)
    p = subprocess.run(voxnode_cmd + ["check-config", "--config", str(f)], capture_output=True, text=True)
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert "Traceback" not in p.stderr
    assert str(f) in lines[0] and key in lines[0] and detail in lines[0], lines[0]
    assert p.stdout == ""


@pytest.mark.parametrize("value, mode", [("true", "all"), ("false", "off"), ('"vad"', "vad"), ('"all"', "all")])
def test_denoise_accepts_the_old_booleans(value, mode):
    # frontend.denoise was a boolean (true = denoise what recognition hears); configs written then still load.
    assert parse_config(f"[frontend]\ndenoise = {value}\n").frontend.denoise == mode


def test_check_config_prints_effective_config(tmp_path, voxnode_cmd):
    f = tmp_path / "ok.toml"
    f.write_text('[audio]\ndevice = "plughw:1,0"\nring_seconds = 5\n')
    p = subprocess.run(voxnode_cmd + ["check-config", "--config", str(f)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    # The printed config is itself valid and equal to what was loaded.
    again = parse_config(p.stdout)
    assert again == load_config(f)
    assert again.audio.device == "plughw:1,0" and again.audio.ring_seconds == 5.0


def test_missing_explicit_config_is_an_error(tmp_path, voxnode_cmd):
    p = subprocess.run(
        voxnode_cmd + ["check-config", "--config", str(tmp_path / "nope.toml")], capture_output=True, text=True
    )
    assert p.returncode == 1
    assert "nope.toml does not exist" in p.stderr and "Traceback" not in p.stderr


def test_default_path_missing_means_defaults(monkeypatch, tmp_path):
    import voxnode.config.loader as loader

    monkeypatch.setattr(loader, "DEFAULT_PATH", tmp_path / "absent.toml")
    assert load_config() == Config()


@pytest.mark.parametrize("exists", [False, True])
def test_check_config_says_which_config_it_read(monkeypatch, tmp_path, capsys, exists):
    """Without --config: the default file, or the built-in defaults when it does not exist, in the words
    of the errors (Config.source). Before, both said "config OK (built-in defaults or
    /etc/voxnode/config.toml)", then "built-in defaults: there is no ..." where errors said "(there is no ...)"."""
    import voxnode.config.loader as loader
    from voxnode.cli import main

    default = tmp_path / "config.toml"
    if exists:
        default.write_text('[audio]\ndevice = "vx_from_the_file"\n')
    monkeypatch.setattr(loader, "DEFAULT_PATH", default)
    assert main(["check-config"]) == 0
    out, err = capsys.readouterr()
    assert ('device = "vx_from_the_file"' in out) == exists
    said = str(default) if exists else f"built-in defaults (there is no {default})"
    assert err.splitlines()[-1] == f"# config OK: {said}", err


def _preflight_cases(d):
    """(config text, what check-config says after "<file>: "): the checks beyond the file (voxnode.preflight)
    and the checks across keys. Before, the first ones did not name the file and quoted the value as
    Python does ('...'); the others said "wake.model: is 'x': ..." and "audio.channel = 3: is 3 but ..."."""
    (d / "empty_model").mkdir()
    (d / "spool_dir").mkdir()
    return [
        (
            '[asr]\nmodel_dir = "/nonexistent/model"\n',
            'asr.model_dir = "/nonexistent/model": /nonexistent/model does not exist',
        ),
        # Before: "<d>/empty_model/manifest.json: missing; ..." without the key or the file.
        (
            f'[asr]\nmodel = "{d}/empty_model"\n',
            f'asr.model = "{d}/empty_model": {d}/empty_model/manifest.json: missing; '
            f"{d}/empty_model is not a converted model directory",
        ),
        (
            f'[mqtt]\nenabled = true\nusername = "u"\npassword_file = "{d}/pw"\n',
            f'mqtt.password_file = "{d}/pw": does not exist',
        ),
        (
            f'[mqtt]\nenabled = true\ntls = true\ntls_ca = "{d}/ca.pem"\n',
            f'mqtt.tls_ca = "{d}/ca.pem": does not exist',
        ),
        (
            f'[delivery]\nspool_path = "{d}/spool_dir"\n',
            f'delivery.spool_path = "{d}/spool_dir": {d}/spool_dir is a folder; name the spool\'s file in it '
            f"(e.g. {d}/spool_dir/spool.sqlite)",
        ),
        (
            '[wake]\nenabled = true\nconfirm = "openwakeword"\n',
            'wake.confirm = "openwakeword": gives a second opinion on alexa only; the stream listens for okay_nabu',
        ),
        (
            f'[wake]\nenabled = true\nmodel = "{d}/none.json"\n',
            f'wake.model = "{d}/none.json": manifest {d}/none.json does not exist',
        ),
        (
            '[wake]\nmodel = "hey_siri"\n',
            'wake.model = "hey_siri": not a shipped model (okay_nabu, hey_jarvis, hey_mycroft, alexa) '
            "nor a path to a model's JSON manifest",
        ),
        (
            '[[streams]]\nname = "a"\ndevice = "x"\nwake = "alexa,siri"\n',
            'streams[0].wake = "alexa,siri": "siri" is not a shipped model (okay_nabu, hey_jarvis, hey_mycroft, '
            "alexa) nor a path to a model's JSON manifest",
        ),
        (
            "[audio]\nchannels = 2\nchannel = 3\n",
            "audio.channel = 3: must be less than channels (2): the device is opened with 2 channels, numbered from 0",
        ),
        (
            '[[streams]]\nname = "a"\ndevice = "x"\n[[streams]]\nname = "a"\ndevice = "y"\n',
            'streams[1].name = "a": streams[0] has this name too; give each stream its own',
        ),
        (
            '[audio]\ndevice = ""\n',
            'audio.device = "": no microphone, and [wyoming] is not enabled: there is nothing to do; '
            "set audio.device, add [[streams]] or enable [wyoming]",
        ),
    ]


def test_check_config_names_the_file_and_the_key_as_the_loader_does(tmp_path, capsys):
    from voxnode.cli import main

    for i, (text, said) in enumerate(_preflight_cases(tmp_path)):
        f = tmp_path / f"c{i}.toml"
        f.write_text(text)
        assert main(["check-config", "--config", str(f)]) == 1, text
        out, err = capsys.readouterr()
        assert (out, err) == ("", f"voxnode: error: {f}: {said}\n")


@pytest.mark.parametrize(
    ("model", "text"),
    [
        ("silero-vad-v6", ""),  # vad.engine = "silero", the default
        ("deepfilternet3", '[frontend]\ndenoise = "asr"\n'),
    ],
)
def test_check_config_finds_a_damaged_front_end_model_as_run_does(model, text, monkeypatch, tmp_path, capsys):
    """A front-end model whose file does not match its SHA256SUMS (a bad SD card sector). Before:
    check-config and a reload passed it, and `run` stopped on the line when the stream started."""
    import shutil

    import voxnode.models.find as find
    from voxnode.cli import main

    shipped = find.find_model(model, "test")
    damaged = tmp_path / "models" / model
    shutil.copytree(shipped, damaged)
    graph = sorted(damaged.glob("*.tflite"))[0]
    data = bytearray(graph.read_bytes())
    data[1000] ^= 0xFF
    graph.write_bytes(bytes(data))
    roots = find.model_roots()
    monkeypatch.setattr(find, "model_roots", lambda: [tmp_path / "models", *roots])  # found first
    f = tmp_path / "c.toml"
    f.write_text(text)
    assert main(["check-config", "--config", str(f)]) == 1
    setting = 'vad.engine = "silero"' if model.startswith("silero") else 'frontend.denoise_engine = "deepfilter"'
    said = f"voxnode: error: {f}: {setting}: {graph} is corrupt (sha256 does not match SHA256SUMS); reinstall voxnode\n"
    assert capsys.readouterr() == ("", said)


def test_without_a_config_file_the_messages_say_built_in_defaults(monkeypatch, tmp_path, capsys):
    import voxnode.config.loader as loader
    import voxnode.models.find as find
    from voxnode.cli import main

    monkeypatch.setattr(loader, "DEFAULT_PATH", tmp_path / "config.toml")
    monkeypatch.setattr(find, "model_roots", lambda: [tmp_path])  # no speech model anywhere
    assert main(["check-config"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"voxnode: error: built-in defaults (there is no {tmp_path / 'config.toml'}): "
        f'asr.model = "tiny.en": no speech model found; looked in {tmp_path / "whisper-tiny.en"} '
        "(set asr.model_dir in the config)\n"
    )


def test_config_is_immutable():
    c = Config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.audio.device = "x"  # type: ignore[misc]


def test_reference_file_is_in_sync_and_loads_to_defaults():
    shipped = (ROOT / "config" / "voxnode.toml").read_text()
    assert shipped == render_reference(), "run `make config-reference` after changing settings"
    assert parse_config(shipped) == RootConfig()


def test_every_setting_is_documented():
    import dataclasses

    def walk(cls):
        for f in dataclasses.fields(cls):
            assert f.metadata.get("doc"), f"{cls.__name__}.{f.name} has no doc"
            if f.metadata.get("section"):
                walk(f.type if isinstance(f.type, type) else type(f.default_factory()))
            if f.metadata.get("table_list"):
                walk(f.metadata["table_list"])

    walk(RootConfig)


def test_streams_resolve_and_device_override():
    c = Config()
    (s,) = c.effective_streams()
    assert (s.name, s.device) == ("mic", "default")
    assert c.with_device("hw:2").effective_streams()[0].device == "hw:2"
    multi = parse_config('[[streams]]\nname = "a"\ndevice = "x"\nchannel = 1\n')
    assert multi.effective_streams()[0].open_channels == 2
    with pytest.raises(ConfigError, match="--device"):
        multi.with_device("hw:2")


def test_echo_reference_reaches_the_stream_and_turns_the_echo_canceller_on():
    from voxnode.stream.params import pipeline_params

    single = parse_config('[audio]\ndevice = "hw:1"\necho_reference = "hw:Loopback,1"\n')
    assert single.effective_streams()[0].echo_reference == "hw:Loopback,1"
    fe = pipeline_params(single, "mic").frontend
    assert fe.echo_reference and fe.echo_cancel == "speex"
    multi = parse_config(
        '[frontend]\necho_cancel = "off"\n[[streams]]\nname = "a"\ndevice = "x"\necho_reference = "mon"\n'
        '[[streams]]\nname = "b"\ndevice = "y"\n'
    )
    assert pipeline_params(multi, "a").frontend.echo_reference and multi.frontend.echo_cancel == "off"
    assert not pipeline_params(multi, "b").frontend.echo_reference
    with pytest.raises(ConfigError, match=r"streams\[0\]\.echo_reference.*own device"):
        parse_config('[[streams]]\nname = "a"\ndevice = "x"\necho_reference = "x"\n')
    # The single stream too (before: it passed, the microphone its own echo reference; [[streams]] refused it).
    with pytest.raises(ConfigError, match=r'^c: audio\.echo_reference = "hw:1": must not be the microphone.s own'):
        parse_config('[audio]\ndevice = "hw:1"\necho_reference = "hw:1"\n', "c")


# Config keys the docs name in code spans: `asr.beam_size`, `--set vad.tail_ms=40`, `streams[0].wake`,
# `[asr] model`, `[asr] language = "fr"`. A key renamed or removed in the code and not in the docs left
# them naming a setting that the loader refuses (stop 44's audit compared them by hand).
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CODE_SPAN = re.compile(r"`([^`\n]+)`")


def _sections() -> dict[str, set[str]]:
    """Each section's keys, with the old names still accepted (`formerly`: mqtt.spool_path)."""
    hints = typing.get_type_hints(RootConfig)
    out: dict[str, set[str]] = {}
    for f in dataclasses.fields(RootConfig):
        if f.metadata.get("not_a_key"):  # Config.source: where it was read
            continue
        settings = dataclasses.fields(f.metadata.get("table_list") or hints[f.name])
        out.setdefault(f.name, set()).update(s.name for s in settings)
        for s in settings:
            if s.metadata.get("formerly"):
                old_section, old_key = s.metadata["formerly"].split(".")
                out.setdefault(old_section, set()).add(old_key)
    return out


def _health_fields() -> dict[str, set[str]]:
    """Health's fields by part (`mqtt.spool_writable`): the docs name them like config keys."""
    schema = json.loads((ROOT / "docs" / "schemas" / "health.json").read_text())
    out: dict[str, set[str]] = {}
    for part, spec in schema["properties"].items():
        for option in [spec, *spec.get("anyOf", [])]:
            out.setdefault(part, set()).update(option.get("properties", {}))
    return out


def test_config_keys_named_in_the_docs_exist():
    sections, health = _sections(), _health_fields()
    names = "|".join(sections)
    dotted = re.compile(rf"(?<![\w./-])({names})(?:\[\d*\])?\.([a-z_][a-z0-9_]*)(?![\w(.])")
    table = re.compile(rf"\[\[?({names})\]\]? +([a-z_][a-z0-9_]*)( *=.*)?")
    checked, wrong = 0, []
    for doc in DOC_FILES:
        for n, line in enumerate(doc.read_text().splitlines(), 1):
            for span in CODE_SPAN.findall(line):
                found = [m.groups()[:2] for m in dotted.finditer(span)]
                if m := table.fullmatch(span):
                    found.append(m.groups()[:2])
                for section, key in found:
                    if key == "py":  # a script: `asr.py --section ...`
                        continue
                    checked += 1
                    if key not in sections[section] and key not in health.get(section, ()):
                        wrong.append(f"{doc.relative_to(ROOT)}:{n}: {section}.{key}")
    assert checked > 200, checked  # the patterns still find the docs' keys (279 in stop 44)
    assert not wrong, "keys the config does not have:\n" + "\n".join(wrong)


def test_a_long_value_is_shown_by_its_start_and_length():
    """Before: a 70000-character client_id made a 70 KB error line."""
    with pytest.raises(ConfigError) as e:
        parse_config('[mqtt]\nclient_id = "' + "c" * 70000 + '"\n', "c.toml")
    said = f'c.toml: mqtt.client_id = "{"c" * 200}..." (70000 characters): is 70000 bytes long; MQTT takes'
    assert str(e.value).startswith(said), str(e.value)[:300]
    for n, shown in ((200, f'"{"n" * 200}"'), (201, f'"{"n" * 200}..." (201 characters)')):
        with pytest.raises(ConfigError) as e:
            parse_config(f'[[streams]]\nname = "{"n" * n}"\ndevice = "x"\n', "c.toml")
        assert str(e.value) == f"c.toml: streams[0].name = {shown}: must match [A-Za-z0-9_-]{{1,32}}", e.value


def test_wyoming_and_prometheus_on_one_port_are_refused():
    """Before: check-config passed, and `run` stopped on "cannot listen (Address already in use ...); is
    another Wyoming server (wyoming-faster-whisper) using the port?", its own Prometheus endpoint."""
    both = "[wyoming]\nenabled = true\nport = 9464\n[health]\nprometheus = true\n"
    with pytest.raises(ConfigError) as e:
        parse_config(both, "c.toml")  # 0.0.0.0 (Wyoming's default) takes 127.0.0.1 (Prometheus') too
    assert str(e.value) == "c.toml: wyoming.port = 9464: health.prometheus_port is the same port; give each its own"
    parse_config(both.replace("port = 9464", "port = 10300"), "c.toml")
    apart = both.replace("port = 9464", 'port = 9464\nhost = "127.0.0.2"')
    assert parse_config(apart, "c.toml").wyoming.host == "127.0.0.2"  # two addresses: both can listen


def test_a_device_override_that_is_the_echo_reference_is_refused():
    """`voxnode run --device hw:1` with audio.echo_reference = "hw:1": the file's rule (the microphone
    is not its own echo reference) holds for the override too; before, it passed."""
    config = parse_config('[audio]\ndevice = "hw:0"\necho_reference = "hw:1"\n', "c.toml")
    with pytest.raises(ConfigError, match=r"^--device 'hw:1' is audio.echo_reference too"):
        config.with_device("hw:1")
    assert config.with_device("hw:2").audio.device == "hw:2"

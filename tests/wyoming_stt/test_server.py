"""The Wyoming server against wyoming's own client (AsyncTcpClient), a real `voxnode run` with no
microphone, the real engine and real recorded speech (pocketsphinx-testdata)."""

from __future__ import annotations

import asyncio
import json
import signal
import socket

import numpy as np
import pytest
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info

from scripts.bench import audio_corpus as ac
from scripts.bench import speech_corpus as sc
from scripts.bench.wyoming_client import WyomingDaemon, clip, pcm, transcribe
from voxnode.asr.wer import wer
from voxnode.config import parse_config
from voxnode.errors import ConfigError

pytestmark = pytest.mark.skipif(
    not (sc.PS_DATA.exists() and ac.have_espeak()), reason="needs pocketsphinx-testdata, espeak-ng, sox"
)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = WyomingDaemon(
        tmp_path_factory.mktemp("wyoming"), max_audio_s=10.0, max_clients=6, idle_timeout_s=5.0, name="hall stt"
    )
    yield d
    assert d.stop() == 0, d.log()
    assert "Traceback" not in d.log()


def run(coro):
    return asyncio.run(coro)


def test_describe_names_the_model_and_language(daemon):
    async def describe():
        async with AsyncTcpClient("127.0.0.1", daemon.port) as c:
            await c.write_event(Describe().event())
            return Info.from_event(await asyncio.wait_for(c.read_event(), 10))

    info = run(describe())
    (asr,) = info.asr
    # wyoming.name: Home Assistant names the service after the program (tests/ha: the default name).
    assert asr.name == "hall stt" and asr.installed and asr.supports_transcript_streaming
    (model,) = asr.models
    assert model.name == "whisper-tiny.en" and model.languages == ["en"]
    assert "voxnode running: 0 stream(s)" in daemon.log()  # no microphone: the server alone


@pytest.mark.parametrize("rate,width,channels", [(16000, 2, 1), (44100, 3, 2), (8000, 1, 1), (48000, 4, 1)])
def test_a_real_recording_in_any_format_is_transcribed(daemon, rate, width, channels):
    text, audio = clip("0880")  # "he was not an ill disposed young man"
    ex = run(transcribe(daemon.port, pcm(audio, rate, width, channels), rate, width, channels))
    assert ex.error is None, ex.error
    assert ex.types[0] == "transcript-start" and ex.types[-2:] == ["transcript", "transcript-stop"], ex.types
    assert wer(text, ex.text) <= 0.3, ex.text  # tiny.en hears "ill disposed" as "old-sposed" (2 of 8 words)


def test_partials_stream_as_transcript_chunks_while_the_client_talks(daemon):
    text, audio = clip("0920")  # 6 s: "had he married a more amiable woman ..."
    ex = run(transcribe(daemon.port, pcm(audio), pace=True))
    assert ex.error is None, ex.error
    assert ex.chunks_before_stop >= 1, ex.types  # partials arrived before audio-stop was sent
    first_chunk, final = ex.types.index("transcript-chunk"), ex.types.index("transcript")
    assert ex.types[0] == "transcript-start" and first_chunk < final and ex.types[-1] == "transcript-stop"
    assert all(t == "transcript-chunk" for t in ex.types[first_chunk:final])
    assert wer(text, ex.text) <= 0.25, ex.text
    assert wer(ex.text, "".join(ex.chunks)) <= 0.2, (ex.chunks, ex.text)  # the chunks join into the transcript


def test_bad_input_gets_an_error_event_and_the_server_carries_on(daemon):
    async def raw(lines: bytes) -> list[dict]:
        reader, writer = await asyncio.open_connection("127.0.0.1", daemon.port)
        writer.write(lines)
        await writer.drain()
        out = []
        while line := await asyncio.wait_for(reader.readline(), 10):
            header = json.loads(line)
            if header.get("data_length"):
                header["data"] = json.loads(await reader.readexactly(header["data_length"]))
            out.append(header)
        writer.close()
        return out  # read until the server closed the connection

    garbage = run(raw(b"hello wyoming\n"))
    assert [(e["type"], e["data"]["code"]) for e in garbage] == [("error", "bad-event")]
    huge = run(raw(b'{"type": "audio-chunk", "payload_length": 1000000000}\n'))
    assert huge[0]["data"]["code"] == "bad-event" and "payload_length" in huge[0]["data"]["text"]
    early = run(raw(b'{"type": "audio-chunk", "data": {"rate": 16000, "width": 2, "channels": 1}}\n'))
    assert early[0]["data"]["code"] == "no-audio-start"

    _, audio = clip("0880")
    ex = run(transcribe(daemon.port, pcm(audio, 16000, 2, 1), 16000, 5, 1))
    assert ex.error["code"] == "bad-audio-format" and "width 5" in ex.error["text"]
    ex = run(transcribe(daemon.port, pcm(audio), language="de"))
    assert ex.error["code"] == "unsupported-language"
    long = np.concatenate([audio] * 4)  # 12 s > wyoming.max_audio_s = 10
    ex = run(transcribe(daemon.port, pcm(long)))
    assert ex.error["code"] == "audio-too-long" and "wyoming.max_audio_s" in ex.error["text"]
    assert ex.text is None

    text, audio = clip("005")
    ex = run(transcribe(daemon.port, pcm(audio)))  # still serving
    assert ex.error is None and wer(text, ex.text) <= 0.2, ex.text


def test_four_concurrent_clients_and_one_that_leaves_mid_request(daemon):
    clips = [clip(n) for n in ("0880", "0930", "005", "0890")]

    async def together():
        leaver = transcribe(daemon.port, pcm(clips[0][1]), pace=True, stop_after_s=1.0)
        served = [transcribe(daemon.port, pcm(a), pace=True) for _, a in clips]
        return await asyncio.gather(leaver, *served)

    _, *exchanges = run(together())
    for (text, _), ex in zip(clips, exchanges, strict=True):
        assert ex.error is None, ex.error
        assert wer(text, ex.text) <= 0.25, (text, ex.text)
    assert "client left in the middle of a request" in daemon.log()
    ex = run(transcribe(daemon.port, pcm(clips[2][1])))
    assert ex.error is None and wer(clips[2][0], ex.text) <= 0.2


def test_connections_without_a_request_hold_no_slot(daemon):
    async def crowd():
        clients = [AsyncTcpClient("127.0.0.1", daemon.port) for _ in range(7)]
        for c in clients:
            await c.connect()
            await c.write_event(Describe().event())
            await asyncio.sleep(0.05)  # accepted in this order
        answers = [await asyncio.wait_for(c.read_event(), 10) for c in clients]
        for c in clients:
            await c.disconnect()
        return answers

    answers = run(crowd())
    # wyoming.max_clients = 6 counts requests with audio (tests/wyoming_stt/test_limits.py), not connections.
    assert [a.type for a in answers] == ["info"] * 7


def test_a_request_in_flight_at_shutdown_still_gets_its_transcript(tmp_path):
    d = WyomingDaemon(tmp_path)
    text, audio = clip("0870")  # 7 s: its final decode is still running when SIGTERM comes

    async def stop_after_audio_stop():
        task = asyncio.create_task(transcribe(d.port, pcm(audio)))
        while "wyoming:1: final submitted" not in d.log():
            await asyncio.sleep(0.005)
        d.proc.send_signal(signal.SIGTERM)
        return await task

    ex = run(stop_after_audio_stop())
    assert d.stop() == 0
    log = d.log()
    assert ex.error is None and wer(text, ex.text) <= 0.25, (ex.types, log)
    # SIGTERM came before the answer: the shutdown waited for it.
    assert log.index("stop requested") < log.index("stop -> transcript"), log


def test_no_microphone_needs_the_wyoming_server():
    with pytest.raises(
        ConfigError, match=r'^<config>: audio.device = "": no microphone, and \[wyoming\] is not enabled'
    ):
        parse_config('[audio]\ndevice = ""\n')
    assert parse_config('[audio]\ndevice = ""\n[wyoming]\nenabled = true\n').effective_streams() == ()


def test_a_port_in_use_stops_start_up_with_a_clear_error(tmp_path, voxnode_cmd):
    import subprocess

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cfg = tmp_path / "c.toml"
        cfg.write_text(f'[audio]\ndevice = ""\n[wyoming]\nenabled = true\nhost = "127.0.0.1"\nport = {port}\n')
        p = subprocess.run([*voxnode_cmd, "run", "--config", str(cfg)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    # The loader's shape, the config file and the key at fault (before: "wyoming.host/port = 127.0.0.1:N",
    # without the file, and "(while attempting to bind on address ...)" inside the cause).
    assert p.stderr.splitlines()[-1] == (
        f"voxnode: error: {cfg}: wyoming.port = {port}: cannot listen on 127.0.0.1:{port} (Address already in "
        "use); is another Wyoming server (wyoming-faster-whisper) using the port?"
    ), p.stderr


def test_an_address_not_on_this_machine_is_not_blamed_on_another_server(tmp_path, voxnode_cmd):
    """Before, every failure to listen asked whether another Wyoming server had the port."""
    import subprocess

    cfg = tmp_path / "c.toml"
    cfg.write_text('[audio]\ndevice = ""\n[wyoming]\nenabled = true\nhost = "192.0.2.1"\n')  # TEST-NET-1
    p = subprocess.run([*voxnode_cmd, "run", "--config", str(cfg)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    line = p.stderr.splitlines()[-1]
    said = f'voxnode: error: {cfg}: wyoming.host = "192.0.2.1": cannot listen on 192.0.2.1:10300 ('
    assert line.startswith(said), line
    assert "another Wyoming server" not in line and "wyoming.host must be an address of this machine" in line

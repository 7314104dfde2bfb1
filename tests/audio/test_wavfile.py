import struct
import subprocess

import numpy as np
import pytest

from voxnode.audio.wavfile import read_audio, write_wav
from voxnode.errors import AudioFileError


def _tone(rate, seconds=1.0, freq=440.0):
    t = np.arange(int(rate * seconds)) / rate
    return (0.5 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def _dominant_hz(x, rate=16000):
    spec = np.abs(np.fft.rfft(x * np.hanning(x.size)))
    return np.argmax(spec) * rate / x.size


def test_sox_written_44k_stereo_24bit_becomes_16k_mono(tmp_path):
    src = tmp_path / "t.wav"
    # sox writes what real recorders write (24-bit, stereo, 44.1 kHz, WAVE_FORMAT_EXTENSIBLE).
    subprocess.run(
        ["sox", "-n", "-r", "44100", "-c", "2", "-b", "24", str(src), "synth", "1.0", "sine", "1000"], check=True
    )
    x = read_audio(src)
    assert x.dtype == np.float32 and abs(x.size - 16000) <= 2
    assert abs(_dominant_hz(x) - 1000) < 5
    assert 0.3 < np.abs(x).max() <= 1.0


def test_float_wav_and_8bit(tmp_path):
    f32 = tmp_path / "f.wav"
    subprocess.run(
        [
            "sox",
            "-n",
            "-r",
            "16000",
            "-c",
            "1",
            "-e",
            "floating-point",
            "-b",
            "32",
            str(f32),
            "synth",
            "0.5",
            "sine",
            "300",
        ],
        check=True,
    )
    assert abs(_dominant_hz(read_audio(f32)) - 300) < 5
    u8 = tmp_path / "u8.wav"
    subprocess.run(
        ["sox", "-n", "-r", "8000", "-c", "1", "-b", "8", str(u8), "synth", "0.5", "sine", "300"], check=True
    )
    x = read_audio(u8)
    assert abs(x.size - 8000) <= 2 and abs(_dominant_hz(x) - 300) < 5


def test_roundtrip_16k_is_exact(tmp_path):
    pcm = np.random.default_rng(0).integers(-32768, 32767, 16000, dtype=np.int16)
    write_wav(tmp_path / "a.wav", pcm)
    x = read_audio(tmp_path / "a.wav")
    assert np.array_equal((x * 32768).astype(np.int16), pcm)
    (tmp_path / "a.raw").write_bytes(pcm.tobytes())
    assert np.array_equal(read_audio(tmp_path / "a.raw", raw=True), x)


@pytest.mark.parametrize(
    "content,expected",
    [
        (b"", "file is empty"),
        (b"hello, this is not audio at all" * 10, "not a WAV file"),
        (b"RIFF\x00\x00\x00\x00WAVEjunk", "no fmt chunk"),
        (b"\x01", "odd number of bytes"),  # with --raw
    ],
)
def test_bad_files_name_the_file_and_problem(tmp_path, content, expected):
    f = tmp_path / "bad.wav"
    f.write_bytes(content)
    with pytest.raises(AudioFileError) as e:
        read_audio(f, raw=expected.startswith("odd"))
    assert str(f) in str(e.value) and expected in str(e.value)


def test_a_wav_read_as_raw_is_refused(tmp_path):
    """`transcribe --raw x.wav` (or `run --file x.raw` of a WAV). Before: its header was read as samples
    and its audio as 16 kHz mono 16-bit whatever it was: a wrong transcript, without a word."""
    f = tmp_path / "48k.wav"
    write_wav(f, np.zeros(4800, dtype=np.int16), rate=48000)
    with pytest.raises(AudioFileError) as e:
        read_audio(f, raw=True)
    assert str(e.value) == f"{f}: is a WAV file (RIFF/WAVE header), not headerless S16_LE audio; read it as a WAV"
    assert abs(read_audio(f).size - 1600) <= 2  # as a WAV: 0.1 s at 16 kHz


def test_truncated_wav_is_reported(tmp_path):
    f = tmp_path / "t.wav"
    write_wav(f, _tone(16000))
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    with pytest.raises(AudioFileError, match="truncated WAV: header promises 32000 bytes"):
        read_audio(f)


def test_unsupported_encoding(tmp_path):
    fmt = struct.pack("<HHIIHH", 7, 1, 8000, 8000, 1, 8)  # 7 = mu-law
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", 4) + b"\0" * 4
    f = tmp_path / "mulaw.wav"
    f.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)
    with pytest.raises(AudioFileError, match="unsupported WAV encoding"):
        read_audio(f)


def _wav_with_fmt(path, tag, bits, channels=1, rate=16000):
    block = channels * bits // 8
    fmt = struct.pack("<HHIIHH", tag, channels, rate, rate * block, block, bits)
    data = b"\0" * block * 4
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)
    return path


@pytest.mark.parametrize(
    "tag,bits,said",
    [
        (3, 16, "16-bit float; floats are read as 32 or 64 bits, integers as 8, 16, 24 or 32 bits"),
        (1, 12, "12-bit integer; integers are read as 8, 16, 24 or 32 bits, floats as 32 or 64 bits"),
    ],
)
def test_an_unsupported_sample_size_says_float_or_integer_and_what_is_read(tmp_path, tag, bits, said):
    """Before, a half-precision float WAV (format tag 3, 16 bits) was "unsupported WAV sample size:
    16 bits", as if 16-bit WAVs were not read."""
    f = _wav_with_fmt(tmp_path / "f.wav", tag, bits)
    with pytest.raises(AudioFileError) as e:
        read_audio(f)
    assert str(e.value) == f"{f}: unsupported WAV sample format: {said}"


def test_missing_file(tmp_path):
    with pytest.raises(AudioFileError, match="no such file"):
        read_audio(tmp_path / "nope.wav")


def test_a_dash_is_told_the_name_of_standard_input(tmp_path, monkeypatch):
    """Before: `voxnode transcribe -` said "-: no such file" and no more."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AudioFileError, match=r"^-: no such file \(standard input is /dev/stdin"):
        read_audio("-")

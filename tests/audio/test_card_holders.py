"""Who holds a sound card's capture (audio/card_holders.py), for the EBUSY line of a failed open.

No ALSA kernel runs where the tests run (no /proc/asound, no sound card), so the kernel's proc files are
written by the test, in the kernel's own layout and wording (sound/core/pcm.c: an open substream's
status has "owner_pid   : N"; a closed one says "closed"); the program's name is read the same way."""

from __future__ import annotations

import errno

import pytest

from voxnode.audio import pcm_route
from voxnode.audio.card_holders import Holder, capture_holders, card_named

OPEN = "state: RUNNING\nowner_pid   : {pid}\ntrigger_time: 1234.5\ntstamp      : 0.0\n"


def card(proc, n: int, name: str | None, subs: dict[str, str]) -> None:
    d = proc / "asound" / f"card{n}"
    d.mkdir(parents=True)
    if name is not None:
        (d / "id").write_text(name + "\n")
    for path, status in subs.items():
        (d / path).mkdir(parents=True)
        (d / path / "status").write_text(status)


def program(proc, pid: int, comm: str) -> None:
    (proc / str(pid)).mkdir(parents=True)
    (proc / str(pid) / "comm").write_text(comm + "\n")


def test_every_open_capture_is_named_with_its_program(tmp_path):
    card(tmp_path, 0, "Headphones", {"pcm0p/sub0": OPEN.format(pid=500)})  # playback: not a capture
    card(tmp_path, 1, "Device", {"pcm0c/sub0": OPEN.format(pid=812), "pcm0c/sub1": "closed\n"})
    card(tmp_path, 2, None, {"pcm1c/sub0": OPEN.format(pid=4242)})
    program(tmp_path, 812, "pipewire")  # 4242 has gone (or is not ours to read)
    assert capture_holders(tmp_path) == [Holder("Device", 0, 812, "pipewire", 1), Holder("2", 1, 4242, "", 2)]
    assert [str(h) for h in capture_holders(tmp_path)] == [
        "pipewire (pid 812) on card Device device 0",
        "pid 4242 on card 2 device 1",
    ]


def test_no_alsa_in_the_kernel_or_nothing_open_is_none(tmp_path):
    assert capture_holders(tmp_path) == []
    card(tmp_path, 0, "Device", {"pcm0c/sub0": "closed\n"})
    assert capture_holders(tmp_path) == []


@pytest.mark.parametrize("held", [True, False])
def test_a_busy_open_names_the_holders_or_says_how_to_find_them(tmp_path, monkeypatch, held):
    if held:
        card(tmp_path, 1, "Device", {"pcm0c/sub0": OPEN.format(pid=812)})
        program(tmp_path, 812, "wyoming-satellite")
    monkeypatch.setattr(pcm_route, "capture_holders", lambda: capture_holders(tmp_path))
    hint = pcm_route.open_hint("vx_file", -errno.EBUSY)  # a name that goes through no sound server
    if held:
        assert hint == (
            "; another program holds it: the captures open now are wyoming-satellite (pid 812) on card Device device 0"
        )
    else:
        assert hint.endswith("`fuser -v /dev/snd/*` names it"), hint


def test_the_card_a_pcm_name_opens():
    for name, want in [
        ("hw:1", "1"),
        ("hw:1,0", "1"),
        ("plughw:Device", "Device"),
        ("plughw:Device,0", "Device"),
        ("hw:CARD=Device,DEV=0", "Device"),
        ("plughw:CARD=1,DEV=0", "1"),
        ("dsnoop:CARD=Device,DEV=0", "Device"),
        ("sysdefault:CARD=Device", "Device"),
        ('hw:"Device",0', "Device"),
    ]:
        assert card_named(name) == want, name
    for name in ("default", "vx_file", "pulse", "dsnoop"):  # the name does not say: alsa-lib's configuration does
        assert card_named(name) is None, name


def test_a_busy_card_named_by_the_pcm_is_told_apart_from_other_open_captures(tmp_path, monkeypatch):
    """Two cards capturing: the line names who holds the card the PCM name opens, by id or number."""
    card(tmp_path, 1, "Device", {"pcm0c/sub0": OPEN.format(pid=812)})
    card(tmp_path, 2, "Array", {"pcm0c/sub0": OPEN.format(pid=900)})
    program(tmp_path, 812, "arecord")
    program(tmp_path, 900, "pipewire")
    monkeypatch.setattr(pcm_route, "capture_holders", lambda: capture_holders(tmp_path))
    for name, said in (("plughw:CARD=Array,DEV=0", "Array"), ("hw:2", "2")):
        assert pcm_route.open_hint(name, -errno.EBUSY) == (
            f"; another program holds card {said}: pipewire (pid 900) on card Array device 0"
        )
    # A name whose card nobody holds, or that does not say its card: every open capture.
    for name in ("hw:CARD=Other", "vx_file"):
        assert pcm_route.open_hint(name, -errno.EBUSY) == (
            "; another program holds it: the captures open now are arecord (pid 812) on card Device device 0, "
            "pipewire (pid 900) on card Array device 0"
        )

"""The OS names of voxnode's threads (voxnode/threads.py): what `top -H` and /proc show."""

import sys
import threading
from pathlib import Path

import pytest

from voxnode.threads import NAME_BYTES, NamedThread

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread names are read from /proc")


def _os_name(native_id: int) -> str:
    return Path(f"/proc/self/task/{native_id}/comm").read_text().strip()


@pytest.mark.parametrize(
    ("name", "shown"),
    [("decode-0", "decode-0"), ("stream-livingroom", "stream-livingro"), ("capture-küche", "capture-küche")],
)
def test_a_named_thread_carries_its_name_to_the_os(name, shown):
    seen = {}
    ready, done = threading.Event(), threading.Event()

    def body():
        seen["id"] = threading.get_native_id()
        ready.set()
        done.wait(5)

    t = NamedThread(target=body, name=name, daemon=True)
    t.start()
    try:
        assert ready.wait(5)
        assert _os_name(seen["id"]) == shown  # the first 15 bytes: the kernel's limit
        assert len(shown.encode()) <= NAME_BYTES
    finally:
        done.set()
        t.join(5)

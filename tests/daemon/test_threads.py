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


def _names() -> list[str]:
    return [(p / "comm").read_text().strip() for p in Path("/proc/self/task").iterdir()]


def test_xnnpack_worker_threads_are_named_for_their_model():
    """LiteRT makes XNNPACK's pool (num_threads - 1 workers) as the interpreter allocates its tensors,
    under the name of the thread that opens it; the speech model's are renamed for top -H."""
    from voxnode.asr.backends import load_recognizer
    from voxnode.config.asr import AsrConfig

    before = _names()
    with load_recognizer(AsrConfig(num_threads=3)):
        after = _names()
    assert after.count("xnn-encoder") - before.count("xnn-encoder") == 2, after
    assert after.count("xnn-decoder") - before.count("xnn-decoder") == 2, after


def test_naming_new_threads_leaves_a_thread_that_named_itself():
    from voxnode.threads import name_new_threads

    ids, ready, done = {}, threading.Event(), threading.Event()

    def body(key):
        ids[key] = threading.get_native_id()
        if len(ids) == 2:
            ready.set()
        done.wait(5)

    with name_new_threads("xnn-test"):
        plain = threading.Thread(target=body, args=("plain",), daemon=True)  # keeps the caller's OS name
        named = NamedThread(target=body, args=("named",), name="decode-9", daemon=True)
        plain.start()
        named.start()
        assert ready.wait(5)
    try:
        assert _os_name(ids["plain"]) == "xnn-test"
        assert _os_name(ids["named"]) == "decode-9"
    finally:
        done.set()
        plain.join(5)
        named.join(5)

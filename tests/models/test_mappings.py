"""This process's file mappings as /proc/self/maps gives them (models/runtime.py): where a mapped byte
lies in its file (the decoder's embedding rows are read there with pread), and dropping a read-only
mapping's resident pages (the model files once XNNPACK has packed the weights)."""

from __future__ import annotations

import mmap

import numpy as np
import pytest

from voxnode.models.runtime import file_mappings, mapped_file_offset, release_file_pages

pytestmark = pytest.mark.unit

PAGE = mmap.PAGESIZE


@pytest.fixture
def mapped(tmp_path):
    """A 4-page file, pages 1-2 mapped read-only: its path, and the mapping's bytes as an array."""
    path = tmp_path / "weights.bin"
    path.write_bytes(np.arange(4 * PAGE, dtype=np.uint32).astype(np.uint8).tobytes())
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 2 * PAGE, prot=mmap.PROT_READ, offset=PAGE)
    held = {"path": path, "array": np.frombuffer(m, dtype=np.uint8)}
    yield held
    held.clear()  # the mapping closes once no array points into it
    try:
        m.close()
    except BufferError:  # a failed test's traceback still holds the array: the collector closes it
        pass


def test_a_mapped_byte_is_found_in_its_file(mapped):
    path, array = mapped["path"], mapped["array"]
    start = array.__array_interface__["data"][0]
    assert mapped_file_offset(start + 123) == (str(path), PAGE + 123)
    assert mapped_file_offset(start + 2 * PAGE - 1) == (str(path), 3 * PAGE - 1)
    assert mapped_file_offset(np.zeros(8).__array_interface__["data"][0]) is None  # the heap: no file
    (ours,) = [m for m in file_mappings() if m[4] == str(path)]
    assert ours == (start, start + 2 * PAGE, "r--s", PAGE, str(path))


def test_a_read_only_mappings_pages_are_released_and_read_back_the_same(mapped):
    path, array = mapped["path"], mapped["array"]
    before = array.copy()  # every page touched: resident
    assert release_file_pages(path) == 2 * PAGE
    assert np.array_equal(array, before)  # faulted back in from the page cache
    assert release_file_pages(path.with_name("other.bin")) == 0

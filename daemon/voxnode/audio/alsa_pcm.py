"""An ALSA capture PCM through ctypes, so that no call into alsa-lib holds the GIL.

pyalsaaudio (0.11) calls snd_pcm_open and the hw_params setup holding the GIL. An open that blocks
then freezes every thread of the process: the main loop, the watchdog pings, health, /metrics,
Wyoming, and SIGTERM (issue 27). Measured here (alsa-lib 1.2.8): a `type file` PCM whose infile is
a FIFO without a writer blocks inside snd_pcm_open, in PCM_NORMAL and in PCM_NONBLOCK mode alike
(the plugin opens the infile with a plain blocking open(2)); a process whose thread opened it
through pyalsaaudio did not run its main thread again for the 10 s it was given (killed then).
The same open through ctypes, which releases the GIL around every foreign call, blocked only its
own thread: the main thread slept 2.00 s as asked and a 50 ms ticker ran 39 of 40 ticks.

The device is opened with SND_PCM_NONBLOCK, so a busy sound card answers EBUSY at once instead of
waiting for its owner, and is then switched to blocking reads, as pyalsaaudio's PCM_NORMAL reads.
The hw_params set-up is pyalsaaudio's: ask, ignore refusals, read back what was granted (alsa_open
compares it with what was asked). Cost: 2.0 us of CPU per 20 ms period read against pyalsaaudio's
1.0 us (10,000 reads of a `type file` PCM), 0.005 % of a core per stream. Checked under
MemoryDenyWriteExecute (PR_SET_MDWE) and the unit's no-netlink seccomp filter: no callbacks, no W+X.
"""

from __future__ import annotations

import ctypes
import errno
import threading

SND_PCM_STREAM_CAPTURE = 1
SND_PCM_NONBLOCK = 1
SND_PCM_ACCESS_RW_INTERLEAVED = 3
SND_PCM_FORMAT_S16_LE = 2
SND_PCM_STATE_SETUP = 1

_p = ctypes.c_void_p
_uint_p = ctypes.POINTER(ctypes.c_uint)
_int_p = ctypes.POINTER(ctypes.c_int)
_ulong_p = ctypes.POINTER(ctypes.c_ulong)  # snd_pcm_uframes_t

# name -> (restype, argtypes)
_SIGNATURES: dict[str, tuple[object, list]] = {
    "snd_pcm_open": (ctypes.c_int, [ctypes.POINTER(_p), ctypes.c_char_p, ctypes.c_int, ctypes.c_int]),
    "snd_config_update": (ctypes.c_int, []),
    "snd_pcm_close": (ctypes.c_int, [_p]),
    "snd_pcm_nonblock": (ctypes.c_int, [_p, ctypes.c_int]),
    "snd_pcm_prepare": (ctypes.c_int, [_p]),
    "snd_pcm_state": (ctypes.c_int, [_p]),
    "snd_pcm_readi": (ctypes.c_long, [_p, _p, ctypes.c_ulong]),
    "snd_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "snd_pcm_format_name": (ctypes.c_char_p, [ctypes.c_int]),
    "snd_pcm_format_physical_width": (ctypes.c_int, [ctypes.c_int]),
    "snd_pcm_hw_params_malloc": (ctypes.c_int, [ctypes.POINTER(_p)]),
    "snd_pcm_hw_params_free": (None, [_p]),
    "snd_pcm_hw_params_any": (ctypes.c_int, [_p, _p]),
    "snd_pcm_hw_params": (ctypes.c_int, [_p, _p]),
    "snd_pcm_hw_params_current": (ctypes.c_int, [_p, _p]),
    "snd_pcm_hw_params_set_access": (ctypes.c_int, [_p, _p, ctypes.c_int]),
    "snd_pcm_hw_params_set_format": (ctypes.c_int, [_p, _p, ctypes.c_int]),
    "snd_pcm_hw_params_set_channels": (ctypes.c_int, [_p, _p, ctypes.c_uint]),
    "snd_pcm_hw_params_set_rate_near": (ctypes.c_int, [_p, _p, _uint_p, _int_p]),
    "snd_pcm_hw_params_set_period_size_near": (ctypes.c_int, [_p, _p, _ulong_p, _int_p]),
    "snd_pcm_hw_params_set_periods_near": (ctypes.c_int, [_p, _p, _uint_p, _int_p]),
    "snd_pcm_hw_params_get_format": (ctypes.c_int, [_p, _int_p]),
    "snd_pcm_hw_params_get_channels": (ctypes.c_int, [_p, _uint_p]),
    "snd_pcm_hw_params_get_rate": (ctypes.c_int, [_p, _uint_p, _int_p]),
    "snd_pcm_hw_params_get_period_size": (ctypes.c_int, [_p, _ulong_p, _int_p]),
    "snd_pcm_hw_params_get_buffer_size": (ctypes.c_int, [_p, _ulong_p]),
    "snd_pcm_hw_params_get_rate_min": (ctypes.c_int, [_p, _uint_p, _int_p]),
    "snd_pcm_hw_params_get_rate_max": (ctypes.c_int, [_p, _uint_p, _int_p]),
}

# Where to read which file and line: alsa-lib writes it on stderr (the journal under systemd).
CONFIG_SAYS = "ALSA's own lines above say which file and line; so does `voxnode devices`"

_lib_lock = threading.Lock()
_lib: ctypes.CDLL | None = None


class PcmError(Exception):
    """An alsa-lib call failed; `code` is its negative errno."""

    def __init__(self, code: int, what: str):
        self.code = code
        super().__init__(what)


def _libasound() -> ctypes.CDLL:
    global _lib
    with _lib_lock:
        if _lib is None:
            try:
                lib = ctypes.CDLL("libasound.so.2")  # CDLL, not PyDLL: the GIL is released in each call
            except OSError as e:
                raise PcmError(-errno.ENOENT, f"the ALSA library libasound.so.2 cannot be loaded ({e})") from None
            for name, (restype, argtypes) in _SIGNATURES.items():
                fn = getattr(lib, name)
                fn.restype, fn.argtypes = restype, argtypes
            _lib = lib
        return _lib


def strerror(code: int) -> str:
    text = _libasound().snd_strerror(code)
    return text.decode(errors="replace") if text else f"error {code}"


class CapturePcm:
    """One opened capture PCM: `read()` gives one period as pyalsaaudio's PCM.read() does."""

    def __init__(self, device: str, channels: int, rate: int, periodsize: int, periods: int):
        if "\x00" in device:
            raise PcmError(-errno.EINVAL, "the device name contains a NUL character")
        lib = _libasound()
        self._lib = lib
        self._handle = _p()
        self._closed = threading.Lock()  # close() once, whichever thread gets there
        self._open = False
        res = lib.snd_pcm_open(ctypes.byref(self._handle), device.encode(), SND_PCM_STREAM_CAPTURE, SND_PCM_NONBLOCK)
        if res < 0:
            if lib.snd_config_update() < 0:  # a syntax error in an asoundrc: the open said "Invalid argument"
                raise PcmError(res, f"{strerror(res)}: the ALSA configuration does not load ({CONFIG_SAYS})")
            raise PcmError(res, strerror(res))
        self._open = True
        try:
            res = lib.snd_pcm_nonblock(self._handle, 0)  # opened without waiting; read blocking
            if res < 0:
                raise PcmError(res, strerror(res))
            self._info = self._setup(channels, rate, periodsize, periods)
        except BaseException:
            self.close()
            raise
        width = lib.snd_pcm_format_physical_width(self._format)
        self._frame_bytes = max(1, self._info["channels"] * width // 8)
        self._period = max(1, self._info["period_size"])
        self._buffer = ctypes.create_string_buffer(self._period * self._frame_bytes)

    def _setup(self, channels: int, rate: int, periodsize: int, periods: int) -> dict:
        lib, h = self._lib, self._handle
        params = _p()
        res = lib.snd_pcm_hw_params_malloc(ctypes.byref(params))
        if res < 0:
            raise PcmError(res, strerror(res))
        try:
            res = lib.snd_pcm_hw_params_any(h, params)
            if res < 0:
                raise PcmError(res, strerror(res))
            # As pyalsaaudio: refusals are ignored here; what was granted is read back and checked.
            d = ctypes.c_int(0)
            want_rate, want_periods = ctypes.c_uint(rate), ctypes.c_uint(periods)
            want_period = ctypes.c_ulong(periodsize)
            lib.snd_pcm_hw_params_set_access(h, params, SND_PCM_ACCESS_RW_INTERLEAVED)
            lib.snd_pcm_hw_params_set_format(h, params, SND_PCM_FORMAT_S16_LE)
            lib.snd_pcm_hw_params_set_channels(h, params, channels)
            lib.snd_pcm_hw_params_set_rate_near(h, params, ctypes.byref(want_rate), ctypes.byref(d))
            lib.snd_pcm_hw_params_set_period_size_near(h, params, ctypes.byref(want_period), ctypes.byref(d))
            lib.snd_pcm_hw_params_set_periods_near(h, params, ctypes.byref(want_periods), ctypes.byref(d))
            res = lib.snd_pcm_hw_params(h, params)
            if res < 0:
                raise PcmError(res, strerror(res))
            lib.snd_pcm_hw_params_current(h, params)
            fmt, ch, got_rate = ctypes.c_int(-1), ctypes.c_uint(0), ctypes.c_uint(0)
            period, buffer = ctypes.c_ulong(0), ctypes.c_ulong(0)
            lib.snd_pcm_hw_params_get_format(params, ctypes.byref(fmt))
            lib.snd_pcm_hw_params_get_channels(params, ctypes.byref(ch))
            lib.snd_pcm_hw_params_get_rate(params, ctypes.byref(got_rate), ctypes.byref(d))
            lib.snd_pcm_hw_params_get_period_size(params, ctypes.byref(period), ctypes.byref(d))
            lib.snd_pcm_hw_params_get_buffer_size(params, ctypes.byref(buffer))
        finally:
            lib.snd_pcm_hw_params_free(params)
        self._format = fmt.value
        name = lib.snd_pcm_format_name(fmt.value) if fmt.value >= 0 else None
        return {
            "rate": got_rate.value,
            "channels": ch.value,
            "format_name": name.decode() if name else "unknown",
            "period_size": period.value,
            "buffer_size": buffer.value,
        }

    def info(self) -> dict:
        """What was granted: rate, channels, format_name, period_size, buffer_size."""
        return dict(self._info)

    def getratebounds(self) -> tuple[int, int]:
        lib, params = self._lib, _p()
        if lib.snd_pcm_hw_params_malloc(ctypes.byref(params)) < 0:
            raise PcmError(-errno.ENOMEM, "cannot allocate hardware parameters")
        try:
            if lib.snd_pcm_hw_params_any(self._handle, params) < 0:
                raise PcmError(-errno.EINVAL, "cannot get hardware parameters")
            lo, hi, d = ctypes.c_uint(0), ctypes.c_uint(0), ctypes.c_int(0)
            if lib.snd_pcm_hw_params_get_rate_min(params, ctypes.byref(lo), ctypes.byref(d)) < 0:
                raise PcmError(-errno.EINVAL, "cannot get the lowest rate")
            if lib.snd_pcm_hw_params_get_rate_max(params, ctypes.byref(hi), ctypes.byref(d)) < 0:
                raise PcmError(-errno.EINVAL, "cannot get the highest rate")
            return lo.value, hi.value
        finally:
            lib.snd_pcm_hw_params_free(params)

    def read(self) -> tuple[int, bytes]:
        """(frames, data) of up to one period; (-EPIPE, b"") after an overrun, the PCM re-prepared."""
        lib, h = self._lib, self._handle
        n = lib.snd_pcm_readi(h, self._buffer, self._period)
        if n == -errno.EBADFD and lib.snd_pcm_state(h) == SND_PCM_STATE_SETUP:
            # Not prepared (after a failed recovery): prepare, then read. The state is asked only when a
            # read fails: asked before every read it was 1 of the ~4 us a read costs (issue 23).
            res = lib.snd_pcm_prepare(h)
            if res < 0:
                raise PcmError(res, strerror(res))
            n = lib.snd_pcm_readi(h, self._buffer, self._period)
        if n == -errno.EPIPE:
            res = lib.snd_pcm_prepare(h)
            if res < 0:
                raise PcmError(res, strerror(res))
            return -errno.EPIPE, b""
        if n == -errno.EAGAIN or n == -errno.EINTR:
            return 0, b""
        if n < 0:
            raise PcmError(int(n), strerror(int(n)))
        return int(n), self._buffer.raw[: n * self._frame_bytes]

    def close(self) -> None:
        if not self._closed.acquire(blocking=False):
            return
        if self._open:
            self._open = False
            self._lib.snd_pcm_close(self._handle)

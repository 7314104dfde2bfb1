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
MemoryDenyWriteExecute (PR_SET_MDWE) and the unit's no-netlink seccomp filter: no W+X memory.

alsa-lib's own complaints ("Unknown PCM mic"; a configuration file's syntax error with its line) went
to stderr above our error, once more at every retry of a missing microphone. `alsa_says()` takes
them for the calling thread instead (snd_lib_error_set_local: the handler gets the message's va_list,
which libc's vsnprintf formats; checked on x86_64 and, under qemu, on aarch64 with Debian's
alsa-lib 1.2.8), and an open's PcmError says them "(ALSA: ...)". Its one ctypes callback comes from
libffi's static trampolines, no W+X memory (tests/systemd/test_sandbox.py runs it under
PR_SET_MDWE); where it cannot be made, or alsa-lib lacks the call, the lines go to stderr as before.
"""

from __future__ import annotations

import ctypes
import errno
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

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
    # the configuration's tree, read by audio/pcm_route.py
    "snd_config_update_ref": (ctypes.c_int, [ctypes.POINTER(_p)]),
    "snd_config_unref": (None, [_p]),
    "snd_config_search_definition": (ctypes.c_int, [_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_p)]),
    "snd_config_search": (ctypes.c_int, [_p, ctypes.c_char_p, ctypes.POINTER(_p)]),
    "snd_config_get_string": (ctypes.c_int, [_p, ctypes.POINTER(ctypes.c_char_p)]),
    "snd_config_get_type": (ctypes.c_int, [_p]),
    "snd_config_delete": (ctypes.c_int, [_p]),
}

# Where to read which file and line when alsa-lib's words could not be taken (alsa_says): on stderr.
CONFIG_SAYS = "ALSA's own lines above say which file and line; so does `voxnode devices`"
CONFIG_FAILS = "the ALSA configuration does not load"

_lib_lock = threading.Lock()
_lib: ctypes.CDLL | None = None

# alsa-lib's snd_local_error_handler_t: file, line, function, errno (0: none), format, its va_list
_ERROR_HANDLER = ctypes.CFUNCTYPE(
    None, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p
)
_said = threading.local()  # .lines: what alsa-lib said in this thread inside alsa_says()
_handler: object = None  # the callback, made once; False where it cannot be (then stderr, as before)
_vsnprintf: Callable[..., int] | None = None  # libc's, which formats alsa-lib's va_list


class PcmError(Exception):
    """An alsa-lib call failed; `code` is its negative errno."""

    def __init__(self, code: int, what: str):
        self.code = code
        super().__init__(what)

    def saying(self, said: list[str]) -> PcmError:
        """This error with what alsa-lib said meanwhile (alsa_says), in its words."""
        what = str(self)
        if said:
            what += alsa_words(said)
        elif what.endswith(CONFIG_FAILS):
            what += f" ({CONFIG_SAYS})"
        return PcmError(self.code, what)


# alsa-lib says a failed name lookup line by line up its evaluator ("cannot find card 'usb'", then five
# lines of "function snd_func_card_inum returned error" and the like, then "Unknown PCM default:CARD=usb"):
# an error line keeps the first (the cause) and the last (what could not be opened).
MOST_WORDS = 3


def alsa_words(said: list[str]) -> str:
    """What alsa-lib said (alsa_says), as our error lines carry it: " (ALSA: Unknown PCM mic)"; "" for nothing."""
    if len(said) > MOST_WORDS:
        said = [said[0], "...", said[-1]]
    return f" (ALSA: {'; '.join(said)})" if said else ""


def libasound() -> ctypes.CDLL:
    """alsa-lib, its calls' signatures set (_SIGNATURES); PcmError where it cannot be loaded."""
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
    text = libasound().snd_strerror(code)
    return text.decode(errors="replace") if text else f"error {code}"


def _take(file: bytes, line: int, function: bytes, err: int, fmt: bytes, args: int) -> None:
    # Runs in the thread alsa-lib complains in, which set the handler (alsa_says); never raises into C.
    try:
        buf = ctypes.create_string_buffer(512)
        assert _vsnprintf is not None
        _vsnprintf(buf, len(buf), fmt, args)
        text = buf.value.decode(errors="replace").strip()
        if err:
            text += f": {strerror(err)}"  # as alsa-lib's own handler adds it
        lines = getattr(_said, "lines", None)
        if lines is not None and text and text not in lines:  # the configuration is read more than once
            lines.append(text)
    except Exception:  # noqa: BLE001 - an exception cannot cross into alsa-lib
        pass


def _local_handler(lib: ctypes.CDLL) -> object:
    """The callback for snd_lib_error_set_local, made once; False where this alsa-lib lacks the call
    (Debian 12's 1.2.8 has it) or libffi cannot make a callback here."""
    global _handler, _vsnprintf
    with _lib_lock:
        if _handler is None:
            try:
                libc = ctypes.CDLL(None)
                _vsnprintf = libc.vsnprintf
                _vsnprintf.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_void_p]
                _vsnprintf.restype = ctypes.c_int
                lib.snd_lib_error_set_local.argtypes = [_ERROR_HANDLER]
                lib.snd_lib_error_set_local.restype = ctypes.c_void_p
                _handler = _ERROR_HANDLER(_take)
            except (AttributeError, MemoryError, OSError):
                _handler = False
        return _handler


@contextmanager
def alsa_says() -> Iterator[list[str]]:
    """What alsa-lib says in the calling thread inside the block, each line once, in its words, instead
    of on stderr (the list stays empty where that cannot be done, and the lines go to stderr)."""
    lib = libasound()
    handler = _local_handler(lib)
    lines: list[str] = []
    if not handler:
        yield lines
        return
    _said.lines = lines
    lib.snd_lib_error_set_local(handler)
    try:
        yield lines
    finally:
        lib.snd_lib_error_set_local(_ERROR_HANDLER())  # NULL: alsa-lib's own handler again
        _said.lines = None


class CapturePcm:
    """One opened capture PCM: `read()` gives one period as pyalsaaudio's PCM.read() does."""

    def __init__(self, device: str, channels: int, rate: int, periodsize: int, periods: int):
        if "\x00" in device:
            raise PcmError(-errno.EINVAL, "the device name contains a NUL character")
        lib = libasound()
        self._lib = lib
        self._handle = _p()
        self._closed = threading.Lock()  # close() once, whichever thread gets there
        self._open = False
        with alsa_says() as said:
            try:
                self._open_and_set_up(device, channels, rate, periodsize, periods)
            except PcmError as e:
                raise e.saying(said) from None
        width = lib.snd_pcm_format_physical_width(self._format)
        self._frame_bytes = max(1, self._info["channels"] * width // 8)
        self._period = max(1, self._info["period_size"])
        self._buffer = ctypes.create_string_buffer(self._period * self._frame_bytes)

    def _open_and_set_up(self, device: str, channels: int, rate: int, periodsize: int, periods: int) -> None:
        lib = self._lib
        res = lib.snd_pcm_open(ctypes.byref(self._handle), device.encode(), SND_PCM_STREAM_CAPTURE, SND_PCM_NONBLOCK)
        if res < 0:
            if lib.snd_config_update() < 0:  # a syntax error in an asoundrc: the open said "Invalid argument"
                raise PcmError(res, f"{strerror(res)}: {CONFIG_FAILS}")
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

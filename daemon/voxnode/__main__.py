"""`python -m voxnode`, and the installed `voxnode` command (pyproject.toml: voxnode.__main__:run).

Ctrl-C while the command line's modules load (about 0.24 s) is held until they have loaded, then
ends the command with exit status 130, as a Ctrl-C later does. Raised there, its KeyboardInterrupt
gave a traceback (13 of 80 SIGINTs sent at random in the first 1.5 s of `voxnode fleet`), or was
lost: raised in an import lock's weakref callback it is only printed ("Exception ignored"), and the
live `voxnode fleet` then ran on (1 of 80). One while main() parses the arguments is exit 130 too.
A SIGINT ignored at start stays ignored here.
"""

import signal
import sys


def run() -> int:
    held: list[int] = []
    holding = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if holding:
        signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        try:
            from voxnode.cli import main
        finally:
            if holding:
                signal.signal(signal.SIGINT, signal.default_int_handler)
        return 130 if held else main()
    except KeyboardInterrupt:  # after the loading, before main()'s own handling (its arguments' parsing)
        return 130


if __name__ == "__main__":
    sys.exit(run())

"""Tools beside the daemon, run as modules from the checkout's root (never installed, no path set-up):

    .venv/bin/python -m scripts.bench.wake --help
    .venv-convert/bin/python -m scripts.convert.whisper.convert --help

scripts/README.md is the index: what each tool is, its venv and its make target.
"""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent  # the checkout
RESULTS = REPO / "scripts" / "bench" / "results"  # benchmarks' saved figures (JSON), quoted in docs/


def command_line() -> str:
    """How the running tool was started, as it can be typed again: `python -m scripts.bench.wake --write X`
    (with -m, sys.argv[0] is the module's file, which does not run on its own)."""
    import sys

    spec = getattr(sys.modules["__main__"], "__spec__", None)
    name = spec.name.removesuffix(".__main__") if spec else sys.argv[0]
    return " ".join(["python -m " + name if spec else name, *sys.argv[1:]])

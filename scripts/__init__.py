"""Tools beside the daemon, run as modules from the checkout's root (never installed, no path set-up):

    .venv/bin/python -m scripts.bench.wake --help
    .venv-convert/bin/python -m scripts.convert.whisper.convert --help

scripts/README.md is the index: what each tool is, its venv and its make target.
"""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent  # the checkout
RESULTS = REPO / "scripts" / "bench" / "results"  # benchmarks' saved figures (JSON), quoted in docs/

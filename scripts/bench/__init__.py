"""Benchmarks, probes and experiments, with the corpora, scoring and clients they share with the tests
(results/ holds their saved figures; requirements.txt the benchmark venv, `make .venv-bench/.installed`)."""

import os

# As the daemon does (voxnode/__init__.py), before numpy starts OpenBLAS: its threads spin between the small
# products and would be counted in the process CPU the benchmarks measure (the daemon's note: 15 utterances on
# 1 inference thread, 1.49 s of CPU for 0.77 s wall with OpenBLAS's default threads, 0.74 s with one). Set here,
# not in each tool: this package is imported before any of its modules (`python -m scripts.bench.X`), also in
# the workers they start (`asr_worker`: `-m scripts.bench.asr --worker`), which may import numpy before voxnode.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

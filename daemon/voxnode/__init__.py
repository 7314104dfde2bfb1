"""voxnode: on-device speech-to-text daemon for ARM voice nodes."""

import os

# numpy's OpenBLAS starts a thread per core that spins between the small products voxnode asks of
# it (log-mel, draft rows): measured with 15 real utterances decoded by tiny.en on 1 inference
# thread, 0.77 s wall took 1.49 s of CPU; with one OpenBLAS thread 0.74 s wall, 0.74 s CPU. On a
# 4-core Pi the spinning would take cores from the recogniser. Set before numpy is first imported
# (anywhere in the process: this package is imported first); an operator's own value wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"

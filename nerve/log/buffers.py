"""File bytes in memory Arrow owns, for parsing with the parquet reader.

``pq.read_table(pa.BufferReader(data))`` over Python ``bytes`` wraps them in a buffer that
holds a Python object. The reader hands its source to Arrow's worker threads, and a worker
may drop the last reference after the read has returned; freeing that buffer then takes
the GIL. If the interpreter has begun to exit by then, Python ends the worker with
``pthread_exit`` inside a C++ frame that cannot unwind, and ``std::terminate`` aborts the
process ("terminate called without an active exception", exit 134) after its work is done.
Memory Arrow allocated is freed without Python, so a late release is harmless.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa


def read_file(path: Path) -> pa.Buffer:
    """The bytes of ``path`` in an Arrow buffer: hash it (blake3 takes it), then parse it."""
    with pa.OSFile(str(path)) as f:
        return f.read_buffer()

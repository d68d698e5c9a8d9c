"""Reading and writing traces as NumPy arrays of :data:`xlat.REF_DTYPE`."""

from __future__ import annotations

import json
import os

import numpy as np

from . import _xlat
from ._api import REF_DTYPE, as_records


def info(path: os.PathLike | str, *, format: str | None = None) -> dict:
    """``xlat trace info`` of the trace at ``path`` (format detected unless given): references,
    instructions, loads, stores, fetches, distinct pages, address spaces, address range."""
    return json.loads(_xlat.trace_info(os.fspath(path), format))


def read(path: os.PathLike | str, limit: int | None = None, *, format: str | None = None) -> np.ndarray:
    """The first ``limit`` references (all by default) of the trace at ``path``, as a
    structured array of :data:`xlat.REF_DTYPE`. Its ``instructions`` are in
    ``info(path)["instructions"]`` for a whole trace."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be at least 0, not {limit}")
    records, _instructions = _xlat.trace_read(os.fspath(path), limit, format)
    return np.frombuffer(records, dtype=REF_DTYPE)


def write(path: os.PathLike | str, refs: np.ndarray) -> None:
    """Writes ``refs`` as a trace at ``path``, in the format its extension names (``.xlat``
    native, ``.lackey``, ``.champsim``), atomically."""
    _xlat.trace_write(os.fspath(path), as_records(refs).tobytes())

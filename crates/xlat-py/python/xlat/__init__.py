"""xlat: a fast simulator of virtual-memory address translation, from Python.

Run experiments (a path, TOML text or a dict of the experiment schema) and get pandas frames
of ``results.csv``'s rows; feed NumPy arrays of references into machines; sweep parameters on
Dask. See docs/python.md.
"""

from . import trace
from ._api import REF_DTYPE, Results, Simulation, experiment_dict, preset, presets, run
from ._xlat import VERSION as __version__
from .sweep import cells, sweep

__all__ = [
    "REF_DTYPE",
    "Results",
    "Simulation",
    "cells",
    "experiment_dict",
    "preset",
    "presets",
    "run",
    "sweep",
    "trace",
    "__version__",
]

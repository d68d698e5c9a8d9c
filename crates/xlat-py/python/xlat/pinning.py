"""Cores for the workers of a LocalCluster that :func:`xlat.sweep` starts: each worker is
confined to its own share of the cores, so that runs on different workers do not fight over
the same ones. A run sizes its parallelism from the cores it may use: besides the thread that
reads its workload, a lone machine takes a second core only when it has one."""

from __future__ import annotations

import contextlib
import os
from typing import Sequence

from distributed.diagnostics.plugin import WorkerPlugin


def core_groups(cores: Sequence[int], workers: int) -> list[list[int]]:
    """``cores`` split into ``workers`` groups of consecutive cores, the first groups one core
    larger when they do not divide evenly; none when there are more workers than cores."""
    if workers < 1 or workers > len(cores):
        return []
    size, extra = divmod(len(cores), workers)
    starts = [k * size + min(k, extra) for k in range(workers + 1)]
    return [list(cores[starts[k] : starts[k + 1]]) for k in range(workers)]


class PinCores(WorkerPlugin):
    """Confines each worker, by its name in the LocalCluster (0, 1, ...), to its group of
    ``groups``, with every thread it has; set up again in a worker that Dask restarts."""

    def __init__(self, groups: list[list[int]]):
        self.groups = groups

    def setup(self, worker) -> None:
        cores = self.groups[int(worker.name) % len(self.groups)]
        for tid in os.listdir("/proc/self/task"):
            # A thread may end between the listing and the call.
            with contextlib.suppress(OSError):
                os.sched_setaffinity(int(tid), cores)

"""The Python package's speed against issue 31's targets (docs/python.md, "Speed").

    python crates/xlat-py/bench/speed.py --xlat target/release/xlat [--rounds 3]

Run with a release build of both (`cargo build --release -p xlat-cli`, `pip install .`):
1. overhead: `xlat.run` against `xlat run --quiet` on the same 30 M-reference experiment
   (medians of interleaved rounds; target: Python adds under 5%);
2. feeding: `Simulation.feed` of a 30 M-reference NumPy array into one 1024-entry 4-way TLB,
   conversion to records included (target: at least 50 M references/s);
3. sweep: 8 cells on a LocalCluster of 2 workers against the same cells run one after another,
   on every core and on one (target: about half the time on 2 cores).
"""

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

import xlat

REFS = 30_000_000
TLB = {"name": "tlb", "preset": "single-tlb", "entries": 1024, "ways": 4}
EXPERIMENT = f"""
seed = 1
[[workload]]
name = "uniform"
type = "uniform"
footprint = "256MiB"
refs = {REFS}
[[machine]]
name = "tlb"
preset = "single-tlb"
entries = 1024
ways = 4
"""


def _timed(f):
    started = time.perf_counter()
    f()
    return time.perf_counter() - started


def overhead(cli: str, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "exp.toml"
        path.write_text(EXPERIMENT)
        cli_s, py_s = [], []
        for _ in range(rounds):
            cli_s.append(_timed(lambda: subprocess.run([cli, "run", path, "--quiet"], check=True)))
            py_s.append(_timed(lambda: xlat.run(path)))
    c, p = statistics.median(cli_s), statistics.median(py_s)
    print(f"overhead: CLI {c:.2f} s, xlat.run {p:.2f} s: Python adds {100 * (p / c - 1):+.1f}% (medians of {rounds})")


def feeding(rounds: int) -> None:
    rng = np.random.default_rng(1)
    refs = np.zeros(REFS, dtype=xlat.REF_DTYPE)
    refs["vaddr"] = rng.integers(0, 256 << 20, REFS, dtype=np.uint64) & ~np.uint64(7)
    refs["size"] = 8
    rates = [REFS / _timed(lambda: xlat.Simulation(TLB).feed(refs)) / 1e6 for _ in range(rounds)]
    print(f"feeding: {statistics.median(rates):.1f} M references/s into one 1024-entry 4-way TLB (median of {rounds})")


def sweep() -> None:
    base = {"seed": 1, "workload": [{"name": "u", "type": "uniform", "footprint": "256MiB", "refs": 60_000_000}], "machine": [TLB]}
    grid = {"workload.seed": [1, 2, 3, 4, 5, 6, 7, 8]}
    def one_after_another():
        return [xlat.run(c.config) for c in xlat.cells(base, grid)]

    serial = _timed(one_after_another)
    # The same runs confined to one core, as each of the sweep's two workers is.
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})
    try:
        one_core = _timed(one_after_another)
    finally:
        os.sched_setaffinity(0, cores)
    with tempfile.TemporaryDirectory() as tmp:
        parallel = _timed(lambda: xlat.sweep(base, grid, out=tmp, workers=2))
    print(
        f"sweep: 8 cells serially {serial:.2f} s ({one_core:.2f} s on one core), on 2 workers {parallel:.2f} s "
        f"({parallel / serial:.2f} of serial, {parallel / one_core:.2f} of serial on one core; cluster start included)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--xlat", required=True, help="the release xlat binary")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    overhead(args.xlat, args.rounds)
    feeding(args.rounds)
    sweep()

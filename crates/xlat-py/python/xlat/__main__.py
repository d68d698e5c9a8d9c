"""``python -m xlat sweep SWEEP.toml [--scheduler ADDR] [--workers N] --out DIR``.

A sweep file names its base experiment and its grid::

    experiment = "mosaic-fig6.toml"     # a path beside this file, or an [experiment] table
    [grid]
    "machine.mosaic.arity" = [4, 8, 16]
    "workload[gups].limit" = [1_000_000, 2_000_000]

Exit code 0 when every cell finished, 1 when some failed (each listed with its error), 2 for a
usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import _xlat
from .sweep import ERROR, sweep


def _sweep_file(path: Path) -> tuple[object, dict, Path]:
    """The base experiment, grid and base directory a sweep file gives."""
    doc = json.loads(_xlat.json_from_toml(path.read_text()))
    unknown = set(doc) - {"experiment", "grid"}
    if unknown:
        raise ValueError(f"{path}: unknown field `{sorted(unknown)[0]}` (a sweep file has `experiment` and `[grid]`)")
    if "experiment" not in doc or "grid" not in doc:
        raise ValueError(f"{path}: a sweep file needs `experiment` (a path or a table) and `[grid]`")
    base = doc["experiment"]
    if isinstance(base, str):
        base = path.parent / base
    return base, doc["grid"], path.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xlat", description="xlat from Python; see docs/python.md")
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sweep", help="run a parameter sweep on Dask")
    s.add_argument("file", type=Path, help="the sweep file (TOML: experiment and [grid])")
    s.add_argument("--out", type=Path, required=True, help="directory of the results; a rerun skips finished cells")
    s.add_argument("--scheduler", help="address of a Dask scheduler (tcp://host:8786); a local cluster otherwise")
    s.add_argument("--workers", type=int, help="processes of the local cluster (the cores by default)")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    try:
        base, grid, base_dir = _sweep_file(args.file)
        frame = sweep(base, grid, args.scheduler, args.out, base_dir=base_dir, workers=args.workers, progress=not args.quiet)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    failed = frame[frame[ERROR].notna()]
    for _, row in failed.iterrows():
        print(f"cell {row['cell']} failed: {row[ERROR]}", file=sys.stderr)
    cells = frame["cell"].nunique()
    print(f"{cells - len(failed)} of {cells} cells done; results in {args.out / 'results.parquet'}", file=sys.stderr)
    return 1 if len(failed) else 0


if __name__ == "__main__":
    sys.exit(main())

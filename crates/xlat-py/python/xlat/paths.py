"""Field paths: naming a field of an experiment dict, as sweeps' grids do.

A path is dotted keys, as the experiment file nests them: ``seed``, ``workload.scale``,
``machine.tlb.levels.entries``. Where a key holds a list of tables (``[[machine]]``,
``[[workload]]``, ``[[machine.mosaic]]``, ``tlb.levels``), a bare key addresses every table of
the list, and a selector addresses one: ``machine[0]`` by index, ``machine[cpu]`` by its
``name``. So ``machine.mosaic.arity`` sets the arity of every Mosaic TLB of every machine,
``machine[mosaic].mosaic[0].arity`` one. A grid key may link several paths with commas (``machine.ways, machine.mosaic.ways``):
each cell sets them all to its value. A missing last key is created; a selector or a middle
key that addresses nothing is a ``ValueError`` naming the path.
"""

from __future__ import annotations

import re
from typing import Any

_SEGMENT = re.compile(r"^([^.\[\]]+)(?:\[([^\[\]]+)\])?$")


def linked(key: str) -> list[str]:
    """The paths a grid key sets: one, or several separated by commas."""
    return [path.strip() for path in key.split(",")]


def parse(path: str) -> list[tuple[str, str | None]]:
    """The ``(key, selector)`` segments of ``path``."""
    segments = []
    for part in path.split("."):
        m = _SEGMENT.match(part)
        if not m:
            raise ValueError(f"{path}: `{part}` is not a key or key[selector]")
        segments.append((m.group(1), m.group(2)))
    return segments


def _select(items: list, selector: str, where: str) -> list:
    """The tables of ``items`` that ``selector`` names: an index or a ``name``."""
    if selector.lstrip("-").isdigit():
        i = int(selector)
        if not -len(items) <= i < len(items):
            raise ValueError(f"{where}: index {i} is out of range ({len(items)} tables)")
        return [items[i]]
    named = [t for t in items if isinstance(t, dict) and t.get("name") == selector]
    if not named:
        raise ValueError(f"{where}: no table is named `{selector}`")
    return named


def _tables(value: Any, selector: str | None, where: str) -> list:
    """The tables ``value`` (a table or a list of them) holds, narrowed by ``selector``."""
    items = value if isinstance(value, list) else [value]
    if selector is not None:
        items = _select(items, selector, where)
    if not all(isinstance(t, dict) for t in items):
        raise ValueError(f"{where}: is not a table or a list of tables")
    return items


def assign(doc: dict, path: str, value: Any) -> None:
    """Sets the field at ``path`` of ``doc`` to ``value`` in every table it addresses."""
    segments = parse(path)
    tables = [doc]
    for depth, (key, selector) in enumerate(segments[:-1]):
        where = ".".join(f"{k}[{s}]" if s else k for k, s in segments[: depth + 1])
        found = []
        for t in tables:
            if key not in t:
                raise ValueError(f"{where}: the experiment has no such field")
            found.extend(_tables(t[key], selector, where))
        tables = found
    key, selector = segments[-1]
    if selector is not None:
        raise ValueError(f"{path}: a path ends in a field, not in a selected table")
    for t in tables:
        t[key] = value

"""Steps of a path as the durations table gives them, and how they compose: in sequence, or in parallel where
they overlap as they happen (the longest branch decides when what follows starts).

    part = Part.of("EKS control plane", durations.steps["eks-control-plane"])
    path = Seq((boot, Par((Seq((plugins, pull)), prewarm)), load, engine))
    laid = layout(path)          # every part with its start and end (seconds), critical or not
    laid.end, laid.critical      # when the path is done; the parts that decided it

A part computed from figures (bytes over a rate) is `derived` when every input is sourced and an `estimate`
when any is; its source names each input.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Union

from serving_stack.facts.durations import ImageSize, Kind, PullRate, Rate, Step


def combined_kind(kinds: Iterable[Kind]) -> Kind:
    """An estimate if any input is one; a single measured input stays measured; otherwise derived."""
    listed = list(kinds)
    if "estimate" in listed:
        return "estimate"
    return "measured" if listed == ["measured"] else "derived"


@dataclass(frozen=True)
class Part:
    """One step: its typical and worst duration (seconds), its kind and source."""

    name: str
    seconds: float
    worst_seconds: float
    kind: Kind
    source: str

    @classmethod
    def of(cls, name: str, step: Step) -> Part:
        return cls(name, step.seconds, step.worst, step.kind, step.source)

    @property
    def estimated(self) -> bool:
        return self.kind == "estimate"


def transfer(name: str, gigabytes: float, size_kind: Kind, size_source: str, rate: Rate) -> Part:
    """Moving `gigabytes` at a rate (MB/s)."""
    return Part(
        name,
        gigabytes * 1000 / rate.mbPerSecond,
        gigabytes * 1000 / rate.worst,
        combined_kind([size_kind, rate.kind]),
        f"{gigabytes:g} GB ({size_source}) at {rate.mbPerSecond:g} MB/s ({rate.source})",
    )


def image_pull(name: str, image: str, size: ImageSize, rate: PullRate, mode: str) -> Part:
    """Pulling, unpacking and starting an image of `size` (unpacked) the way `mode` names."""
    return Part(
        name,
        size.unpackedGB * rate.secondsPerGB,
        size.unpackedGB * rate.worstSecondsPerGB,
        combined_kind([size.kind, rate.kind]),
        f"{image}: {size.unpackedGB:g} GB unpacked ({size.source}) x {rate.secondsPerGB:g} s/GB, {mode} "
        f"({rate.source})",
    )


@dataclass(frozen=True)
class Seq:
    """Nodes one after the other."""

    items: tuple[Node, ...]


@dataclass(frozen=True)
class Par:
    """Nodes that run at once; what follows starts when the longest is done."""

    branches: tuple[Node, ...]


Node = Union[Part, Seq, Par]


@dataclass(frozen=True)
class Placed:
    part: Part
    start: float
    end: float
    critical: bool


@dataclass(frozen=True)
class Laid:
    end: float
    placed: tuple[Placed, ...]

    @property
    def critical(self) -> list[Placed]:
        return [p for p in self.placed if p.critical]


def _lay(node: Node, start: float, critical: bool, worst: bool) -> Laid:
    if isinstance(node, Part):
        end = start + (node.worst_seconds if worst else node.seconds)
        return Laid(end, (Placed(node, start, end, critical),))
    if isinstance(node, Seq):
        placed: list[Placed] = []
        end = start
        for item in node.items:
            laid = _lay(item, end, critical, worst)
            placed += laid.placed
            end = laid.end
        return Laid(end, tuple(placed))
    ends = [_lay(branch, start, False, worst).end for branch in node.branches]
    longest = ends.index(max(ends)) if ends else -1
    laid_branches = [_lay(b, start, critical and i == longest, worst) for i, b in enumerate(node.branches)]
    return Laid(max(ends, default=start), tuple(p for laid in laid_branches for p in laid.placed))


def layout(node: Node, start: float = 0.0, worst: bool = False) -> Laid:
    """Every part placed in time (seconds from `start`), the critical ones marked: in a parallel block the
    branch that ends last, the first of equals."""
    return _lay(node, start, True, worst)

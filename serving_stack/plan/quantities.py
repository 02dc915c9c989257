"""Small value helpers the plan shares: Kubernetes versions and storage quantities."""

from __future__ import annotations

import re
from typing import Optional


def version_tuple(text: str) -> tuple[int, ...]:
    """`1.33` -> (1, 33), comparable."""
    return tuple(int(p) for p in text.split("."))


def gib(quantity: str) -> Optional[float]:
    """`1200Gi` / `2.4Ti` -> GiB; None for units the model cache does not use."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Gi|Ti)", quantity)
    return float(match[1]) * (1024 if match[2] == "Ti" else 1) if match else None

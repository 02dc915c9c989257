"""`make bench` runs each benchmarks/*.py as a script; none is a test, so this loads each one (its imports
and top-level code, not `main`) to catch a benchmark left behind when a module it imports changes."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize("script", sorted(p.name for p in BENCHMARKS.glob("*.py")))
def test_each_benchmark_loads(script, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # scripts run from there import their neighbours
    spec = importlib.util.spec_from_file_location(f"bench_{script[:-3]}", BENCHMARKS / script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    assert callable(getattr(module, "main", None)) or script == "standard_readers.py"

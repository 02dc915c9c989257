"""Grafana dashboard specs (`catalog/dashboards/*.yaml`): rows of panels whose queries name metrics by role."""

from __future__ import annotations

import functools
from pathlib import Path

import pydantic

from serving_stack.facts.data import DATA_DIR, Data, load_model


class Query(Data):
    expr: str
    legend: str


class Panel(Data):
    title: str
    unit: str
    queries: tuple[Query, ...] = pydantic.Field(min_length=1)


class Row(Data):
    title: str
    panels: tuple[Panel, ...] = pydantic.Field(min_length=1)


class Variable(Data):
    name: str = pydantic.Field(pattern=r"^[a-z_]+$")
    metric: str = pydantic.Field(pattern=r"^@[A-Za-z]+\.[A-Za-z]+$")
    label: str


class DashboardSpec(Data):
    uid: str = pydantic.Field(pattern=r"^[a-z0-9-]{1,40}$")
    title: str
    description: str
    tags: tuple[str, ...]
    variables: tuple[Variable, ...]
    rows: tuple[Row, ...] = pydantic.Field(min_length=1)

    def expressions(self) -> list[str]:
        return [q.expr for row in self.rows for panel in row.panels for q in panel.queries]


@functools.lru_cache(maxsize=4)
def load_dashboard_specs(root: Path = DATA_DIR) -> tuple[DashboardSpec, ...]:
    return tuple(load_model(path, DashboardSpec, root) for path in sorted((root / "dashboards").glob("*.yaml")))

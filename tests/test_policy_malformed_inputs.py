"""Hand-edited record files reach the pack through `make policy`: inputs of any shape (a list where a mapping
belongs, a mapping where a name belongs) are judged or skipped, never a traceback. Bounded: a fixed sample of
mutations of the dev and prod renders, three values at a time."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from policy_helpers import recording

from policy.nemotron_policies.offline import evaluate

MALFORMED = [None, 1, 1.5, True, "x", "$(X)", [], {}, [None], [1, "a"], {"a": None}, {"a": [1]}, ["x", {"y": 1}]]
TRIALS, CHANGES_PER_TRIAL = 16, 3


def paths(value: Any, path: tuple = ()) -> Iterator[tuple]:
    if path:
        yield path
    if isinstance(value, dict):
        for key, child in value.items():
            yield from paths(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from paths(child, (*path, index))


def test_malformed_values_anywhere_never_crash_the_pack():
    rng = random.Random(20261130)
    for stack in ("dev", "prod"):
        base = recording(stack)
        everywhere = [(index, path) for index, resource in enumerate(base) for path in paths(resource.inputs)]
        for _ in range(TRIALS // 2):
            resources = recording(stack)
            for index, path in rng.sample(everywhere, CHANGES_PER_TRIAL):
                node = resources[index].inputs
                try:
                    for step in path[:-1]:
                        node = node[step]
                    node[path[-1]] = rng.choice(MALFORMED)
                except (KeyError, IndexError, TypeError):
                    continue  # an earlier change in this trial replaced a parent
            evaluate(resources, stack=stack)

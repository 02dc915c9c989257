import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from serving_stack.facts.sagemaker import ENVIRONMENT_OVERRIDES


@pytest.fixture(autouse=True)
def no_jumpstart_overrides(monkeypatch):
    """A developer's JumpStart environment overrides must not leak into the expected buckets and specs."""
    for name in ENVIRONMENT_OVERRIDES:
        monkeypatch.delenv(name, raising=False)


def pytest_configure(config):
    # Modules whose expectations come from the catalog (never literal target ids or counts): the absorb
    # test runs them against a synthetic upstream revision (tests/test_absorb_revision.py).
    config.addinivalue_line("markers", "catalog_driven: derives its expectations from the catalog it runs against")
    # `make test` runs `-m "not slow"` (under 3 minutes on 2 cores); `make test-all` and CI run these too.
    config.addinivalue_line(
        "markers", "slow: a real service, tool or pipeline end to end (LiteLLM, AIPerf, make absorb, make diff)"
    )

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from serving_stack.facts.dates import TODAY_ENV
from serving_stack.facts.sagemaker import ENVIRONMENT_OVERRIDES
from serving_stack.plan.placeholders import ALLOW_ENV

# The day the suite judges dated facts on, so that it does not change verdict as the clock moves: one on
# which every Kubernetes version the fixtures use is in EKS standard support (1.35, the committed stacks' and
# the minor of the pinned cluster-autoscaler image; 1.33 and 1.34 too). Tests of the dates inject their own days;
# tests/test_dated_facts.py checks the committed stacks against the real clock.
SUITE_TODAY = "2026-06-01"


@pytest.fixture(autouse=True)
def no_jumpstart_overrides(monkeypatch):
    """A developer's JumpStart environment overrides must not leak into the expected buckets and specs."""
    for name in ENVIRONMENT_OVERRIDES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True, scope="session")
def suite_today():
    """Every test (and module- or session-scoped fixture, which run before function-scoped ones) judges dates
    on `SUITE_TODAY` unless it sets its own; no placeholder allowance leaks in from the shell."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(TODAY_ENV, SUITE_TODAY)
        patch.delenv(ALLOW_ENV, raising=False)
        yield


def pytest_configure(config):
    # Modules whose expectations come from the catalog (never literal target ids or counts): the absorb
    # test runs them against a synthetic upstream revision (tests/test_absorb_revision.py).
    config.addinivalue_line("markers", "catalog_driven: derives its expectations from the catalog it runs against")
    # `make test` runs `-m "not slow"` (under 3 minutes on 2 cores); `make test-all` and CI run these too.
    config.addinivalue_line(
        "markers",
        "slow: a real service, tool or pipeline end to end (LiteLLM, AIPerf, checkov, make absorb, make diff)",
    )

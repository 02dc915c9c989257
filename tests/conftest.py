import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def pytest_configure(config):
    # Modules whose expectations come from the catalog (never literal target ids or counts): the absorb
    # test runs them against a synthetic upstream revision (tests/test_absorb_revision.py).
    config.addinivalue_line("markers", "catalog_driven: derives its expectations from the catalog it runs against")

"""catalog/checkpoints.yaml is the size data the PVC bound uses: it covers every checkpoint a catalog target
loads, says which sizes are estimates, and agrees with the copies other tools keep (the rollout model's
download sizes, the SageMaker LMI weights)."""

from __future__ import annotations

from pathlib import Path

import yaml

from serving_stack.facts.catalog import load_catalog, load_checkpoint_sizes
from serving_stack.facts.sagemaker import load_lmi

SIZES = load_checkpoint_sizes()
ROLLOUT_DURATIONS = Path(__file__).resolve().parent.parent / "tools" / "rollout" / "durations.yaml"


def test_every_checkpoint_a_target_loads_has_a_size():
    loaded = {repo for recipe in load_catalog().recipes.values() for repo in recipe.checkpoints}
    assert loaded <= set(SIZES.repositories)


def test_every_estimate_says_so_in_its_source():
    for size in [*SIZES.repositories.values(), SIZES.unlisted]:
        assert size.source.startswith("estimate") == size.estimate, size.source


def test_the_rollout_model_downloads_the_same_sizes():
    rollout = yaml.safe_load(ROLLOUT_DURATIONS.read_text())["checkpoints"]
    assert {repo: entry["size"] for repo, entry in rollout["sizes_gb"].items()} == {
        repo: size.sizeGB for repo, size in SIZES.repositories.items()
    }
    assert rollout["default_gb"]["size"] == SIZES.unlisted.sizeGB


def test_sagemaker_weights_are_the_same_sizes():
    for repo, entry in load_lmi().repositories.items():
        assert entry.weightsGb == SIZES.repositories[repo].sizeGB, repo

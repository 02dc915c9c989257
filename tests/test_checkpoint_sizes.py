"""catalog/checkpoints.yaml is the size data the PVC bound and the timing model use: it covers every checkpoint a
catalog target loads, says which sizes are estimates, and agrees with the copy the SageMaker LMI weights keep."""

from __future__ import annotations

from serving_stack.facts.catalog import load_catalog, load_checkpoint_sizes
from serving_stack.facts.sagemaker import load_lmi

SIZES = load_checkpoint_sizes()


def test_every_checkpoint_a_target_loads_has_a_size():
    loaded = {repo for recipe in load_catalog().recipes.values() for repo in recipe.checkpoints}
    assert loaded <= set(SIZES.repositories)


def test_every_estimate_says_so_in_its_source():
    for size in [*SIZES.repositories.values(), SIZES.unlisted]:
        assert size.source.startswith("estimate") == size.estimate, size.source


def test_sagemaker_weights_are_the_same_sizes():
    for repo, entry in load_lmi().repositories.items():
        assert entry.weightsGb == SIZES.repositories[repo].sizeGB, repo

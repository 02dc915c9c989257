"""catalog/checkpoints.yaml is the size data the PVC bound and the timing model use: it covers every checkpoint a
catalog target loads, says which sizes are estimates, and agrees with the copy the SageMaker LMI weights keep."""

from __future__ import annotations

from serving_stack.facts.catalog import load_catalog, load_checkpoint_sizes
from serving_stack.facts.sagemaker import load_lmi
from tools.absorb.__main__ import data_gaps

SIZES = load_checkpoint_sizes()


def test_a_checkpoint_without_a_size_counts_at_the_estimate_and_is_a_step_of_the_absorb():
    """An absorbed revision may load a checkpoint the file lacks: it counts at the unlisted estimate, and the
    absorb report lists it as a data gap to close (every one, planted or not)."""
    planted = "nvidia/Planted-Unsized-Checkpoint"
    loads = {recipe.id: recipe.checkpoints for recipe in load_catalog().recipes.values()}
    first = next(iter(loads))
    loads[first] = [*loads[first], planted]
    unsized = {repo for checkpoints in loads.values() for repo in checkpoints} - set(SIZES.repositories)
    assert planted in unsized
    assert SIZES.size(planted) == SIZES.unlisted and SIZES.unlisted.estimate
    assert sorted(gap.split()[1] for gap in data_gaps({}, loads, SIZES)) == sorted(unsized)


def test_every_estimate_says_so_in_its_source():
    for size in [*SIZES.repositories.values(), SIZES.unlisted]:
        assert size.source.startswith("estimate") == size.estimate, size.source


def test_sagemaker_weights_are_the_same_sizes():
    for repo, entry in load_lmi().repositories.items():
        assert entry.weightsGb == SIZES.repositories[repo].sizeGB, repo

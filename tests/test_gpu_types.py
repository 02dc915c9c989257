"""GPU types are data (catalog/gpus.yaml: product label, memory, host arch). A target for a GPU no entry knows
plans without pools and fails with a message that says what to add when a stack has pools; adding the GPU
to the data (and a pool of it) is all it takes to place it."""

from __future__ import annotations

import shutil

import pytest
import yaml
from aws_helpers import eks_config, node_pool
from catalog_picks import pick
from plan_helpers import plan_of

from serving_stack.config import ConfigError
from serving_stack.facts import load_facts
from serving_stack.facts.aws import load_aws_catalog, load_gpus
from serving_stack.facts.catalog import CATALOG_DIR, Performance

pytestmark = pytest.mark.catalog_driven
NEW_LABEL = "NVIDIA-X999-TEST"


def test_every_instance_type_agrees_with_its_gpus_memory():
    aws = load_aws_catalog()
    assert {name: t.gpuMemoryGB for name, t in aws.instance_types.items()} == {
        name: aws.gpus[t.gpu].memoryGB for name, t in aws.instance_types.items()
    }


def copy_catalog(tmp_path):
    root = tmp_path / "catalog"
    shutil.copytree(CATALOG_DIR, root)
    return root


def edit_yaml(path, change) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data))


def test_memory_that_disagrees_with_an_instance_type_names_the_key(tmp_path):
    root = copy_catalog(tmp_path)
    instance, facts = next(iter(load_aws_catalog().instance_types.items()))
    edit_yaml(root / "gpus.yaml", lambda d: d["gpus"][facts.gpu].update(memoryGB=facts.gpuMemoryGB + 1))
    with pytest.raises(ConfigError, match=rf"^catalog/instance_types.yaml: instanceTypes.{instance}.gpuMemoryGB: "):
        load_facts(root)


def test_a_product_label_of_two_gpus_is_rejected(tmp_path):
    root = copy_catalog(tmp_path)
    first, second = list(load_gpus())[:2]
    edit_yaml(
        root / "gpus.yaml",
        lambda d: d["gpus"][second]["alternativeProductLabels"].append(d["gpus"][first]["productLabel"]),
    )
    with pytest.raises(ConfigError, match=rf"catalog/gpus.yaml: gpus.{second}: product label .* is also {first}'s"):
        load_gpus(root)


@pytest.fixture
def new_gpu_catalog(tmp_path):
    """A copy of the catalog with a target for a GPU no data file knows, without published figures."""
    root = copy_catalog(tmp_path)
    source = pick(disaggregated=False, routing="single", known_gpu=True)
    new_id = f"{source.id.split('/')[0]}/agg-x999"
    text = (CATALOG_DIR / source.entry.manifest).read_text().replace(source.gpu_products[0], NEW_LABEL)
    (root / "recipes" / new_id).mkdir(parents=True)
    (root / "recipes" / new_id / "deploy.yaml").write_text(text.replace(source.name, new_id.replace("/", "-")))
    entry = {
        **source.entry.model_dump(),
        "id": new_id,
        "manifest": f"recipes/{new_id}/deploy.yaml",
        "performance": dict.fromkeys(Performance.model_fields, "unknown"),
    }
    edit_yaml(root / "targets.yaml", lambda d: d["targets"].append(entry))
    return root, new_id


def test_without_pools_it_plans_with_its_figures_unknown(new_gpu_catalog):
    root, new_id = new_gpu_catalog
    raw = {
        "kubernetes": {"cluster": {"source": "kubeconfig", "context": "c"}},
        "modelCache": {"storageClassName": "rwx"},
        "targets": [{"id": new_id}],
    }
    (endpoint,) = plan_of(raw, facts=load_facts(root)).endpoints
    assert (
        endpoint.expectedOutputTokensPerSecond,
        endpoint.expectedTokensPerSecondPerUser,
        endpoint.meetsPublishedCriteria,
    ) == (None, None, None)


def test_with_pools_it_is_a_config_error_that_says_what_to_add(new_gpu_catalog):
    root, new_id = new_gpu_catalog
    name, instance = next(iter(load_aws_catalog().instance_types.items()))
    capacity = {
        "capacityType": "capacity-block",
        "capacityReservationId": "cr-0123456789abcdef0",
        "kubernetesVersion": "1.33",
    }
    raw = eks_config(
        [node_pool("pool", name, **(capacity if ("on-demand" not in instance.capacityTypes) else {}))], [{"id": new_id}]
    )
    with pytest.raises(ConfigError) as raised:
        plan_of(raw, facts=load_facts(root))
    assert str(raised.value) == (
        f"targets[0].id: '{new_id}' cannot be placed: GPU product '{NEW_LABEL}' is in no entry of catalog/gpus.yaml: "
        "add the GPU there (productLabel, memoryGB, arch) and a node pool (or nodeFacts) that has it"
    )


def test_once_the_gpu_is_data_a_pool_of_it_places_the_target(new_gpu_catalog):
    root, new_id = new_gpu_catalog
    edit_yaml(
        root / "gpus.yaml", lambda d: d["gpus"].update(x999={"productLabel": NEW_LABEL, "memoryGB": 288, "arch": None})
    )
    pool = {
        "name": "x999",
        "managed": False,
        "nodeFacts": {"gpu": "x999", "gpus": 8, "arch": "x86_64"},
        "desiredSize": 1,
        "maxSize": 2,
    }
    raw = eks_config([pool], [{"id": new_id}])
    raw["kubernetes"] = {"cluster": {"source": "kubeconfig", "context": "c"}}
    raw["aws"].pop("cluster")
    (planned,) = plan_of(raw, facts=load_facts(root)).serving.targets
    assert planned.pool is not None
    assert planned.pool.gpu_product == NEW_LABEL

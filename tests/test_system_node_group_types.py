"""The system node group's instance types exist (the pinned botocore's EC2 model lists them) and share one
architecture (the GPU types' `arch` from catalog/instance_types.yaml, Graviton families by the naming rule
of catalog/name_limits.yaml): generated pairs of real types, and names that are not types."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from serving_stack.facts import load_facts
from serving_stack.facts.name_limits import load_name_limits
from serving_stack.plan.cluster import check_system_instance_types, ec2_instance_types

FACTS = load_facts()
GRAVITON = load_name_limits().gravitonFamilies
KNOWN = sorted(ec2_instance_types())


def arch(name: str) -> str:
    gpu = FACTS.aws.instance_types.get(name)
    return gpu.arch if gpu is not None else ("arm64" if GRAVITON.arm64(name) else "x86_64")


def test_known_graviton_and_x86_families():
    assert {arch(n) for n in ("m7g.large", "c7gn.xlarge", "r8gd.large", "is4gen.xlarge", "a1.large")} == {"arm64"}
    assert {arch(n) for n in ("m7i.large", "g4dn.xlarge", "m7i-flex.large", "p5.48xlarge")} == {"x86_64"}
    assert arch("p6e-gb200.36xlarge") == "arm64"  # from the data, not the name


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(KNOWN), st.sampled_from(KNOWN))
def test_one_architecture_per_group(first, second):
    errors = check_system_instance_types([first, second], FACTS)
    assert bool(errors) == (arch(first) != arch(second)), errors
    assert all(str(e).startswith("aws.systemNodeGroup.instanceTypes[1]: ") for e in errors)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(KNOWN), st.sampled_from(["2", "9", "z", "q"]), st.integers(min_value=0, max_value=3))
def test_a_type_ec2_does_not_have_is_refused(real, letter, position):
    family, size = real.split(".", 1)
    made_up = family[: position + 1] + letter + family[position + 1 :] + "." + size
    assume(made_up not in ec2_instance_types())
    errors = check_system_instance_types(["m7i.2xlarge", made_up], FACTS)
    assert [str(e).split(":")[0] for e in errors] == ["aws.systemNodeGroup.instanceTypes[1]"]
    assert "is not an EC2 instance type" in str(errors[0])

"""What `pulumi destroy` keeps and deletes, with data resources named."""

from __future__ import annotations

from rollout_helpers import RULES, findings_about, graph, key, named, of_kind, of_type, records, report

from tools.rollout.destroy import DELETED, FAILS, KEPT, REFUSED
from tools.rollout.report import markdown

DESTROY = "destroy"


def _rows(stack_records):
    """Destroy rows by resource key (names repeat across types)."""
    return {row.resource.key: row for row in report(stack_records).destroy}


def test_a_retained_claim_in_a_namespace_the_stack_deletes_is_not_kept():
    dev = records("dev")
    (claim,) = of_kind(dev, "PersistentVolumeClaim")
    claim["retainOnDelete"], claim["protect"] = True, False
    namespace = claim["inputs"]["metadata"]["namespace"]
    (line,) = findings_about(dev, claim["name"], DESTROY)
    assert "retainOnDelete does not keep it" in line
    assert f"Namespace {namespace}" in line
    assert _rows(dev)[key(claim)].outcome == DELETED
    (namespace_record,) = [n for n in of_kind(dev, "Namespace") if n["inputs"]["metadata"]["name"] == namespace]
    namespace_record["retainOnDelete"] = True
    assert _rows(dev)[key(claim)].outcome == KEPT
    assert findings_about(dev, claim["name"], DESTROY) == []


def test_a_protected_claim_stops_destroy_and_keeps_everything_it_depends_on():
    prod = records("prod")
    for resource in prod:
        resource["protect"] = False
    (claim,) = of_kind(prod, "PersistentVolumeClaim")
    claim["protect"] = True
    stack = graph(prod)
    rows = _rows(prod)
    assert rows[key(claim)].outcome == REFUSED
    held = {k for k in stack.ancestors(key(claim)) if stack.resources[k].custom and not stack.resources[k].is_provider}
    assert {k for k, row in rows.items() if row.how == f"protected {claim['name']} depends on it"} == held
    (cluster,) = of_type(prod, "aws:eks/cluster:Cluster")
    assert key(cluster) in held
    assert any(f"keeps the {len(held)} resources" in x for x in findings_about(prod, claim["name"], DESTROY))


def test_a_bucket_without_force_destroy_fails_and_its_kms_key_outlives_nothing_it_should():
    prod = records("prod")
    (bucket,) = of_type(prod, "aws:s3/bucket:Bucket")
    assert bucket["retainOnDelete"] and _rows(prod)[key(bucket)].outcome == "kept"  # the stack keeps captured data
    bucket["retainOnDelete"] = False
    for kms_key in of_type(prod, "aws:kms/key:Key"):
        kms_key["retainOnDelete"] = False
    bucket["inputs"].pop("forceDestroy", None)
    assert _rows(prod)[key(bucket)].outcome == FAILS
    fails_if = RULES.aws_deletion[bucket["type"]]["fails_if"]
    assert any(fails_if in x for x in findings_about(prod, bucket["name"], DESTROY))
    stack = graph(prod)
    keys = [
        k
        for k in of_type(prod, "aws:kms/key:Key")
        if any(
            any(f"aws:kms/key:Key::{k['name']}" in d for d in deps.values())
            and any(f"{bucket['type']}::{bucket['name']}" in d for d in deps.values())
            for deps in (r.property_dependencies for r in stack)
        )
    ]
    assert keys
    assert all(findings_about(prod, k["name"], DESTROY) for k in keys)
    bucket["inputs"]["forceDestroy"] = True
    assert _rows(prod)[key(bucket)].outcome == DELETED
    assert all(findings_about(prod, k["name"], DESTROY) == [] for k in keys)


def test_operator_on_a_cluster_the_stack_does_not_create_is_removed_for_everyone():
    shared = records("dev-platform")
    release = named(shared, "dynamo-release")
    assert any("every user" in x for x in findings_about(shared, release["name"], DESTROY))
    assert of_type(records("dev"), release["type"]) == [], "the committed dev stack leaves the shared operator alone"
    prod = records("prod")
    assert not any("every user" in x for x in findings_about(prod, named(prod, "dynamo-release")["name"], DESTROY))


def test_retain_on_delete_from_config_keeps_the_claim_and_its_namespace():
    retained = records("dev-retained")
    (claim,) = of_kind(retained, "PersistentVolumeClaim")
    namespace = claim["inputs"]["metadata"]["namespace"]
    (namespace_record,) = [n for n in of_kind(retained, "Namespace") if n["inputs"]["metadata"]["name"] == namespace]
    rows = _rows(retained)
    assert rows[key(claim)].outcome == rows[key(namespace_record)].outcome == KEPT
    assert findings_about(retained, claim["name"], DESTROY) == []


def test_data_resources_are_named_in_the_destroy_table():
    prod = records("prod")
    section = report(prod)
    table = section.destroy
    data = [row for row in table if row.data_role]
    assert {row.data_role for row in data} >= {"claim", "volume", "file-system", "bucket", "key"}
    text = markdown(section)
    assert all(f"**{row.resource.name}**" in text for row in data)

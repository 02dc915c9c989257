"""The PR diff's field rules on small inputs: secrets stay hidden, IAM widening is called out, lists match
by name, and the replacement table follows the provider rules it cites."""

from __future__ import annotations

import json
from typing import Any

from tools.pr_diff.changes import SECRET
from tools.pr_diff.iam import diff_policy
from tools.pr_diff.markdown import MAX_BYTES, render_markdown
from tools.pr_diff.records import Render, load_render
from tools.pr_diff.stack_diff import diff_stack
from tools.pr_diff.values import diff_values
from tools.render import WARNINGS_FILE
from tools.rollout.rules import load_rules


def _policy(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def _render(records: list[dict[str, Any]], outputs: dict[str, Any] | None = None) -> Render:
    return Render.from_records(records, outputs or {})


def _record(type_token: str, name: str, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
    return {
        "type": type_token,
        "name": name,
        "custom": True,
        "parent": "",
        "provider": "",
        "dependsOn": [],
        "protect": False,
        "retainOnDelete": False,
        "inputs": inputs,
        **options,
    }


def test_values_beside_a_secret_are_hidden() -> None:
    changes = diff_values(
        {"auth": {"user": "alice", "password": SECRET}}, {"auth": {"user": "bob", "password": SECRET}}
    )
    assert [(c.path, c.hidden, c.before, c.after) for c in changes] == [("auth.user", True, None, None)]


def test_kubeconfig_and_secret_payloads_never_reach_the_comment() -> None:
    provider = "pulumi:providers:kubernetes"
    base = _render(
        [
            _record(provider, "k8s", {"kubeconfig": "apiVersion: v1 token-one"}),
            _record(
                "kubernetes:core/v1:Secret",
                "hf",
                {"metadata": {"name": "hf"}, "stringData": {"T": "one"}},
                provider=f"{provider}::k8s",
            ),
        ]
    )
    head = _render(
        [
            _record(provider, "k8s", {"kubeconfig": "apiVersion: v1 token-two"}),
            _record(
                "kubernetes:core/v1:Secret",
                "hf",
                {"metadata": {"name": "hf"}, "stringData": {"T": "two"}},
                provider=f"{provider}::k8s",
            ),
        ],
        outputs={"kubeconfig": SECRET},
    )
    text = render_markdown(diff_stack("t", base, head, load_rules()), "base", "head")
    assert "token-one" not in text and "token-two" not in text and "`one`" not in text and "`two`" not in text
    assert "changed (value not shown)" in text


def test_lists_of_named_objects_match_by_name() -> None:
    before = {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
    after = {"env": [{"name": "NEW", "value": "0"}, {"name": "A", "value": "1"}, {"name": "B", "value": "3"}]}
    assert [(c.path, c.before, c.after) for c in diff_values(before, after)][1:] == [("env[B].value", "2", "3")]
    assert diff_values(before, after)[0].path == "env[NEW]"


def test_json_strings_are_compared_field_by_field() -> None:
    old = json.dumps({"kv_connector": "NixlConnector", "backends": ["UCX"]})
    new = json.dumps({"kv_connector": "NixlConnector", "backends": ["LIBFABRIC"]})
    (change,) = diff_values({"config": old}, {"config": new})
    assert (change.path, change.before, change.after) == ("config(json).backends", ["UCX"], ["LIBFABRIC"])


def test_iam_widening_by_action_resource_wildcard_and_condition() -> None:
    read = {"Sid": "Read", "Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/models/v1/*"}
    wider: list[dict[str, Any]] = [
        {**read, "Action": ["s3:GetObject", "s3:PutObject"]},
        {**read, "Resource": "arn:aws:s3:::b/*"},
        {**read, "Action": "s3:*"},
    ]
    for statement in wider:
        (change,) = diff_policy(_policy(read), _policy(statement), "policy")
        assert change.widens, statement
    narrower = {**read, "Resource": "arn:aws:s3:::b/models/v1/weights/*"}
    assert not diff_policy(_policy(read), _policy(narrower), "policy")[0].widens
    listed = {
        "Sid": "List",
        "Effect": "Allow",
        "Action": "s3:ListBucket",
        "Resource": "arn:aws:s3:::b",
        "Condition": {"StringLike": {"s3:prefix": ["models/v1/*"]}},
    }
    loosened = {**listed, "Condition": {"StringLike": {"s3:prefix": ["models/*"]}}}
    assert diff_policy(_policy(listed), _policy(loosened), "policy")[0].widens
    assert diff_policy(_policy(listed), _policy({**listed, "Condition": {}}), "policy")[0].widens


def test_iam_added_allow_widens_and_narrowed_deny_widens() -> None:
    deny = {"Effect": "Deny", "Action": ["s3:DeleteObject", "s3:PutObject"], "Resource": "*"}
    (added,) = diff_policy(_policy(), _policy({"Effect": "Allow", "Action": "kms:Decrypt", "Resource": "*"}), "p")
    assert added.widens and added.note.startswith("added: Allow")
    (narrowed,) = diff_policy(_policy(deny), _policy({**deny, "Action": ["s3:DeleteObject"]}), "p")
    assert narrowed.widens


def test_replacement_rules_follow_the_providers() -> None:
    rules = load_rules()
    pvc = "kubernetes:core/v1:PersistentVolumeClaim"
    claim = {
        "metadata": {"name": "cache"},
        "spec": {"storageClassName": "efs", "resources": {"requests": {"storage": "1Gi"}}},
    }
    bigger = json.loads(json.dumps(claim).replace("1Gi", "2Gi"))
    other_class = json.loads(json.dumps(claim).replace("efs", "fsx"))
    assert rules.replacing_fields(pvc, claim, bigger, {}) == []
    assert [p for p, _ in rules.replacing_fields(pvc, claim, other_class, {})] == ["spec.storageClassName"]
    job = "kubernetes:batch/v1:Job"
    assert [
        p
        for p, _ in rules.replacing_fields(job, {"spec": {"template": {"a": 1}}}, {"spec": {"template": {"a": 2}}}, {})
    ] == ["spec.template"]
    config_map = "kubernetes:core/v1:ConfigMap"
    old, new = {"data": {"k": "1"}}, {"data": {"k": "2"}}
    assert rules.replacing_fields(config_map, old, new, {})
    assert not rules.replacing_fields(config_map, old, new, {"enableConfigMapMutable": "true"})
    assert rules.replacing_fields(config_map, old, {**new, "immutable": True}, {"enableConfigMapMutable": "true"})
    model = "aws:sagemaker/model:Model"
    assert not rules.replacing_fields(model, {"tags": {"a": "1"}}, {"tags": {"a": "2"}}, {})


def test_a_new_parent_type_is_a_new_urn(tmp_path: Any) -> None:
    component = _record("nemotron:old:Target", "t", {}, custom=False)
    child = _record("kubernetes:core/v1:ConfigMap", "cm", {"metadata": {"name": "cm"}}, parent="nemotron:old:Target::t")
    moved = {**child, "parent": "nemotron:new:Target::t"}
    base = _render([component, child])
    head = _render([{**component, "type": "nemotron:new:Target"}, moved])
    change = next(c for c in diff_stack("t", base, head, load_rules()).resources if c.name == "cm")
    assert change.kind == "replace" and "aliases" in change.reasons[0]
    (tmp_path / "resources.json").write_text(json.dumps([component, child]))
    assert "nemotron:old:Target$kubernetes:core/v1:ConfigMap::cm" in load_render(tmp_path).resources


def test_large_diffs_fold_then_shrink_to_fit_a_comment() -> None:
    def config_maps(count: int, value: str) -> Render:
        return _render(
            [
                _record(
                    "kubernetes:core/v1:ConfigMap",
                    f"cm-{i:04d}",
                    {"metadata": {"name": f"cm-{i:04d}"}, "data": {f"k{j}": f"{value}{j}" for j in range(4)}},
                )
                for i in range(count)
            ]
        )

    folded = diff_stack("t", config_maps(12, "a"), config_maps(12, "b"), load_rules())
    text = render_markdown(folded, "base", "head")
    assert "<details><summary>12 resources</summary>" in text and "<summary>fields</summary>" in text
    huge = diff_stack("t", config_maps(600, "a" * 80), config_maps(600, "b" * 80), load_rules())
    whole, capped = render_markdown(huge, "base", "head", max_bytes=None), render_markdown(huge, "base", "head")
    assert len(whole.encode()) > MAX_BYTES >= len(capped.encode())
    assert "`data.k0`" in whole and "`data.k0`" not in capped
    assert "Resources: ♻️ 600 replaced" in capped and "left out to fit a comment" in capped


def test_the_head_renders_warnings_are_under_needs_attention(tmp_path):
    """A retired target renders unchanged: its warning (the render's warnings.txt) is what the PR comment shows."""
    warning = (
        "targets[0].id: vllm/x is retired: upstream renamed it to vllm/x-v2 at abc1234 (2026-09-15); select vllm/x-v2"
    )
    (tmp_path / "resources.json").write_text("[]")
    (tmp_path / WARNINGS_FILE).write_text(f"{warning}\n")
    head = load_render(tmp_path)
    assert head.warnings == (warning,)
    diff = diff_stack("prod", _render([]), head, load_rules())
    text = render_markdown(diff, "base", "head")
    assert f"- ⚠️ {warning}" in text.split("<details>")[0], "among the consequences, above the folded details"


def test_a_base_of_the_previous_outputs_contract_is_priced_by_its_own_field_names():
    """Outputs contract 1.x kept `usdPerHourDesired` and `costPerHourUsd` (serving_stack/contract/CHANGELOG.md):
    a diff across the 2.0 change prices both sides, never an unknown or a drop to zero."""
    base = _render(
        [],
        {
            "contractVersion": "1.1",
            "endpoints": [
                {
                    "id": "e",
                    "kind": "sagemaker",
                    "instanceType": "ml.g6e.12xlarge",
                    "instanceCount": 1,
                    "costPerHourUsd": 13.12,
                }
            ],
            "nodePools": [
                {"pool": "h200", "instanceType": "p5en.48xlarge", "nodes": "1..2", "usdPerHourDesired": 63.3}
            ],
        },
    )
    head = _render(
        [],
        {
            "contractVersion": "2.0",
            "endpoints": [
                {
                    "id": "e",
                    "kind": "sagemaker",
                    "instanceType": "ml.g6e.12xlarge",
                    "instanceCount": 1,
                    "usdPerHour": 13.12,
                }
            ],
            "nodePools": [
                {
                    "pool": "h200",
                    "instanceType": "p5en.48xlarge",
                    "minSize": 1,
                    "desiredSize": 2,
                    "maxSize": 2,
                    "usdPerHour": 126.59,
                }
            ],
        },
    )
    cost = diff_stack("prod", base, head, load_rules()).cost
    assert (cost.total("base"), cost.total("head"), cost.change) == (
        round(63.3 + 13.12, 2),
        round(126.59 + 13.12, 2),
        round(126.59 - 63.3, 2),
    )

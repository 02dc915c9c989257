"""The mock runtime records what the engine uses when it replaces, waits and deletes, and the render emits it."""

from __future__ import annotations

import textwrap

from rollout_helpers import key, of_kind, records

from tools.mock_runtime import run_program

PROGRAM = textwrap.dedent("""
    import pulumi

    class Thing(pulumi.CustomResource):
        def __init__(self, name, props, opts=None):
            super().__init__("test:index:Thing", name, props, opts)

    first = Thing("first", {"value": "x"})
    Thing("second", {"ref": first.id, "plain": 1}, pulumi.ResourceOptions(
        delete_before_replace=True,
        custom_timeouts=pulumi.CustomTimeouts(create="70m", delete="5m"),
        ignore_changes=["plain"],
        replace_on_changes=["ref"],
        aliases=[pulumi.Alias(name="old-second")],
        deleted_with=first,
    ))
""")


def test_engine_options_and_property_dependencies_are_recorded(tmp_path):
    (tmp_path / "Pulumi.yaml").write_text("name: recording\nruntime: python\n")
    (tmp_path / "__main__.py").write_text(PROGRAM)
    run = run_program({}, stack="test", project_dir=tmp_path)
    first, second = (run.named(name).to_json() for name in ("first", "second"))
    assert second["propertyDependencies"] == {"ref": ["test:index:Thing::first"]}
    assert second["dependsOn"] == ["test:index:Thing::first"]
    assert second["deleteBeforeReplace"] is True
    assert first["deleteBeforeReplace"] is False
    assert second["customTimeouts"] == {"create": "70m", "delete": "5m"}
    assert second["ignoreChanges"] == ["plain"]
    assert second["replaceOnChanges"] == ["ref"]
    assert second["aliases"] == ["name=old-second"]
    assert second["deletedWith"] == "test:index:Thing::first"
    assert first["customTimeouts"] == {}
    assert first["propertyDependencies"] == {}
    assert first["aliases"] == []


def test_the_download_job_records_its_custom_timeouts_from_its_deadline():
    dev = records("dev")
    (job,) = [j for j in of_kind(dev, "Job") if j["name"].endswith("download")]
    deadline = job["inputs"]["spec"]["activeDeadlineSeconds"]
    assert job["customTimeouts"]["create"] == f"{deadline // 60 + 10}m"
    (claim,) = of_kind(dev, "PersistentVolumeClaim")
    assert key(claim) in job["propertyDependencies"]["spec"]

"""The model cache is what the vendored manifests state (claim size, download Jobs, checkpoint env names);
stack config changes it only through documented settings. A second checkpoint set (BF16) with its own
download Job, written into a copy of the catalog, is a data change."""

from __future__ import annotations

import re
import shutil

import pytest
import yaml
from aws_helpers import eks_config, node_pool, run_components
from plan_helpers import plan_of

from components.model_cache import ModelCache, ModelCacheArgs
from serving_stack.config import ConfigError, parse_stack_config
from serving_stack.facts import load_facts
from serving_stack.facts.catalog import CATALOG_DIR, load_catalog
from serving_stack.plan.model_cache import DOWNLOADER_DIR, MARK_DOWNLOADED_HEADER, cache_size, env_name_tuple
from serving_stack.plan.stack import build_plan

pytestmark = pytest.mark.catalog_driven
BF16 = "nvidia/Nemotron-Test-Set-BF16"  # a repo no vendored Job fetches (whatever the revision)
BF16_ENV, BF16_JOB = "TEST_SET_BF16_MODEL", "model-download-test-set-bf16"
CACHE = load_catalog().model_cache
FACTS = load_facts()
PRIMARY = CACHE.jobs[0]
KUBECONFIG = {"kubernetes": {"namespace": "ns", "cluster": {"source": "kubeconfig", "context": "c"}}}


def with_cache(**cache) -> dict:
    return {**KUBECONFIG, "modelCache": {"storageClassName": "rwx", **cache}, "targets": []}


def env_pairs(job: dict) -> list[tuple[str, str]]:
    (container,) = job["spec"]["template"]["spec"]["containers"]
    return [(e["name"], e.get("value")) for e in container["env"]]


def checkpoint_env(job: dict) -> list[tuple[str, str]]:
    return [(n, v) for n, v in env_pairs(job) if v and re.fullmatch(r"[\w.-]+/[\w.-]+", v)]


@pytest.fixture(scope="module")
def bf16_facts(tmp_path_factory):
    """The vendored catalog plus a second download Job fetching a BF16 checkpoint under its own env name."""
    root = tmp_path_factory.mktemp("bf16") / "catalog"
    shutil.copytree(CATALOG_DIR, root)
    job = yaml.safe_load((CATALOG_DIR / PRIMARY.path).read_text())
    job["metadata"]["name"] = BF16_JOB
    (container,) = job["spec"]["template"]["spec"]["containers"]
    names = [name for name, _ in PRIMARY.checkpoints]
    container["env"] = [{"name": BF16_ENV, "value": BF16}] + [e for e in container["env"] if e["name"] not in names]
    container["args"] = [a.replace(env_name_tuple(names), env_name_tuple([BF16_ENV])) for a in container["args"]]
    (root / "recipes/model-cache/bf16.yaml").write_text(yaml.safe_dump(job))
    data = yaml.safe_load((root / "targets.yaml").read_text())
    data["modelCache"]["downloadJobs"].append("recipes/model-cache/bf16.yaml")
    (root / "targets.yaml").write_text(yaml.safe_dump(data))
    return load_facts(root)


def _upstream_part(script: str) -> str:
    """The Job's script before the download check the stack appends (`mark_downloaded`)."""
    return script.split("\n" + MARK_DOWNLOADED_HEADER)[0]


def test_unset_means_every_upstream_job_as_upstream_wrote_it(bf16_facts):
    plan = plan_of(with_cache(), facts=bf16_facts)
    assert plan.serving.model_cache_claim["spec"]["resources"]["requests"]["storage"] == CACHE.size
    jobs = plan.serving.download_jobs
    assert [j["metadata"]["name"] for j in jobs] == [job.name for job in CACHE.jobs] + [BF16_JOB]
    assert checkpoint_env(jobs[0]) == list(PRIMARY.checkpoints)
    assert checkpoint_env(jobs[-1]) == [(BF16_ENV, BF16)]
    for rendered, upstream in zip(jobs, bf16_facts.catalog.model_cache.jobs, strict=True):
        (script,) = rendered["spec"]["template"]["spec"]["containers"][0]["args"]
        assert _upstream_part(script) == upstream.container["args"][0]  # then the check that marks them
        assert env_name_tuple([n for n, _ in upstream.checkpoints]) in script.removeprefix(_upstream_part(script))
        assert rendered["spec"]["backoffLimit"] == upstream.manifest["spec"]["backoffLimit"]


def test_only_the_base_keeps_upstreams_env_name_and_drops_the_other_job(bf16_facts):
    (job,) = plan_of(with_cache(checkpoints={"drafts": []}), facts=bf16_facts).serving.download_jobs
    base_name, base = PRIMARY.checkpoints[0]
    assert checkpoint_env(job) == [(base_name, base)]
    others = [(n, v) for n, v in env_pairs(job) if (n, v) != (base_name, base)]
    assert others == [
        (e["name"], e.get("value")) for e in PRIMARY.container["env"] if e["name"] not in dict(PRIMARY.checkpoints)
    ] + [("PYTHONPATH", DOWNLOADER_DIR)]  # the small downloader (modelCache.download.image)
    (script,) = job["spec"]["template"]["spec"]["containers"][0]["args"]
    assert _upstream_part(script) == PRIMARY.container["args"][0].replace(
        env_name_tuple([n for n, _ in PRIMARY.checkpoints]), env_name_tuple([base_name])
    )


def test_a_base_from_the_second_set_runs_that_job_alone_unchanged(bf16_facts):
    (job,) = plan_of(with_cache(checkpoints={"base": BF16, "drafts": []}), facts=bf16_facts).serving.download_jobs
    assert job["metadata"]["name"] == BF16_JOB
    assert checkpoint_env(job) == [(BF16_ENV, BF16)]


def test_a_repo_no_job_fetches_goes_into_the_first_under_a_derived_name():
    extra = f"{PRIMARY.repos[0]}-Eagle3"
    (job,) = plan_of(with_cache(checkpoints={"drafts": [extra]})).serving.download_jobs
    assert checkpoint_env(job) == [PRIMARY.checkpoints[0], ("EAGLE3_MODEL", extra)]
    assert (
        env_name_tuple([PRIMARY.checkpoints[0][0], "EAGLE3_MODEL"])
        in job["spec"]["template"]["spec"]["containers"][0]["args"][0]
    )


def test_a_script_without_the_env_tuple_cannot_be_changed_but_runs_as_is(tmp_path):
    root = tmp_path / "catalog"
    shutil.copytree(CATALOG_DIR, root)
    path = root / PRIMARY.path
    names = [n for n, _ in PRIMARY.checkpoints]
    path.write_text(path.read_text().replace(env_name_tuple(names), "[" + ", ".join(f'"{n}"' for n in names) + "]"))
    facts = load_facts(root)
    assert len(plan_of(with_cache(), facts=facts).serving.download_jobs) == len(CACHE.jobs)
    with pytest.raises(
        ConfigError,
        match=rf"^modelCache.checkpoints: download Job '{PRIMARY.name}' .* does not list its env "
        r"names as \(.*\) in its script, so the stack cannot change what it fetches",
    ):
        plan_of(with_cache(checkpoints={"drafts": []}), facts=facts)


def test_deadline_and_backoff_are_upstreams_unless_set():
    jobs = plan_of(with_cache(download={"backoffLimit": 7})).serving.download_jobs
    for job, upstream in zip(jobs, CACHE.jobs, strict=True):
        assert job["spec"]["backoffLimit"] == 7
        assert job["spec"]["activeDeadlineSeconds"] == upstream.manifest["spec"]["activeDeadlineSeconds"]


def test_the_size_is_upstreams_unless_set_and_fsx_checks_the_effective_size():
    assert (
        plan_of(with_cache(size="2400Gi")).serving.model_cache_claim["spec"]["resources"]["requests"]["storage"]
        == "2400Gi"
    )
    raw = eks_config([node_pool("h200", "p5en.48xlarge")], [], modelCacheStorage={"backend": "fsx"})
    raw["modelCache"] = {"storageClassName": "fsx"}
    with pytest.raises(
        ConfigError, match=rf"modelCache.size: FSx for Lustre PERSISTENT_2 capacity .* \(got {CACHE.size}\)"
    ):
        plan_of(raw)


def test_each_download_job_is_a_resource_and_the_first_keeps_its_name(bf16_facts):
    serving = plan_of(with_cache(), facts=bf16_facts).serving
    jobs = serving.download_jobs

    def build():
        ModelCache("model-cache", ModelCacheArgs(serving, namespace="ns", hf_token_secret_name="hf-token-secret"))

    run = run_components(build)
    names = [r.name for r in run.of_type("kubernetes:batch/v1:Job")]
    assert names[0] == "model-cache-download"
    assert names[-1] == "model-cache-download-test-set-bf16"
    assert len(names) == len(set(names)) == len(jobs)


def test_the_resolved_size_lives_in_the_plan_and_the_config_stays_as_written():
    """No plan step writes back into the config: an unset size is resolved into the claim, not into the config."""
    config = parse_stack_config(with_cache())
    written = config.model_dump(mode="json")
    claim = build_plan(config, FACTS).serving.model_cache_claim
    assert config.modelCache.size is None
    assert config.model_dump(mode="json") == written
    resolved = cache_size(CACHE.size, CACHE.repos, FACTS.checkpoints)  # every Job runs: the stack selects no target
    assert claim["spec"]["resources"]["requests"]["storage"] == resolved

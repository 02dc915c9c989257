"""What the vendored upstream model-cache manifests state: the claim (and its size) and the download Jobs.

Each download Job is one checkpoint set: the Hugging Face repos it fetches, each under the env name
upstream gives it (`BASE_MODEL`, `DFLASH_MODEL`, ...). A checkpoint env is an env value that is a repo id
and whose name the Job's script reads; anything else in `env` (`HF_HOME`, ...) is left alone. A BF16 set
beside the NVFP4 one is a second Job with its own env names: nothing here assumes there is only one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from serving_stack.errors import ConfigError
from serving_stack.facts.data import check_shape, data_file, data_label, read_documents
from serving_stack.facts.manifest_shapes import JobShape, PersistentVolumeClaimShape

# A Hugging Face repo id (`org/name`); the config layer checks stack input against the same shape.
HF_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass(frozen=True)
class DownloadJob:
    """One upstream download Job and the checkpoints it fetches, in upstream's order."""

    path: str
    manifest: dict[str, Any]
    checkpoints: tuple[tuple[str, str], ...]  # (env name, repo)

    @property
    def name(self) -> str:
        return str(self.manifest["metadata"]["name"])

    @property
    def repos(self) -> list[str]:
        return [repo for _, repo in self.checkpoints]

    @property
    def script(self) -> str:
        return "\n".join(str(a) for a in self.container.get("args", []))

    @property
    def container(self) -> dict[str, Any]:
        (container,) = self.manifest["spec"]["template"]["spec"]["containers"]
        return dict(container)


@dataclass(frozen=True)
class ModelCacheFacts:
    claim: dict[str, Any]
    jobs: tuple[DownloadJob, ...]

    @property
    def size(self) -> str:
        """The claim's storage request as upstream states it (a stack may set another)."""
        return str(self.claim["spec"]["resources"]["requests"]["storage"])

    @property
    def repos(self) -> list[str]:
        """Every checkpoint some download Job fetches, first mention first."""
        return list(dict.fromkeys(repo for job in self.jobs for repo in job.repos))

    def env_name_of(self, repo: str) -> str | None:
        """Upstream's env name for a repo (from the first Job that fetches it)."""
        return next((name for job in self.jobs for name, r in job.checkpoints if r == repo), None)


def checkpoints_of(job: dict[str, Any], key: str) -> tuple[tuple[str, str], ...]:
    """The (env name, repo) pairs a download Job fetches; a Job that is not one stops with `key` named."""
    if job.get("kind") != "Job":
        raise ConfigError(key, f"holds a {job.get('kind')!r}, not a Job")
    containers = job.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
    if len(containers) != 1:
        raise ConfigError(key, f"the Job has {len(containers)} containers", "exactly one (the download script)")
    container = containers[0]
    script = "\n".join(str(a) for a in [*container.get("command", []), *container.get("args", [])])
    found = tuple(
        (str(env["name"]), str(env["value"]))
        for env in container.get("env", [])
        if isinstance(env.get("value"), str)
        and HF_REPO_ID.match(env["value"])
        and re.search(rf"\b{re.escape(env['name'])}\b", script)
    )
    if not found:
        raise ConfigError(
            key,
            "the Job reads no Hugging Face repo from an env var its script names",
            "env entries such as BASE_MODEL: org/repo, read by the script",
        )
    return found


def load_model_cache(root: Path, claim_path: str, job_paths: list[str]) -> ModelCacheFacts:
    key = "catalog/targets.yaml: modelCache"
    base = root.resolve()
    claim_file = data_file(base, claim_path, f"{key}.claim")
    claims = read_documents(claim_file, f"{key}.claim", base)
    if [d.get("kind") for d in claims] != ["PersistentVolumeClaim"]:
        raise ConfigError(
            f"{key}.claim", f"{claim_path} holds {[d.get('kind') for d in claims]}", "exactly one PersistentVolumeClaim"
        )
    check_shape(claims[0], PersistentVolumeClaimShape, f"{key}.claim: {data_label(claim_file, base)}: ")
    jobs: list[DownloadJob] = []
    for index, path in enumerate(job_paths):
        job_key = f"{key}.downloadJobs[{index}]"
        job_file = data_file(base, path, job_key)
        documents = read_documents(job_file, job_key, base)
        if len(documents) != 1:
            raise ConfigError(job_key, f"{path} holds {len(documents)} documents", "one Job per file")
        if documents[0].get("kind") == "Job":
            check_shape(documents[0], JobShape, f"{job_key}: {data_label(job_file, base)}: ")
        jobs.append(DownloadJob(path, documents[0], checkpoints_of(documents[0], job_key)))
    names = [job.name for job in jobs]
    if len(set(names)) != len(names):
        raise ConfigError(f"{key}.downloadJobs", f"two download Jobs share a name: {sorted(names)}")
    return ModelCacheFacts(claims[0], tuple(jobs))

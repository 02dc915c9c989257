"""The whole stack config: one pydantic model, read once from Pulumi structured config and checked
against the catalog before any resource is registered."""
from __future__ import annotations

import json
from typing import Any, Optional

import pulumi
import pydantic
from pulumi.runtime import config as runtime_config

from nemotron.catalog import Catalog, load_catalog
from nemotron.errors import ConfigError, from_validation_error
from nemotron.config.aws import AwsConfig, check_aws
from nemotron.config.sagemaker import SageMakerConfig, check_sagemaker
from nemotron.config.serving import Block, DynamoConfig, KubernetesConfig, ModelCacheConfig, TargetConfig
from serving_stack.config.demand import DemandConfig

SECRET_KEYS = ("hfToken",)


class StackConfig(Block):
    kubernetes: KubernetesConfig = KubernetesConfig()
    modelCache: ModelCacheConfig
    dynamo: DynamoConfig = DynamoConfig()
    targets: list[TargetConfig] = pydantic.Field(default_factory=list)
    sagemaker: SageMakerConfig = SageMakerConfig()
    aws: Optional[AwsConfig] = None
    demand: Optional[DemandConfig] = None  # read by `make plan` (tools/plan_capacity.py)


def _check_targets(config: StackConfig, catalog: Catalog) -> list[ConfigError]:
    errors: list[ConfigError] = []
    seen: set[str] = set()
    cached = set(config.modelCache.checkpoints.all)
    for index, target in enumerate(config.targets):
        path = f"targets[{index}]"
        if target.id not in catalog.recipes:
            errors.append(ConfigError(f"{path}.id", f"unknown target {target.id!r}", ", ".join(catalog.recipes)))
            continue
        if target.id in seen:
            errors.append(ConfigError(f"{path}.id", f"target {target.id!r} is selected twice"))
        seen.add(target.id)
        recipe = catalog.recipe(target.id)
        for component in target.replicas:
            if component not in recipe.component_names:
                errors.append(
                    ConfigError(f"{path}.replicas.{component}", "no such component", ", ".join(recipe.component_names))
                )
        if recipe.disaggregated:
            for role in ("prefill", "decode"):
                name = next(c["name"] for c in recipe.components if c["type"] == role)
                if target.replicas.get(name, 1) < 1:
                    errors.append(
                        ConfigError(
                            f"{path}.replicas.{name}",
                            f"a disaggregated target needs a prefill/decode pair, got 0 {role} replicas",
                            ">= 1",
                        )
                    )
        for repo in recipe.checkpoints:
            if repo not in cached:
                errors.append(
                    ConfigError(
                        "modelCache.checkpoints",
                        f"target {target.id!r} loads {repo!r}, which the model cache does not download",
                        "add it to modelCache.checkpoints.base or .drafts",
                    )
                )
    return errors


def parse_stack_config(raw: dict[str, Any], catalog: Catalog | None = None) -> StackConfig:
    """Validate raw config values (already JSON-decoded) into a `StackConfig`, or raise one `ConfigError`."""
    catalog = catalog or load_catalog()
    allowed = [*StackConfig.model_fields, *SECRET_KEYS]
    unknown = [key for key in raw if key not in allowed]
    if unknown:
        raise ConfigError(unknown[0], "unknown config key", ", ".join(allowed))
    try:
        config = StackConfig.model_validate({k: v for k, v in raw.items() if k not in SECRET_KEYS})
    except pydantic.ValidationError as exc:
        raise from_validation_error(exc, StackConfig) from None
    errors = _check_targets(config, catalog) + check_sagemaker(config.sagemaker)
    errors += check_aws(config, catalog)
    if errors:
        raise ConfigError.combined(errors)
    return config


def _raw_project_config(project: str) -> dict[str, Any]:
    """Every key the stack sets in this project's namespace, JSON-decoded like `Config.get_object`."""
    prefix = f"{project}:"
    values = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    raw: dict[str, Any] = {}
    for full_key, value in values.items():
        if not full_key.startswith(prefix):
            continue
        key = full_key[len(prefix):]
        try:
            raw[key] = json.loads(value) if isinstance(value, str) else value
        except json.JSONDecodeError:
            raw[key] = value
    return raw


def load_stack_config() -> StackConfig:
    """Read and validate the stack config of the running Pulumi program."""
    project = pulumi.get_project()
    for key in SECRET_KEYS:
        if not runtime_config.is_config_secret(f"{project}:{key}") and runtime_config.get_config(f"{project}:{key}"):
            raise ConfigError(key, "must be a Pulumi secret", f"pulumi config set --secret {key} <value>")
    return parse_stack_config(_raw_project_config(project))


def hf_token() -> pulumi.Output[str]:
    """The Hugging Face token, only ever as a Pulumi secret."""
    return pulumi.Config().require_secret("hfToken")

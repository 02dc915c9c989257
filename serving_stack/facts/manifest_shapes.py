"""The parts of the vendored upstream manifests (`catalog/recipes/`) the stack reads, as shapes.

A manifest is kept as upstream wrote it (a plain mapping, copied into the rendered objects); these shapes
only check, when the catalog is loaded, that every field the facts and the plan read is there and of the
type they read it as, so a malformed manifest stops with the file and the key path named instead of
failing later inside the plan. Fields nobody reads are left alone (`extra="allow"`).
"""

from __future__ import annotations

from typing import Any, Optional, Union

import pydantic

from serving_stack.names import GPU_RESOURCE

# Options whose value the facts read from a container's args (`--model <repo>`).
VALUED_OPTIONS = ("--model", "--served-model-name", "--router-mode")


class _Shape(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow", allow_inf_nan=False)


class _Named(_Shape):
    name: str = pydantic.Field(min_length=1)


class _Resources(_Shape):
    limits: dict[str, Union[str, int]] = pydantic.Field(default_factory=dict)

    @pydantic.field_validator("limits")
    @classmethod
    def _gpu_count(cls, limits: dict[str, Union[str, int]]) -> dict[str, Union[str, int]]:
        value = limits.get(GPU_RESOURCE, 0)
        if not str(value).isdigit():
            raise ValueError(f"{GPU_RESOURCE} must be a whole number of GPUs")
        return limits


class _EnvVar(_Shape):
    name: str
    value: Optional[Any] = None


class _Container(_Shape):
    command: list[str] = pydantic.Field(default_factory=list)
    args: list[str] = pydantic.Field(default_factory=list)
    env: list[_EnvVar] = pydantic.Field(default_factory=list)
    resources: _Resources = pydantic.Field(default_factory=_Resources)

    @pydantic.field_validator("args")
    @classmethod
    def _valued_options(cls, args: list[str]) -> list[str]:
        for option in VALUED_OPTIONS:
            if option in args and args.index(option) == len(args) - 1:
                raise ValueError(f"{option} is the last argument: it needs a value")
        return args


class _Expression(_Shape):
    key: str
    values: list[str] = pydantic.Field(default_factory=list)


class _Term(_Shape):
    matchExpressions: list[_Expression] = pydantic.Field(default_factory=list)


class _Required(_Shape):
    nodeSelectorTerms: list[_Term] = pydantic.Field(default_factory=list)


class _NodeAffinity(_Shape):
    requiredDuringSchedulingIgnoredDuringExecution: _Required = pydantic.Field(default_factory=_Required)


class _Affinity(_Shape):
    nodeAffinity: _NodeAffinity = pydantic.Field(default_factory=_NodeAffinity)


class _PodSpec(_Shape):
    containers: list[_Container] = pydantic.Field(min_length=1)
    affinity: _Affinity = pydantic.Field(default_factory=_Affinity)


class _PodTemplate(_Shape):
    spec: _PodSpec


class _Component(_Named):
    type: str
    replicas: int = pydantic.Field(ge=0)
    podTemplate: _PodTemplate


class _DgdSpec(_Shape):
    backendFramework: str
    components: list[_Component] = pydantic.Field(min_length=1)

    @pydantic.field_validator("components")
    @classmethod
    def _unique_names(cls, components: list[_Component]) -> list[_Component]:
        names = [c.name for c in components]
        if len(set(names)) != len(names):
            raise ValueError(f"two components share a name: {sorted(names)}")
        return components


class DynamoGraphDeploymentShape(_Shape):
    metadata: _Named
    spec: _DgdSpec


class ConfigMapShape(_Shape):
    data: dict[str, str] = pydantic.Field(default_factory=dict)


class _Storage(_Shape):
    storage: str = pydantic.Field(pattern=r"^[0-9]+(\.[0-9]+)?([KMGTPE]i?|k)?$")  # a Kubernetes quantity


class _ClaimResources(_Shape):
    requests: _Storage


class _ClaimSpec(_Shape):
    resources: _ClaimResources


class PersistentVolumeClaimShape(_Shape):
    spec: _ClaimSpec


class _JobPodSpec(_Shape):
    containers: list[_Container] = pydantic.Field(min_length=1)


class _JobTemplate(_Shape):
    spec: _JobPodSpec


class _JobSpec(_Shape):
    template: _JobTemplate


class JobShape(_Shape):
    metadata: _Named
    spec: _JobSpec

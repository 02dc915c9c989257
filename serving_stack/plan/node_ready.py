"""How long a new GPU node takes to serve, per pool: autoscaler reaction, EC2 boot to kubelet
registration, device plugins, prewarm (checkpoints into page cache), runtime image pull, model load
from page cache, engine start. Durations come from `catalog/node_ready.yaml` (each with its source;
estimates flagged), so the prediction is only as good as that file says it is.

The workers' `wait-for-prewarm` init container runs before the runtime image is pulled (kubelet pulls
a container's image when it starts that container), so with `gateWorkers` on prewarm and image pull
add up; without it they overlap.
"""

from __future__ import annotations

from dataclasses import dataclass

from serving_stack.facts.node_ready_facts import Figure, NodeReadyFile


@dataclass(frozen=True)
class NodeReadyFacts:
    autoscaler_reaction_s: float
    boot_to_registered_s: float
    device_plugins_s: float
    image_pull_s_per_gb: float
    engine_start_s: float
    image_gb: float
    checkpoint_gb: float
    warm_load_mb_s: float
    node_read_cap_mb_s: float
    estimated_phases: tuple[str, ...]  # names of phases whose figure is an estimate


@dataclass(frozen=True)
class NodeReadyPrediction:
    pool: str
    phases: tuple[tuple[str, float], ...]
    prewarm_gates_image_pull: bool
    estimated_phases: tuple[str, ...]

    @property
    def seconds(self) -> float:
        by_name = dict(self.phases)
        overlap = 0.0 if self.prewarm_gates_image_pull else min(by_name["prewarm"], by_name["image pull"])
        return sum(by_name.values()) - overlap


def predict_node_ready(
    pool: str,
    facts: NodeReadyFacts,
    file_system_mb_s: float,
    nodes_starting_together: int,
    gate_workers: bool,
    scale_from_zero: bool = True,
) -> NodeReadyPrediction:
    """`file_system_mb_s` is what the model cache serves to all clients; nodes that start together share it."""
    per_node_mb_s = min(facts.node_read_cap_mb_s, file_system_mb_s / max(1, nodes_starting_together))
    phases = [
        ("autoscaler", facts.autoscaler_reaction_s if scale_from_zero else 0.0),
        ("boot", facts.boot_to_registered_s),
        ("device plugins", facts.device_plugins_s),
        ("prewarm", facts.checkpoint_gb * 1000 / per_node_mb_s),
        ("image pull", facts.image_gb * facts.image_pull_s_per_gb),
        ("model load", facts.checkpoint_gb * 1000 / facts.warm_load_mb_s),
        ("engine start", facts.engine_start_s),
    ]
    return NodeReadyPrediction(pool, tuple(phases), gate_workers, facts.estimated_phases)


def fsx_read_mb_s(per_unit_storage_throughput: int, storage_gib: float) -> float:
    """FSx for Lustre throughput scales with capacity: MB/s per TiB x TiB."""
    return per_unit_storage_throughput * storage_gib / 1024


def node_ready_markdown(predictions: list[NodeReadyPrediction]) -> str:
    names = [name for name, _ in predictions[0].phases] if predictions else []
    lines = ["| pool | " + " | ".join(f"{n} (s)" for n in names) + " | total | |", "|" + " --- |" * (len(names) + 3)]
    for p in predictions:
        note = "prewarm then image pull (gated)" if p.prewarm_gates_image_pull else "prewarm overlaps image pull"
        cells = " | ".join(f"{s:,.0f}{'*' if n in p.estimated_phases else ''}" for n, s in p.phases)
        lines.append(f"| `{p.pool}` | {cells} | **{p.seconds / 60:.1f} min** | {note} |")
    return (
        "\n".join(lines)
        + "\n\n\\* estimate: no source publishes this figure for these instance types (`catalog/node_ready.yaml`)."
    )


def _value(figure: Figure) -> float:
    assert figure.value is not None, figure.source
    return figure.value


def node_ready_facts(data: NodeReadyFile) -> NodeReadyFacts:
    phases = data.phases
    estimated = {
        "autoscaler": phases["autoscalerReaction"].estimate,
        "boot": phases["instanceBootToRegistered"].estimate,
        "device plugins": phases["devicePluginsAdvertise"].estimate,
        "prewarm": data.checkpointGB.estimate or data.nodeReadCapMBps.estimate,
        "image pull": phases["runtimeImagePullSecondsPerCompressedGB"].estimate
        or data.runtimeImageCompressedGB.estimate,
        "model load": data.checkpointGB.estimate or data.warmLoadMBps.estimate,
        "engine start": phases["engineStart"].estimate,
    }
    return NodeReadyFacts(
        autoscaler_reaction_s=phases["autoscalerReaction"].seconds,
        boot_to_registered_s=phases["instanceBootToRegistered"].seconds,
        device_plugins_s=phases["devicePluginsAdvertise"].seconds,
        image_pull_s_per_gb=phases["runtimeImagePullSecondsPerCompressedGB"].seconds,
        engine_start_s=phases["engineStart"].seconds,
        image_gb=_value(data.runtimeImageCompressedGB),
        checkpoint_gb=_value(data.checkpointGB),
        warm_load_mb_s=_value(data.warmLoadMBps),
        node_read_cap_mb_s=_value(data.nodeReadCapMBps),
        estimated_phases=tuple(name for name, flag in estimated.items() if flag),
    )

"""Node-ready prediction: phases from the sourced data file, the gated prewarm serialising the image
pull, and nodes that start together sharing the file system's throughput."""

from __future__ import annotations

import math

from serving_stack.facts.aws import load_node_ready_file
from serving_stack.plan.capacity import fsx_read_mb_s, node_ready_facts, node_ready_markdown, predict_node_ready

DATA = load_node_ready_file()
FACTS = node_ready_facts(DATA)


def test_total_is_the_phases_with_prewarm_and_image_pull_overlapping_only_when_ungated() -> None:
    gated = predict_node_ready("p", FACTS, file_system_mb_s=1e9, nodes_starting_together=1, gate_workers=True)
    ungated = predict_node_ready("p", FACTS, file_system_mb_s=1e9, nodes_starting_together=1, gate_workers=False)
    phases = dict(gated.phases)
    assert math.isclose(gated.seconds, sum(phases.values()))
    assert math.isclose(gated.seconds - ungated.seconds, min(phases["prewarm"], phases["image pull"]))
    assert math.isclose(
        phases["image pull"],
        DATA.runtimeImageCompressedGB.value * DATA.phases["runtimeImagePullSecondsPerCompressedGB"].seconds,
    )
    assert math.isclose(phases["prewarm"], DATA.checkpointGB.value * 1000 / DATA.nodeReadCapMBps.value)


def test_nodes_starting_together_share_the_file_system() -> None:
    fs = fsx_read_mb_s(per_unit_storage_throughput=125, storage_gib=1200)
    assert math.isclose(fs, 125 * 1200 / 1024)
    alone, four = (dict(predict_node_ready("p", FACTS, fs, n, True).phases)["prewarm"] for n in (1, 4))
    expected_alone = DATA.checkpointGB.value * 1000 / min(fs, DATA.nodeReadCapMBps.value)
    assert math.isclose(alone, expected_alone) and math.isclose(four, DATA.checkpointGB.value * 1000 / (fs / 4))


def test_estimates_are_flagged_in_the_table() -> None:
    flagged = {name for name, phase in DATA.phases.items() if phase.estimate}
    assert flagged and FACTS.estimated_phases, "the data file flags its estimates"
    prediction = predict_node_ready("gpu-pool", FACTS, 1e9, 1, True)
    table = node_ready_markdown([prediction])
    row = next(line for line in table.splitlines() if "`gpu-pool`" in line)
    assert row.count("*") - 2 * row.count("**") == len(FACTS.estimated_phases)
    assert f"{prediction.seconds / 60:.1f} min" in row

"""Rollout model: what a real `pulumi up`, an update and `pulumi destroy` do with the recorded resources.

The mock runtime records inputs and options but never waits, replaces, cascades or refuses. This package
applies the engine's and providers' rules (provider_rules.yaml, each rule with its source) and typical
durations (catalog/durations.yaml) to the recorded resource graph, and reports waits that can expire, replacements
that collide with themselves or that protect refuses, what destroy keeps, and the timeline of a first `up`.

    report = analyse(records)          # records: resources.json entries
    report.blocking                    # findings the render fails on
    markdown(report)                   # the summary.md section
"""

from tools.rollout.report import RolloutReport, analyse, markdown

__all__ = ["RolloutReport", "analyse", "markdown"]

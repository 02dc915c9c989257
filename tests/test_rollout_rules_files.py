"""The rollout model's own data file and the durations table, broken, are one config line naming the file (never
a traceback)."""

from __future__ import annotations

import pytest
import yaml

from serving_stack.errors import ConfigError
from serving_stack.facts.durations import load_durations
from serving_stack.facts.strict_files import DATA_DIR
from tools.rollout.rules import PROVIDER_RULES_FILE, load_rules

DURATIONS_FILE = DATA_DIR / "durations.yaml"


def _broken(text: str, how: str) -> str:
    document = yaml.safe_load(text)
    first = next(iter(document))
    return {
        "empty": "",
        "a list": "- 1\n",
        "not YAML": "key: [unclosed\n",
        "duplicate key": text + f"\n{first}: 1\n",
        "a section missing": yaml.safe_dump({k: v for k, v in document.items() if k != first}),
        "a section of the wrong type": yaml.safe_dump({**document, first: "text"}),
        "a non-finite number": text + "\nnot_a_number: .nan\n",
    }[how]


HOW = ["empty", "a list", "not YAML", "duplicate key", "a section missing", "a section of the wrong type"]


@pytest.mark.parametrize("how", [*HOW, "a non-finite number"])
def test_a_broken_rules_file_is_one_line_naming_it(tmp_path, how):
    broken = tmp_path / PROVIDER_RULES_FILE.name
    broken.write_text(_broken(PROVIDER_RULES_FILE.read_text(), how))
    with pytest.raises(ConfigError) as raised:
        load_rules(broken)
    message = str(raised.value)
    assert PROVIDER_RULES_FILE.name in message and "\n" not in message and len(message) < 400


@pytest.mark.parametrize("how", [*HOW, "a non-finite number"])
def test_a_broken_durations_table_is_one_line_naming_it(tmp_path, how):
    (tmp_path / DURATIONS_FILE.name).write_text(_broken(DURATIONS_FILE.read_text(), how))
    with pytest.raises(ConfigError) as raised:
        load_durations(tmp_path)
    message = str(raised.value)
    assert DURATIONS_FILE.name in message and "\n" not in message and len(message) < 400


def test_a_rule_naming_a_step_the_table_lacks_is_one_line(tmp_path):
    rules = yaml.safe_load(PROVIDER_RULES_FILE.read_text())
    rules["aws"]["durations"]["aws:eks/cluster:Cluster"] = "no-such-step"
    broken = tmp_path / PROVIDER_RULES_FILE.name
    broken.write_text(yaml.safe_dump(rules))
    with pytest.raises(ConfigError, match="no-such-step"):
        load_rules(broken)

"""The rollout model's own data files, broken, are one config line naming the file (never a traceback)."""

from __future__ import annotations

import pytest
import yaml

from serving_stack.errors import ConfigError
from tools.rollout.rules import DURATION_SECTIONS, DURATIONS_FILE, PROVIDER_RULES_FILE, load_rules


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
@pytest.mark.parametrize("original", [DURATIONS_FILE, PROVIDER_RULES_FILE], ids=lambda p: p.name)
def test_a_broken_rules_file_is_one_line_naming_it(tmp_path, original, how):
    broken = tmp_path / original.name
    broken.write_text(_broken(original.read_text(), how))
    files = {"provider_rules": PROVIDER_RULES_FILE, "durations": DURATIONS_FILE}
    files["durations" if original == DURATIONS_FILE else "provider_rules"] = broken
    with pytest.raises(ConfigError) as raised:
        load_rules(**files)
    message = str(raised.value)
    assert original.name in message and "\n" not in message and len(message) < 400


def test_every_duration_section_the_file_holds_is_checked():
    assert set(yaml.safe_load(DURATIONS_FILE.read_text())) == set(DURATION_SECTIONS)

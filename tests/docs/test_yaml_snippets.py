"""Every YAML config in the documentation is one `serve` would accept: a block is read as
`check-config FILE` reads it (with `--8<--` includes expanded, and a placeholder for each
`${VARIABLE}` it names). A fragment is marked `<!-- snippet: partial -->` and only has to be
valid YAML."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from bridge.config import load_settings
from bridge.preflight import check_config
from tests.core.test_examples import ENV
from tests.docs.snippets import Block, all_blocks, expand_includes

YAML_BLOCKS = [b for b in all_blocks() if b.language in ("yaml", "yml")]
VARIABLE = re.compile(r"\$\{(\w+)")
#: values with the shape their keys check (tokens' prefixes); any other variable gets PLACEHOLDER
SHAPED = {**ENV, "SLACK_APP_TOKEN": "xapp-example", "TELEGRAM_CHAT_ID": "123456789"}
PLACEHOLDER = "example-value-0123456789abcdef"


def test_the_docs_have_full_and_partial_configs() -> None:
    assert len([b for b in YAML_BLOCKS if b.marker is None]) >= 10
    assert [b for b in YAML_BLOCKS if b.marker == "snippet"]


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=[b.id for b in YAML_BLOCKS])
def test_yaml_snippet(block: Block, tmp_path: Path) -> None:
    text = expand_includes(block.text)
    if block.marker is not None:
        assert (block.marker, block.marker_value) == ("snippet", "partial"), (
            f"{block.id}: a YAML block may only be marked <!-- snippet: partial -->")
        assert isinstance(yaml.safe_load(text), dict | list), f"{block.id}: not a YAML mapping or list"
        return
    config = tmp_path / "hitl-bridge.yaml"
    config.write_text(text, encoding="utf-8")
    env = {name: SHAPED.get(name, PLACEHOLDER) for name in VARIABLE.findall(text)}
    env["HITL_BRIDGE__STORE__URL"] = f"sqlite:///{tmp_path}/bridge.db"
    settings = load_settings(str(config), env=env)
    assert check_config(settings).startswith(f"{config}: ok"), block.id

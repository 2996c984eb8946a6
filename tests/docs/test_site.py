"""The documentation site builds with no warning (`mkdocs build --strict`: a broken link, a
missing anchor, a page left out of the nav or a missing include fails it), and its generated
reference pages hold what the code has."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bridge import cli
from bridge.config import Settings
from tests.docs.snippets import ROOT

MKDOCS = Path(sys.executable).with_name("mkdocs")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    run = subprocess.run([str(MKDOCS), "build", "--strict", "-d", str(out)], cwd=ROOT, capture_output=True,
                         text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    warnings = [line for line in run.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert run.returncode == 0 and not warnings, "mkdocs build --strict failed:\n" + run.stderr[-4000:]
    return out


def test_the_site_builds_strictly(site: Path) -> None:
    assert (site / "index.html").is_file()
    assert "60 seconds" in (site / "index.html").read_text(encoding="utf-8")  # the README is the home page
    assert (site / "guides" / "slack-deploys.html").is_file()


def test_links_and_anchors_are_checked() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    assert config["strict"] == "true"
    assert config["validation"]["anchors"] == "warn"  # strict turns each warning into a failure
    assert config["validation"]["unrecognized_links"] == "warn"


def test_a_guide_includes_its_config_file_rather_than_a_copy(site: Path) -> None:
    page = (site / "guides" / "slack-deploys.html").read_text(encoding="utf-8")
    first_key = "reason_line"  # a key only config/deploy-approvals-slack.yaml has among the guides
    assert first_key in (ROOT / "config" / "deploy-approvals-slack.yaml").read_text(encoding="utf-8")
    assert first_key in page
    assert "--8&lt;--" not in page and "--8<--" not in page


def test_the_config_reference_lists_every_key(site: Path) -> None:
    page = (site / "reference" / "config.html").read_text(encoding="utf-8")
    for key in (name for name, field in Settings.model_fields.items() if not field.exclude):
        assert f"<code>{key}</code>" in page, key
    for key in ("http.listen", "http.api_tokens", "store.retain_closed", "slack.bot_token", "telegram.bot_token",
                "routes[].escalate", "roots", "resume_command"):
        assert f"<code>{key}</code>" in page, key


def test_the_cli_reference_has_every_verb(site: Path) -> None:
    page = (site / "reference" / "cli.html").read_text(encoding="utf-8")
    for verb in [*cli.VERBS, "mcp"]:
        assert f"<code>hitl-bridge {verb}</code>" in page, verb


def test_the_http_reference_has_the_api(site: Path) -> None:
    page = (site / "reference" / "http-api.html").read_text(encoding="utf-8")
    for operation in ("POST /v1/requests", "GET /v1/requests/{request_id}", "POST /v1/requests/{request_id}/answer",
                      "GET /readyz"):
        assert f"<code>{operation}</code>" in page, operation


def test_the_metrics_reference_has_every_series_the_alerts_use(site: Path) -> None:
    page = (site / "reference" / "metrics.html").read_text(encoding="utf-8")
    for metric in ("hitl_requests", "hitl_outbox_dead", "hitl_answers_total", "hitl_time_to_answer_seconds",
                   "hitl_timer_lateness_seconds", "hitl_ready"):
        assert f"<code>{metric}</code>" in page, metric


def test_the_config_reference_knows_every_adapter() -> None:
    """A new channel or source must say which model validates its section, or its keys would be
    missing from the reference."""
    from bridge import registry

    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "scripts" / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    assert set(generator.CHANNEL_MODELS) == set(registry.CHANNELS)
    assert set(generator.SOURCE_MODELS) == set(registry.source_factories())
    for target in [*generator.CHANNEL_MODELS.values(), *generator.SOURCE_MODELS.values()]:
        assert generator.load(target).model_fields, target

"""A new channel is one adapter package with a spec (bridge.specs): the core picks up its
handles, its section, when it is on, its fix texts and its environment set-up with no edit
of its own. The channel here ("pager") exists only in this test's temporary directory."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import adapters
from bridge.clock import SystemClock
from bridge.config import load_settings
from bridge.errors import ConfigError
from bridge.people import People, PeopleError, normalize_handle
from bridge.preflight import check_targets, switched_off, unreached_channels
from bridge.registry import build_channels
from bridge.specs import channel_spec, channel_specs

SPEC = '''
from bridge.specs import ChannelSpec, HandleError, on_by_token


def normalize(ident: str) -> str:
    if not ident.isalnum():
        raise HandleError("a pager handle is letters and digits such as pager:ana")
    return ident.lower()


SPEC = ChannelSpec(
    name="pager", factory="adapters.pager:build_channel", order=5, **on_by_token("pager", "Pager"),
    missing_fix="add a pager: section with bot_token", normalize=normalize, person_hint="pager:<id>",
    dm_target=lambda ident: f"pager:{ident}", target_forms=("pager:<id>",), target_env="PAGER_TARGET",
    env_target=lambda value: f"pager:{value.strip()}",
    env_section=lambda env: {"bot_token": env["PAGER_TOKEN"]} if env.get("PAGER_TOKEN") else None,
)
'''

PACKAGE = '''
class PagerChannel:
    name = "pager"

    def __init__(self, section):
        self.section = section

    def owns(self, target):
        return target.startswith("pager:")


def build_channel(section, ctx):
    return PagerChannel(section)
'''


@pytest.fixture
def pager(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    package = tmp_path / "pager"
    package.mkdir()
    (package / "__init__.py").write_text(PACKAGE)
    (package / "spec.py").write_text(SPEC)
    monkeypatch.setattr(adapters, "__path__", [*adapters.__path__, str(tmp_path)])
    channel_specs.cache_clear()
    yield
    channel_specs.cache_clear()
    for name in [m for m in sys.modules if m.startswith("adapters.pager")]:
        del sys.modules[name]


def _config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "hitl-bridge.yaml"
    path.write_text(text)
    return str(path)


def test_without_its_spec_the_core_knows_no_such_handle() -> None:
    assert channel_spec("pager") is None
    with pytest.raises(PeopleError, match="is not a handle"):
        normalize_handle("pager:ana")


def test_its_handles_are_spelled_and_refused_by_its_spec(pager: None) -> None:
    assert normalize_handle("pager:ANA") == "pager:ana"
    with pytest.raises(PeopleError, match="a pager handle is letters and digits"):
        normalize_handle("pager:a-b")
    people = People({"ana": ["pager:Ana", "web:ana"]})
    assert people.person_of("pager:ana") == "ana"
    assert people.targets_of("person:ana") == ["pager:ana"]  # its DM target; the inbox login reaches nobody


def test_its_section_switches_it_on_and_its_fix_texts_are_said(pager: None, tmp_path: Path) -> None:
    off = load_settings(_config(tmp_path, "pager: {bot_token: ''}\nroutes: [{notify: ['pager:ops']}]\n"), env={})
    assert switched_off(off) == ["the pager: section's bot_token is empty, so Pager is off"]
    channels = build_channels(off, None, SystemClock())  # type: ignore[arg-type]  # the store is not touched
    assert [c.name for c in channels] == ["web"]
    with pytest.raises(ConfigError, match=r"Pager is off .*: set pager\.bot_token"):
        check_targets(off, channels)

    on = load_settings(_config(tmp_path, "pager: {bot_token: t}\nroutes: [{notify: ['pager:ops']}]\n"), env={})
    channels = build_channels(on, None, SystemClock())  # type: ignore[arg-type]
    assert [c.name for c in channels] == ["web", "pager"]
    check_targets(on, channels)  # pager:ops has its channel
    bare = load_settings(_config(tmp_path, "pager: {bot_token: t}\n"), env={})
    assert unreached_channels(bare, build_channels(bare, None, SystemClock())) == [  # type: ignore[arg-type]
        "pager is on but no route notifies it: set PAGER_TARGET or add a route"]


def test_a_target_of_it_without_its_section_gets_its_fix(pager: None, tmp_path: Path) -> None:
    settings = load_settings(_config(tmp_path, "routes: [{notify: ['pager:ops']}]\n"), env={})
    with pytest.raises(ConfigError, match="add a pager: section with bot_token"):
        check_targets(settings, build_channels(settings, None, SystemClock()))  # type: ignore[arg-type]


def test_the_environment_alone_sets_it_up(pager: None, tmp_path: Path) -> None:
    env = {"PAGER_TOKEN": "t", "PAGER_TARGET": "ops", "HITL_BRIDGE_CONFIG_PATH": str(tmp_path / "none.yaml")}
    settings = load_settings(None, env=env)
    assert settings.section("pager") == {"bot_token": "t"}
    assert settings.default_route.notify == ["web", "pager:ops"]


def test_a_mistyped_section_name_is_suggested(pager: None, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"pagr: unknown key \(did you mean pager\?\)"):
        load_settings(_config(tmp_path, "pagr: {bot_token: t}\n"), env={})


def test_a_section_that_is_not_a_mapping_is_refused_naming_its_key_with_every_other_problem(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings(_config(tmp_path, "log_levl: INFO\nslack: yes\n"), env={})
    assert ":2: slack: Input should be a valid dictionary" in str(raised.value)
    assert ":1: log_levl: unknown key (did you mean log_level?)" in str(raised.value)


def test_a_changed_channel_section_waits_for_a_restart(tmp_path: Path) -> None:
    from bridge.reload import plan_reload

    current = load_settings(_config(tmp_path, "telegram: {bot_token: '1:a'}\npeople: {ana: [web:ana]}\n"), env={})
    new = load_settings(_config(tmp_path, "telegram: {bot_token: '1:b'}\npeople: {ana: [web:ana, web:bo]}\n"),
                        env={})
    plan = plan_reload(current, new)
    assert plan.needs_restart == ["telegram"] and plan.changes == ["people changed"]
    assert plan.settings.section("telegram") == {"bot_token": "1:a"}  # kept until a restart
    assert plan.settings.telegram == {"bot_token": "1:a"}  # still read as an attribute


def test_a_spec_module_without_a_spec_is_an_error_not_a_channel_left_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "spec.py").write_text("SPEC = {'name': 'broken'}\n")
    monkeypatch.setattr(adapters, "__path__", [*adapters.__path__, str(tmp_path)])
    channel_specs.cache_clear()
    try:
        with pytest.raises(TypeError, match=r"adapters\.broken\.spec\.SPEC is not a ChannelSpec"):
            channel_specs()
    finally:
        monkeypatch.undo()
        channel_specs.cache_clear()
        sys.modules.pop("adapters.broken.spec", None)
    assert channel_spec("web") is not None  # found again once the broken one is gone

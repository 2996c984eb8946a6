"""The Docker image's configuration, checked without a Docker engine (none runs here): the
Dockerfile bakes in no setting that would override a mounted config, and the image's
config search path finds a mounted /config/hitl-bridge.yaml first, else its own file."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from bridge.config import ENV_PREFIX, SEARCH_PATH_ENV, find_config_file, load_settings
from bridge.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    joined: list[str] = []
    pending = ""
    for raw in (ROOT / "Dockerfile").read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        joined.append(pending + line)
        pending = ""
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in joined]


def image_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for instruction, args in instructions():
        if instruction == "ENV":
            for pair in shlex.split(args):
                key, _, value = pair.partition("=")
                env[key] = value
    return env


def in_tmp(tmp_path: Path, path: str) -> Path:
    return tmp_path / path.lstrip("/")


def test_the_image_bakes_in_no_setting() -> None:
    env = image_env()
    assert not [k for k in env if k.startswith(ENV_PREFIX)], "HITL_BRIDGE__* overrides every config, a mounted one too"
    assert "HITL_BRIDGE_CONFIG" not in env  # it would make a missing mount an error instead of a fallback
    assert env[SEARCH_PATH_ENV].split(":")[0] == "/config/hitl-bridge.yaml"
    copies = [args.split() for instruction, args in instructions() if instruction == "COPY"]
    own = env[SEARCH_PATH_ENV].split(":")[-1]
    assert ["config/docker.yaml", own] in copies
    assert ("USER", "bridge") in instructions()


def test_a_mounted_config_wins_and_nothing_in_the_image_overrides_it(tmp_path: Path) -> None:
    env = image_env()
    search = [str(in_tmp(tmp_path, p)) for p in env[SEARCH_PATH_ENV].split(":")]
    env[SEARCH_PATH_ENV] = ":".join(search)
    own = Path(search[-1])
    own.parent.mkdir(parents=True)
    own.write_text((ROOT / "config" / "docker.yaml").read_text())
    env["BRIDGE_API_TOKEN"] = "t" * 32

    settings = load_settings(None, env=env)  # nothing mounted: the image's own config
    assert settings.origin == str(own)
    assert settings.store.url == "sqlite:////data/bridge.db" and settings.http.listen == "0.0.0.0:8787"

    mounted = Path(search[0])
    mounted.parent.mkdir(parents=True)
    mounted.write_text("store: {url: 'postgresql://hitl@db:5432/hitl'}\n"
                       "http: {listen: '0.0.0.0:9000', api_tokens: ['${BRIDGE_API_TOKEN}']}\n")
    assert find_config_file(None, env) == mounted
    settings = load_settings(None, env=env)
    assert settings.store.url == "postgresql://hitl@db:5432/hitl"  # every replica on the shared database
    assert settings.http.listen == "0.0.0.0:9000"


def test_the_images_own_config_names_the_missing_token(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(str(ROOT / "config" / "docker.yaml"), env={})
    assert info.value.key == "http.api_tokens[0]" and "${BRIDGE_API_TOKEN} is not set" in info.value.reason

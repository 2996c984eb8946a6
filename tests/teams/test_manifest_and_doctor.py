"""The app package `hitl-bridge teams manifest` writes, and doctor's checks against the fake."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from adapters.teams.manifest import package
from tests.cli.helpers import clean_env, cli
from tests.fakes.teams_api import APP_ID, FakeTeams
from tests.teams.conftest import BEN, CHANNEL, teams_bridge


def test_the_package_holds_the_manifest_and_both_icons() -> None:
    archive = zipfile.ZipFile(io.BytesIO(package(APP_ID, "deploy-approvals")))
    assert sorted(archive.namelist()) == ["color.png", "manifest.json", "outline.png"]
    manifest = json.loads(archive.read("manifest.json"))
    assert manifest["id"] == APP_ID and manifest["bots"][0]["botId"] == APP_ID
    assert set(manifest["bots"][0]["scopes"]) == {"personal", "team", "groupChat"}
    for name in ("color.png", "outline.png"):
        assert archive.read(name).startswith(b"\x89PNG\r\n\x1a\n")


async def test_doctor_gets_a_token_and_checks_every_target(tmp_path: Path, fake: FakeTeams) -> None:
    async with teams_bridge(tmp_path, fake) as bridge:
        channel = next(c for c in bridge.daemon.channels if c.name == "teams")
        before = await channel.doctor([f"teams:channel:{CHANNEL}"], [], bridge.daemon.store)  # type: ignore[attr-defined]
        assert before[0].status == "ok" and before[1].status == "fail"
        await bridge.install()
        after = await channel.doctor([f"teams:channel:{CHANNEL}", f"teams:user:{BEN}", "teams:nope"],  # type: ignore[attr-defined]
                                     [], bridge.daemon.store)
        assert [f.status for f in after] == ["ok", "ok", "ok", "fail"]
        fake.refuse_credentials = True
        channel.connector.forget_token()  # type: ignore[attr-defined]
        refused = await channel.doctor([], [], bridge.daemon.store)  # type: ignore[attr-defined]
        assert refused[0].status == "fail" and "app_password" in refused[0].fix


def test_the_cli_writes_the_package_for_the_configs_bot(tmp_path: Path) -> None:
    config = Path(__file__).resolve().parents[2] / "config" / "deploy-approvals-teams.yaml"
    env = clean_env(TEAMS_APP_ID=APP_ID, TEAMS_APP_PASSWORD="placeholder", BRIDGE_SECRET_KEY="k" * 64)
    done = cli("-c", str(config), "teams", "manifest", "--out", str(tmp_path / "app.zip"), cwd=tmp_path, env=env)
    assert done.code == 0, done.err
    manifest = json.loads(zipfile.ZipFile(tmp_path / "app.zip").read("manifest.json"))
    assert manifest["id"] == APP_ID and manifest["name"]["short"] == "deploy-approvals"
    missing = cli("teams", "manifest", "--out", str(tmp_path / "none.zip"), cwd=tmp_path, env=clean_env())
    assert missing.code == 1 and not (tmp_path / "none.zip").exists()

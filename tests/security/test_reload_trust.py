"""What a reload may do to the rules, through a real `hitl-bridge serve` child, SIGHUP and
the HTTP API: a file with no rules is refused (and says how to mean it), an open request
keeps the rules it was created under (a reload tightens them, never loosens them), and the
file is read and parsed off the event loop within bounds (an alias bomb is refused, a
reload blocked on its file leaves /healthz answering)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.processes import ServeChild

HITL = str(Path(sys.executable).parent / "hitl-bridge")
CI, ANA, BO, CY = ("ci-token-0123456789ab", "ana-token-0123456789a", "bo-token-0123456789ab",
                   "cy-token-0123456789ab")
CONFIRM = [{"id": "ok", "kind": "confirm", "prompt": "Deploy?"}]
PROD = {"name": "prod", "match": {"labels.env": "prod"}, "notify": ["web"], "responders": ["group:oncall"],
        "quorum": 2, "forbid_self_approval": True}


def base_config(tmp_path: Path, **sections: Any) -> dict[str, Any]:
    return {"store": {"url": f"sqlite:///{tmp_path}/bridge.db"},
            "http": {"listen": "127.0.0.1:0",
                     "api_tokens": {"ci": CI, "ana": ANA, "bo": BO, "cy": CY}},
            "sources": [{"type": "webhook"}], **sections}


def four_eyes(tmp_path: Path, **changes: Any) -> dict[str, Any]:
    rules: dict[str, Any] = {"people": {"ana": ["api:ana"], "bo": ["api:bo"], "cy": ["api:cy"]},
                             "groups": {"oncall": ["ana", "bo", "cy"]}, "routes": [PROD]}
    return base_config(tmp_path, **{**rules, **changes})


@contextmanager
def serving(tmp_path: Path, config: dict[str, Any]) -> Iterator[tuple[ServeChild, Path]]:
    path = tmp_path / "hitl-bridge.yaml"
    path.write_text(yaml.safe_dump(config))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HITL_BRIDGE", "SLACK_", "TELEGRAM_"))}
    served = ServeChild([HITL, "--config", str(path), "serve"], tmp_path, env)
    try:
        served.until(lambda: served.url, alive=True)
        yield served, path
    finally:
        served.proc.terminate()
        served.proc.wait(timeout=30)


def said(served: ServeChild, text: str) -> str | None:
    return next((line for line in served.lines if text in line), None)


def reload(served: ServeChild, path: Path, config: dict[str, Any] | str) -> str:
    """Write the file, send SIGHUP, and return the line that says how the reload ended."""
    path.write_text(config if isinstance(config, str) else yaml.safe_dump(config))
    seen = len(served.lines)
    served.proc.send_signal(signal.SIGHUP)

    def ended() -> str | None:
        return next((line for line in served.lines[seen:]
                     if "config reloaded from" in line or "reload refused" in line), None)

    return str(served.until(ended, alive=True))


def api(served: ServeChild, token: str) -> httpx.Client:
    return httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {token}"}, timeout=10)


def ask(served: ServeChild, **body: Any) -> str:
    with api(served, CI) as http:
        created = http.post("/v1/requests", json={"title": "Deploy api to prod", "labels": {"env": "prod"},
                                                  "questions": CONFIRM, **body})
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def vote(served: ServeChild, rid: str, token: str, value: str = "yes") -> httpx.Response:
    with api(served, token) as http:
        return http.post(f"/v1/requests/{rid}/answer", json={"value": value})


def state(served: ServeChild, rid: str) -> str:
    with api(served, CI) as http:
        return str(http.get(f"/v1/requests/{rid}").json()["state"])


def check_config(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HITL, "check-config", str(path), *args], capture_output=True, text=True, timeout=60,
                          env={k: v for k, v in os.environ.items() if not k.startswith("HITL_BRIDGE")})


# 1a: a reload that would drop every rule ------------------------------------------------

def test_a_reload_with_no_rules_is_refused_and_the_rules_stay(tmp_path: Path) -> None:
    with serving(tmp_path, four_eyes(tmp_path)) as (served, path):
        no_rules = yaml.safe_dump(base_config(tmp_path))  # everything but routes/people: cut short
        for text in ("", "# all commented out\n# routes:\n", "{}\n", no_rules):
            ended = reload(served, path, text)
            assert "reload refused" in ended and "would drop every rule" in ended, ended
            assert "allow_empty: true" in ended
        rid = ask(served, requested_by="ana")
        assert vote(served, rid, ANA).status_code == 403  # four-eyes still on: route prod still there
        assert vote(served, rid, BO).status_code == 200 and state(served, rid) == "posted"  # quorum 2
        with api(served, CI) as http:
            metrics = http.get("/metrics").text
            assert 'hitl_config_reloads_total{result="no_rules"} 4.0' in metrics
            assert "hitl_config_last_reload_successful 0.0" in metrics
            ready = http.get("/readyz")
            assert ready.status_code == 200  # the running config is fine: still ready
            config = next(c for c in ready.json()["checks"] if c["component"] == "config")
            assert config["status"] == "degraded" and "would drop every rule" in config["summary"]
        doctor = subprocess.run([HITL, "--config", str(path), "doctor", "--url", served.url], capture_output=True,
                                text=True, timeout=60, cwd=tmp_path, env={**os.environ, "HITL_BRIDGE_TOKEN": CI})
        line = next(ln for ln in doctor.stdout.splitlines() if "daemon config" in ln)
        assert "would drop every rule" in line and "warn" in line.lower(), doctor.stdout

        ended = reload(served, path, no_rules + "allow_empty: true\n")  # meant: applied
        assert "config reloaded from" in ended and "route prod removed" in ended
        with api(served, CI) as http:
            checks = http.get("/readyz").json()["checks"]
            assert next(c for c in checks if c["component"] == "config")["status"] == "ok"


def test_check_config_calls_a_file_with_no_rules_an_error_unless_told(tmp_path: Path) -> None:
    path = tmp_path / "hitl-bridge.yaml"
    for text in ("", "# routes: commented out\n", yaml.safe_dump(base_config(tmp_path))):
        path.write_text(text)
        refused = check_config(path)
        assert refused.returncode == 2 and "would drop every rule" in refused.stderr, refused
        assert check_config(path, "--allow-empty").returncode == 0
    path.write_text("allow_empty: true\n")
    assert check_config(path).returncode == 0
    path.write_text(yaml.safe_dump(four_eyes(tmp_path)))
    assert check_config(path).returncode == 0


# 1b: an open request keeps its rules ----------------------------------------------------

def test_an_open_request_keeps_the_rules_it_was_created_under(tmp_path: Path) -> None:
    with serving(tmp_path, four_eyes(tmp_path)) as (served, path):
        rid = ask(served, requested_by="ana")
        loose = four_eyes(tmp_path, routes=[{"name": "staging", "match": {"labels.env": "staging"}}])
        loose["default_route"] = {"notify": ["web"]}  # quorum 1, four-eyes off, anyone
        ended = reload(served, path, loose)
        assert "config reloaded" in ended and "route prod removed" in ended, ended

        refused = vote(served, rid, ANA)  # the asker: four-eyes was on when it was asked
        assert refused.status_code == 403, refused.text
        assert vote(served, rid, BO).status_code == 200
        assert state(served, rid) == "posted"  # one of two approvals: quorum 2 still
        with api(served, CI) as http:
            assert http.get(f"/v1/requests/{rid}").json()["quorum"] == 2
        assert vote(served, rid, CY).status_code == 200
        assert state(served, rid) in ("answered", "delivered")

        fresh = ask(served, requested_by="ana")  # a new request gets the new rules
        assert vote(served, fresh, ANA).status_code == 200
        assert state(served, fresh) in ("answered", "delivered")


def test_a_reload_that_tightens_applies_to_open_requests(tmp_path: Path) -> None:
    lax = {**PROD, "forbid_self_approval": False}
    with serving(tmp_path, four_eyes(tmp_path, routes=[lax])) as (served, path):
        rid = ask(served, requested_by="ana")
        tight = four_eyes(tmp_path, routes=[{**PROD, "quorum": 3}])
        assert "config reloaded" in reload(served, path, tight)
        assert vote(served, rid, ANA).status_code == 403  # four-eyes switched on: applies at once
        assert vote(served, rid, BO).status_code == 200
        assert vote(served, rid, CY).status_code == 200
        assert state(served, rid) == "posted"  # quorum 3 now: two approvals are not enough
        with api(served, CI) as http:
            body = http.get(f"/v1/requests/{rid}").json()
        assert body["quorum"] == 3 and "rules" not in body
        assert sorted(v["voter"] for v in body["votes"]) == ["person:bo", "person:cy"], body["votes"]


# 2: the file is read off the event loop, within bounds -----------------------------------

ALIAS_BOMB = "".join(
    [f"b0: &b0 [{', '.join(['lol'] * 10)}]\n"]
    + [f"b{i}: &b{i} [{', '.join([f'*b{i - 1}'] * 10)}]\n" for i in range(1, 9)]
    + ["routes: [{name: bomb, match: {x: '*b8'}}]\n"])


def test_an_alias_bomb_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    with serving(tmp_path, four_eyes(tmp_path)) as (served, path):
        ended = reload(served, path, ALIAS_BOMB)
        assert "reload refused" in ended and "alias" in ended and "100,000 values" in ended, ended
        with httpx.Client(base_url=served.url, timeout=10) as http:
            assert http.get("/healthz").status_code == 200
        rid = ask(served, requested_by="ana")
        assert vote(served, rid, ANA).status_code == 403  # the running rules stayed
    path.write_text(ALIAS_BOMB)
    refused = check_config(path)
    assert refused.returncode == 2 and "alias bomb" in refused.stderr, refused
    started = subprocess.run([HITL, "--config", str(path), "serve"], capture_output=True, text=True, timeout=60,
                             cwd=tmp_path, env={k: v for k, v in os.environ.items() if not k.startswith("HITL_BRIDGE")})
    assert started.returncode == 2 and "alias bomb" in started.stderr, started
    path.write_text("routes: &r [*r]\n")
    assert "recursive" in check_config(path).stderr
    path.write_text("# padding\n" * 200_000)
    assert "larger than 1024 KB" in check_config(path).stderr


def test_a_reload_waiting_on_its_file_leaves_the_daemon_answering(tmp_path: Path) -> None:
    with serving(tmp_path, four_eyes(tmp_path)) as (served, path):
        path.unlink()
        os.mkfifo(path)  # opening it waits until someone writes: the reload is held mid-way
        seen = len(served.lines)
        served.proc.send_signal(signal.SIGHUP)
        served.until(lambda: said(served, "reloading config from"), alive=True)
        with httpx.Client(base_url=served.url, timeout=10) as http:
            assert http.get("/healthz").status_code == 200  # answered while the reload waits
            assert not any("config reloaded" in line or "reload refused" in line for line in served.lines[seen:])

        new = four_eyes(tmp_path, routes=[{**PROD, "name": "production"}])
        writer = threading.Thread(target=path.write_text, args=(yaml.safe_dump(new),))
        writer.start()
        ended = served.until(lambda: said(served, "config reloaded from"), alive=True)
        writer.join(timeout=30)
        assert "route production added" in ended


# 3: one spelling for every handle and name ------------------------------------------------

RELAY = "relay-token-0123456789"


def relay_vote(served: ServeChild, rid: str, responder: str, value: str = "yes") -> httpx.Response:
    with api(served, RELAY) as http:
        return http.post(f"/v1/requests/{rid}/answer", json={"value": value, "responder": responder})


def relayed(tmp_path: Path, **changes: Any) -> dict[str, Any]:
    config = four_eyes(tmp_path, routes=[{**PROD, "responders": []}], **changes)
    config["http"]["api_tokens"]["relay"] = {"token": RELAY, "act_for_others": True}
    return config


def test_email_handles_are_compared_without_regard_to_case(tmp_path: Path) -> None:
    config = relayed(tmp_path)
    config["people"]["zed"] = ["email:Zed@Example.com"]
    with serving(tmp_path, config) as (served, _):
        rid = ask(served)
        assert relay_vote(served, rid, "email:zed@example.COM").status_code == 200  # Zed, however spelled
        assert relay_vote(served, rid, "email:ZED@example.com").status_code == 200  # the same mailbox
        assert state(served, rid) == "posted"  # one person, one vote: quorum 2 not met
        with api(served, CI) as http:
            votes = http.get(f"/v1/requests/{rid}").json()["votes"]
        assert [v["voter"] for v in votes] == ["person:zed"], votes
        # an address of nobody is no person, in any spelling: a relay cannot vote for it
        assert relay_vote(served, rid, "email:Nobody@Example.com").status_code == 403

        mine = ask(served, requested_by="email:ZED@example.com")  # four-eyes whatever the spelling
        assert relay_vote(served, mine, "email:zed@EXAMPLE.com").status_code == 403

        listed = ask(served, responders=["email:Zed@Example.com", "email:zed@example.com", "slack:@U0ABC"])
        with api(served, CI) as http:
            assert http.get(f"/v1/requests/{listed}").json()["responders"] == ["email:zed@example.com",
                                                                             "slack:U0ABC"]


def test_person_and_group_names_are_compared_without_regard_to_case(tmp_path: Path) -> None:
    config = relayed(tmp_path, people={"Ana": ["api:ana"], "bo": ["api:bo"], "cy": ["api:cy"]},
                     groups={"OnCall": ["ana", "BO", "cy"]})
    with serving(tmp_path, config) as (served, _):
        named = ask(served, requested_by="ANA")  # the person Ana, as any spelling names her
        assert vote(served, named, ANA).status_code == 403
        assert relay_vote(served, named, "person:ana").status_code == 403
        assert relay_vote(served, named, "bo").status_code == 200  # a name in any case is that person
        assert relay_vote(served, named, "person:Bo").status_code == 200  # and once more is no second vote
        assert state(served, named) == "posted"

        listed = ask(served, responders=["person:ANA", "group:oncall"])
        with api(served, CI) as http:
            assert http.get(f"/v1/requests/{listed}").json()["responders"] == ["person:Ana", "group:OnCall"]
    path = tmp_path / "twins.yaml"
    path.write_text(yaml.safe_dump({"people": {"ana": ["api:a"], "ANA": ["api:b"]}}))
    assert "people.ana: the same name as ANA (names are compared without regard to case)" in check_config(path).stderr

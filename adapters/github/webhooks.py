"""GitHub webhooks, read strictly and with no I/O: the signature check, the
`deployment_protection_rule` request, and the events that end a wait (a run completed or
cancelled, a deployment that moved on)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from githubkit.webhooks import verify

#: the callback GitHub names in `deployment_callback_url`
CALLBACK_PATH = re.compile(
    r"/repos/(?P<repo>[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100})/actions/runs/(?P<run>[0-9]{1,20})"
    r"/deployment_protection_rule$")
#: deployment states after which nobody waits for a decision any more
DEPLOYMENT_MOVED_ON = frozenset({"in_progress", "success", "failure", "error", "inactive"})


class ForgedWebhook(Exception):
    """The signature is missing or does not match the webhook secret."""


class UnreadableWebhook(ValueError):
    """Signed, but not the event its header says (a field missing or of the wrong type)."""


def check_signature(secret: str, body: bytes, header: str | None) -> None:
    """Raise ForgedWebhook unless `header` is `sha256=<HMAC of body with secret>` (SHA-1
    signatures are refused: GitHub sends both, and only SHA-256 is trusted)."""
    if not header or not header.startswith("sha256=") or len(header) != 71:
        raise ForgedWebhook("missing or malformed X-Hub-Signature-256")
    if not verify(secret, body, header):
        raise ForgedWebhook("X-Hub-Signature-256 does not match the webhook secret")


@dataclass(frozen=True)
class ProtectionRule:
    """A `deployment_protection_rule` request: a run waits on this App for `environment`."""

    repo: str
    run_id: int
    environment: str
    ref: str
    sha: str
    installation_id: int
    deployment_id: int | None
    creator: str | None  # the deployment's creator, else the webhook's sender


def _str(payload: dict[str, Any], key: str) -> str:
    value = payload.get(key)
    if not isinstance(value, str) or not value or len(value) > 500:
        raise UnreadableWebhook(f"{key}: a non-empty string is required")
    return value


def _obj(payload: dict[str, Any], key: str) -> dict[str, Any]:
    value = payload.get(key)
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def protection_rule(payload: dict[str, Any], api_url: str) -> ProtectionRule:
    """Read a `deployment_protection_rule` webhook (action `requested`). The callback must
    be this GitHub's (`api_url`): an installation token is never sent anywhere else."""
    callback = _str(payload, "deployment_callback_url")
    parts, api = urlsplit(callback), urlsplit(api_url.rstrip("/"))
    path = parts.path.removeprefix(api.path)
    match = CALLBACK_PATH.match(path)
    if ((parts.scheme, parts.netloc) != (api.scheme, api.netloc) or not parts.path.startswith(api.path)
            or not match or {".", ".."} & set(match["repo"].split("/"))):
        raise UnreadableWebhook("deployment_callback_url is not a run's protection-rule URL on api_url")
    repo = str(_obj(payload, "repository").get("full_name") or match["repo"])
    if repo.lower() != match["repo"].lower():
        raise UnreadableWebhook("deployment_callback_url names another repository than the webhook")
    deployment = _obj(payload, "deployment")
    installation_id = _int(_obj(payload, "installation").get("id"))
    if installation_id is None:
        raise UnreadableWebhook("installation.id: the App installation is required (it buys the token)")
    creator = _obj(deployment, "creator").get("login") or _obj(payload, "sender").get("login")
    return ProtectionRule(
        repo=match["repo"], run_id=int(match["run"]), environment=_str(payload, "environment"),
        ref=str(payload.get("ref") or deployment.get("ref") or "")[:250],
        sha=_str(payload, "sha") if payload.get("sha") else _str(deployment, "sha"),
        installation_id=installation_id,
        deployment_id=_int(deployment.get("id")),
        creator=str(creator)[:100] if creator else None,
    )


@dataclass(frozen=True)
class WaitEnded:
    """Nobody waits on `repo`'s run `run_id` any more (for `environment`, or all of them)."""

    repo: str
    run_id: int
    environment: str | None
    why: str


def wait_ended(event: str, payload: dict[str, Any]) -> WaitEnded | None:
    """A run that completed (cancelled, failed, done), or a deployment that started or ended
    without us (approved by an admin bypassing the rule, decided by a reviewer in GitHub)."""
    repo = _obj(payload, "repository").get("full_name")
    if not isinstance(repo, str):
        return None
    if event == "workflow_run" and payload.get("action") == "completed":
        run = _obj(payload, "workflow_run")
        run_id = _int(run.get("id"))
        conclusion = str(run.get("conclusion") or "completed")
        return WaitEnded(repo, run_id, None, f"the run ended in GitHub ({conclusion})") if run_id else None
    if event == "deployment_review" and payload.get("action") in ("approved", "rejected"):
        run_id = _int(_obj(payload, "workflow_run").get("id"))
        envs = {str(j.get("environment")) for j in payload.get("workflow_job_runs") or [] if isinstance(j, dict)}
        env = next(iter(envs)) if len(envs) == 1 else None
        return WaitEnded(repo, run_id, env, f"{payload['action']} in GitHub") if run_id else None
    if event == "deployment_status":
        status = _obj(payload, "deployment_status")
        run_id = _int(_obj(payload, "workflow_run").get("id"))
        if run_id and status.get("state") in DEPLOYMENT_MOVED_ON:
            env = _obj(payload, "deployment").get("environment")
            return WaitEnded(repo, run_id, env if isinstance(env, str) else None,
                             f"the deployment is {status['state']} in GitHub")
    return None

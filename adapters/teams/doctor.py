"""`hitl-bridge doctor` for Teams: ask Microsoft now whether the config can work.

- the bot's credential: a token from the login endpoint;
- each target: a conversation reference is recorded (the app was added there) and the Bot
  Connector still lists its members; a person with no one-to-one chat yet can be reached
  when a tenant is known to open one in.
"""

from __future__ import annotations

from collections.abc import Sequence

from adapters.teams.connector import Connector, TeamsCallFailed, members
from adapters.teams.health import CREDENTIAL_FIX
from adapters.teams.references import References
from adapters.teams.targets import BadTarget, parse_target
from bridge.doctor import Finding, fail, ok, warn

INSTALL_FIX = "install the app (hitl-bridge teams manifest) in that team or chat, or for that person"


async def diagnose(connector: Connector, references: References, tenant_id: str,
                   targets: Sequence[str]) -> list[Finding]:
    try:
        await connector.token()
    except TeamsCallFailed as exc:
        if exc.refused or exc.status == 400:
            return [fail("teams bot", f"the token endpoint refused the bot's credential ({exc})", CREDENTIAL_FIX)]
        return [fail("teams bot", f"cannot get a token ({exc})", "check the network and teams.login_endpoint")]
    findings = [ok("teams bot", f"app {connector.settings.app_id} has a token")]
    for target in targets:
        findings.append(await _target(connector, references, tenant_id, target))
    return findings


async def _target(connector: Connector, references: References, tenant_id: str, target: str) -> Finding:
    try:
        parsed = parse_target(target)
    except BadTarget as exc:
        return fail(target, str(exc))
    reference = await references.get(parsed.key)
    if reference is None:
        if parsed.kind == "user" and await references.tenant(tenant_id) is not None:
            return ok(target, "a one-to-one chat is opened on the first post")
        return fail(target, "the bot has not been added there (no conversation reference)", INSTALL_FIX)
    try:
        count = await members(connector, reference.service_url, reference.conversation_id)
    except TeamsCallFailed as exc:
        if exc.status in (403, 404):
            return fail(target, f"the Bot Connector refused the conversation ({exc})", INSTALL_FIX)
        return warn(target, f"could not check the conversation ({exc})")
    return ok(target, f"reachable ({count} member{'s' if count != 1 else ''})")

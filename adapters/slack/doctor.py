"""`hitl-bridge doctor` for Slack: ask Slack now whether the config can work.

- `auth.test`: is the bot token taken (and which workspace, which bot)?
- the scopes Slack says the token has (`x-oauth-scopes`, sent with every answer) against
  the scopes this config needs (DM targets need `im:write`, `@group`s `usergroups:read`…);
- each target: a channel exists, is not archived and has the bot as a member
  (`conversations.info`; a `#name` is resolved from the id the channel learnt when it
  last posted there, else by `conversations.list`); a person exists (`users.info`); a
  user group exists and has members;
- Socket Mode: is the app token taken (`apps.connections.open`)?
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.calls import response_data, slack_error
from adapters.slack.copies import CHANNEL_IDS_NS
from adapters.slack.directory import Directory
from adapters.slack.health import APP_TOKEN_FIX, AUTH_ERRORS, TOKEN_FIX
from adapters.slack.settings import SlackSettings
from adapters.slack.targets import BadTarget, SlackTarget, parse_target
from bridge.doctor import Finding, fail, ok, warn

if TYPE_CHECKING:
    from bridge.store.base import Store

MAX_LIST_PAGES = 20
SCOPES_FIX = ("add it under OAuth & Permissions → Bot Token Scopes, reinstall the app to the workspace, "
              "and put the new xoxb- token in slack.bot_token")


class Unreachable(Exception):
    """Slack did not answer (network, proxy, api_url)."""


def needed_scopes(targets: Sequence[SlackTarget], responders: Sequence[SlackTarget]
                  ) -> list[tuple[str, str, bool]]:
    """(scope, why, required) for what this config does with Slack."""
    kinds = {t.kind for t in targets}
    out = [("chat:write", "post and update requests", True)]
    if kinds & {"user", "usergroup"}:
        out.append(("im:write", "DM targets (slack:@U…, and each member of a slack:@group)", True))
    if "usergroup" in kinds or any(r.kind == "usergroup" for r in responders):
        out.append(("usergroups:read", "slack:@group targets and responders", True))
    if "channel" in kinds:
        out.append(("channels:history", "find its own post after a timeout instead of posting twice", False))
        out.append(("channels:read", "this check of the bot's channel membership", False))
    out.append(("users:read", "people's names in notes and the Home tab", False))
    return out


async def _call(method: Any, **kwargs: Any) -> Any:
    try:
        return await method(**kwargs)
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        raise Unreachable(type(exc).__name__) from None


def granted_scopes(response: Any) -> set[str] | None:
    headers = {str(k).lower(): v for k, v in (getattr(response, "headers", None) or {}).items()}
    raw = headers.get("x-oauth-scopes")
    if isinstance(raw, list):
        raw = ",".join(raw)
    return None if raw is None else {s.strip() for s in str(raw).split(",") if s.strip()}


@dataclass(frozen=True)
class Asked:
    """What the checks ask Slack through: the raw client (its answers' headers name the
    token's scopes; nothing is retried), the user group cache, the settings."""

    client: AsyncWebClient
    directory: Directory
    settings: SlackSettings


async def diagnose(slack: Asked, targets: Sequence[str], responders: Sequence[str],
                   store: Store) -> list[Finding]:
    client = slack.client
    api = slack.settings.api_url
    try:
        response = await _call(client.auth_test)
    except Unreachable as exc:
        return [fail("slack auth", f"cannot reach Slack at {api} ({exc})", "check the network, a proxy, slack.api_url")]
    except SlackApiError as exc:
        error = slack_error(exc)
        fix = TOKEN_FIX if error in AUTH_ERRORS else "see https://api.slack.com/methods/auth.test"
        return [fail("slack auth", f"Slack refused the bot token ({error})", fix)]
    me = response_data(response)
    findings = [ok("slack auth", f"@{me.get('user')} (bot {me.get('bot_id')}) in {me.get('team')} "
                                 f"({me.get('team_id')})")]
    parsed: list[tuple[str, SlackTarget]] = []
    for target in targets:
        try:
            parsed.append((target, parse_target(target)))
        except BadTarget as exc:
            findings.append(fail(target, str(exc), "use slack:#name, slack:C…, slack:@U… or slack:@group"))
    groups = []
    for entry in responders:
        try:
            groups.append(parse_target(entry))
        except BadTarget:
            continue
    scopes = granted_scopes(response)
    findings += _scope_findings(scopes, needed_scopes([t for _, t in parsed], groups))
    for target, where in parsed:
        try:
            findings.append(await _target(slack, store, target, where, scopes))
        except Unreachable as exc:
            findings.append(fail(target, f"Slack stopped answering ({exc})", "try again; check the network"))
    if slack.settings.socket_mode:
        findings.append(await _app_token(slack))
    return findings


def _scope_findings(scopes: set[str] | None, needed: list[tuple[str, str, bool]]) -> list[Finding]:
    if scopes is None:
        return [warn("slack scopes", "Slack did not say which scopes the token has (no x-oauth-scopes header)",
                     "check the app's Bot Token Scopes by hand: " + ", ".join(s for s, _, _ in needed))]
    findings = []
    missing = [(s, why) for s, why, required in needed if required and s not in scopes]
    wanted = [(s, why) for s, why, required in needed if not required and s not in scopes]
    for scope, why in missing:
        findings.append(fail("slack scopes", f"the token lacks {scope} (needed for {why})", SCOPES_FIX))
    for scope, why in wanted:
        findings.append(warn("slack scopes", f"the token lacks {scope} (used to {why})", SCOPES_FIX))
    if not missing:
        findings.insert(0, ok("slack scopes", ", ".join(s for s, _, required in needed if required) + " granted"))
    return findings


async def _target(slack: Asked, store: Store, target: str, where: SlackTarget,
                  scopes: set[str] | None) -> Finding:
    client = slack.client
    if where.kind == "user":
        if scopes is not None and "users:read" not in scopes:
            return warn(target, "not checked (needs users:read)")
        try:
            user = response_data(await _call(client.users_info, user=where.value)).get("user", {})
        except SlackApiError as exc:
            return fail(target, f"no such person ({slack_error(exc)})", "use the member id (U…) from their profile")
        if user.get("deleted"):
            return fail(target, f"@{user.get('name')} is deactivated", "name someone else")
        return ok(target, f"DM to @{user.get('name', where.value)}")
    if where.kind == "usergroup":
        try:
            members = await slack.directory.group_members(where.value)
        except Exception as exc:
            return fail(target, f"cannot list the user group: {exc}", "grant usergroups:read")
        if not members:
            return fail(target, f"no user group @{where.value}, or it has no members",
                        "check the handle in Slack → People → User groups")
        return ok(target, f"user group with {len(members)} member(s), each gets a DM")
    return await _channel_target(slack.client, store, target, where.value, scopes)


async def _channel_target(client: AsyncWebClient, store: Store, target: str, name_or_id: str,
                          scopes: set[str] | None) -> Finding:
    channel_id: str | None = name_or_id
    if name_or_id.startswith("#"):
        known = await _known_id(store, name_or_id)
        channel_id = known or await _find_by_name(client, name_or_id[1:], scopes)
        if channel_id is None:
            if scopes is not None and "channels:read" not in scopes:
                return warn(target, "membership not checked (needs channels:read)",
                            f"make sure the bot is in {name_or_id}: /invite @<bot> there")
            return fail(target, f"no channel {name_or_id} the bot can see (a private channel the bot is not in, "
                                "a renamed or archived channel?)",
                        f"create it, or /invite the bot to {name_or_id} if it is private")
    assert channel_id is not None
    try:
        info = response_data(await _call(client.conversations_info, channel=channel_id)).get("channel", {})
    except SlackApiError as exc:
        error = slack_error(exc)
        if error == "missing_scope":
            return warn(target, "membership not checked (needs channels:read)",
                        "make sure the bot is in the channel: /invite @<bot> there")
        return fail(target, f"Slack cannot find this channel ({error})",
                    "check the id, or /invite the bot if the channel is private")
    label = f"#{info.get('name', name_or_id)}"
    if info.get("is_archived"):
        return fail(target, f"{label} is archived", "unarchive it or point the route elsewhere")
    if info.get("is_member"):
        return ok(target, f"the bot is a member of {label} ({channel_id})")
    if scopes is not None and "chat:write.public" in scopes and not info.get("is_private"):
        return warn(target, f"the bot is not a member of {label}: posts work (chat:write.public) but replies "
                            "in threads are not seen", f"/invite the bot to {label}")
    return fail(target, f"the bot is not a member of {label}: posts fail with not_in_channel",
                f"/invite the bot to {label} (in Slack: open {label}, type /invite @<bot name>)")


async def _known_id(store: Store, name: str) -> str | None:
    try:
        known = await store.kv_get(CHANNEL_IDS_NS, name)
    except Exception:
        return None
    return str(known["id"]) if known and known.get("id") else None


async def _find_by_name(client: AsyncWebClient, name: str, scopes: set[str] | None) -> str | None:
    if scopes is not None and "channels:read" not in scopes:
        return None
    cursor = ""
    for _ in range(MAX_LIST_PAGES):
        try:
            page = response_data(await _call(client.conversations_list, limit=1000, cursor=cursor or None,
                                             exclude_archived=False, types="public_channel,private_channel"))
        except SlackApiError:
            return None
        for found in page.get("channels", []):
            if str(found.get("name", "")).lower() == name.lower():
                return str(found["id"])
        cursor = str((page.get("response_metadata") or {}).get("next_cursor") or "")
        if not cursor:
            return None
    return None


async def _app_token(slack: Asked) -> Finding:
    try:
        await _call(slack.client.apps_connections_open, app_token=slack.settings.app_token.get_secret_value())
    except Unreachable as exc:
        return fail("slack app token", f"cannot reach Slack ({exc})", "check the network")
    except SlackApiError as exc:
        return fail("slack app token", f"Slack refused the app token ({slack_error(exc)})", APP_TOKEN_FIX)
    return ok("slack app token", "Socket Mode can connect")

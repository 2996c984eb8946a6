"""Conversation references: where the bot may post, learned from the activities Teams
sends when the app is installed or added (and from every later one), kept in the store so
they survive restarts. Keyed by target: `teams:channel:<id>`, `teams:chat:<id>`,
`teams:user:<aadObjectId>` (the one-to-one chat), plus each tenant's service URL (what a
proactive one-to-one chat is opened through)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bridge.store.base import Store

NAMESPACE = "teams.refs"
TENANT_NS = "teams.tenants"
MAX_FIELD = 500
ANY_TENANT = "*"  # the last tenant seen: a multi-tenant bot installed in one tenant


@dataclass(frozen=True)
class Reference:
    """Enough to post into one conversation."""

    service_url: str
    conversation_id: str
    tenant_id: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"service_url": self.service_url, "conversation_id": self.conversation_id,
                "tenant_id": self.tenant_id}


def _field(value: Any) -> str:
    return value if isinstance(value, str) and 0 < len(value) <= MAX_FIELD else ""


def part(value: Any) -> dict[str, Any]:
    """A JSON object inside an activity, or {} when it is anything else."""
    return value if isinstance(value, dict) else {}


def targets_of(activity: dict[str, Any]) -> tuple[Reference, list[str]] | None:
    """The reference an activity gives and the targets it reaches, or None (incomplete)."""
    conversation, channel_data = part(activity.get("conversation")), part(activity.get("channelData"))
    service_url, conversation_id = _field(activity.get("serviceUrl")), _field(conversation.get("id"))
    if not service_url or not conversation_id:
        return None
    tenant = _field(part(channel_data.get("tenant")).get("id")) or _field(conversation.get("tenantId"))
    kind = conversation.get("conversationType")
    targets: list[str] = []
    if kind == "personal":
        aad = _field(part(activity.get("from")).get("aadObjectId")).lower()
        if aad:
            targets.append(f"teams:user:{aad}")
    elif kind == "channel":
        channel_id = _field(part(channel_data.get("channel")).get("id"))
        targets.append(f"teams:channel:{channel_id or conversation_id.split(';')[0]}")
    else:
        targets.append(f"teams:chat:{conversation_id}")
    # a channel's thread is `<channel>;messageid=…`: the channel itself is posted to
    return Reference(service_url, conversation_id.split(";messageid=")[0], tenant), targets


def removed(activity: dict[str, Any]) -> bool:
    """The app was uninstalled, or the bot removed from the conversation."""
    if activity.get("type") == "installationUpdate":
        return activity.get("action") in ("remove", "remove-upgrade")
    bot = _field(part(activity.get("recipient")).get("id"))
    members = activity.get("membersRemoved")
    gone: list[Any] = members if isinstance(members, list) else []
    return activity.get("type") == "conversationUpdate" and bool(bot) and any(
        part(m).get("id") == bot for m in gone)


class References:
    """Reads and writes references in the store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def learn(self, activity: dict[str, Any]) -> list[str]:
        """Record what `activity` tells; the targets it made reachable (none when it says
        the app was removed there: those references are forgotten)."""
        found = targets_of(activity)
        if found is None:
            return []
        reference, targets = found
        if removed(activity):
            for target in targets:
                await self.store.kv_delete(NAMESPACE, target)
            return []
        for target in targets:
            await self.store.kv_put(NAMESPACE, target, reference.as_dict())
        if reference.tenant_id:
            await self.store.kv_put(TENANT_NS, reference.tenant_id, {"service_url": reference.service_url})
            await self.store.kv_put(TENANT_NS, ANY_TENANT, {"service_url": reference.service_url,
                                                            "tenant_id": reference.tenant_id})
        return targets

    async def remember(self, target: str, reference: Reference) -> None:
        await self.store.kv_put(NAMESPACE, target, reference.as_dict())

    async def get(self, target: str) -> Reference | None:
        stored = await self.store.kv_get(NAMESPACE, target)
        if stored is None:
            return None
        return Reference(str(stored["service_url"]), str(stored["conversation_id"]), str(stored.get("tenant_id", "")))

    async def tenant(self, tenant_id: str) -> tuple[str, str] | None:
        """(tenant id, service URL) to open a one-to-one chat in: `tenant_id`'s, or (empty)
        the last tenant the bot was installed in."""
        stored = await self.store.kv_get(TENANT_NS, tenant_id or ANY_TENANT)
        if stored is None:
            return None
        return str(stored.get("tenant_id") or tenant_id), str(stored["service_url"])

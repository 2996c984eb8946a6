"""What the core needs to know about Microsoft Teams (bridge.specs): people are Entra
(AAD) object ids (`teams:<aadObjectId>`), reached by a one-to-one chat
(`teams:user:<aadObjectId>`); channels and group chats are `teams:channel:<id>` and
`teams:chat:<id>`; on when the section has the bot's app password."""

from __future__ import annotations

import re

from bridge.specs import ChannelSpec, HandleError, on_by_token

_GUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def is_object_id(text: str) -> bool:
    """An Entra object id: a GUID (any case)."""
    return bool(_GUID.match(text.lower()))


def normalize(ident: str) -> str:
    if not is_object_id(ident):
        raise HandleError("a Teams handle is the person's Entra object id, such as "
                          "teams:00000000-0000-0000-0000-000000000001")
    return ident.lower()


def person_of_target(ident: str) -> str | None:
    """`user:<aadObjectId>` names one person; a channel or a chat does not."""
    kind, _, value = ident.partition(":")
    return value.lower() if kind == "user" and is_object_id(value) else None


def canonical_target(ident: str) -> str:
    kind, _, value = ident.partition(":")
    return f"user:{value.lower()}" if kind == "user" else ident


SPEC = ChannelSpec(
    name="teams",
    factory="adapters.teams:build_channel",
    config_model="adapters.teams.settings:TeamsSettings",
    order=4,
    **on_by_token("teams", "Microsoft Teams", "app_password"),
    missing_fix="add a teams: section with app_id, app_password and tenant_id",
    normalize=normalize,
    person_hint="teams:<aadObjectId>",
    dm_target=lambda ident: f"teams:user:{ident}",
    person_of_target=person_of_target,
    canonical_target=canonical_target,
    target_forms=("teams:channel:<id>", "teams:chat:<id>", "teams:user:<aadObjectId>"),
    quiet_loggers=("microsoft_teams",),
    command="adapters.teams.command:add_command",
)

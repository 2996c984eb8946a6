"""What the core needs to know about ntfy (bridge.specs): a target is a topic
(`ntfy:ops-approvals`, optionally `?priority=5&tags=warning`), and a topic is also the
handle of whoever is subscribed to it, so `people:` may give a person their own topic.
With no config file, `NTFY_URL` (and `NTFY_TOKEN`) switch it on and `NTFY_TOPIC` is the
default route's topic."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from bridge.specs import ChannelSpec, HandleError

TOPIC = re.compile(r"^[-_A-Za-z0-9]{1,64}$")


def topic_of(ident: str) -> str:
    """`ops?priority=5` → `ops` (the options are the route's, not part of who it reaches)."""
    return ident.partition("?")[0].strip()


def normalize(ident: str) -> str:
    if not TOPIC.fullmatch(ident):
        raise HandleError("an ntfy handle is a topic such as ntfy:ana-approvals (letters, digits, - and _)")
    return ident


#: the environment variable naming the default route's topic (bridge.env_routes)
TOPIC_ENV = "NTFY_TOPIC"


def env_target(value: str) -> str:
    value = value.strip()
    return value if value.startswith("ntfy:") else f"ntfy:{value}"


def env_section(env: Mapping[str, str]) -> dict[str, Any] | None:
    if not env.get("NTFY_URL"):
        return None
    return {"url": env["NTFY_URL"], **({"token": env["NTFY_TOKEN"]} if env.get("NTFY_TOKEN") else {})}


SPEC = ChannelSpec(
    name="ntfy",
    factory="adapters.ntfy:build_channel",
    config_model="adapters.ntfy.settings:NtfySettings",
    order=7,
    missing_fix="add an ntfy: section (url: https://ntfy.sh or your server)",
    normalize=normalize,
    person_hint="ntfy:<topic>",
    dm_target=lambda ident: f"ntfy:{ident}",
    person_of_target=lambda ident: topic_of(ident) if TOPIC.fullmatch(topic_of(ident)) else None,
    canonical_target=lambda ident: ident.strip(),
    target_forms=("ntfy:<topic>", "ntfy:<topic>?priority=<1-5>&tags=<a,b>"),
    target_env=TOPIC_ENV,
    env_target=env_target,
    env_section=env_section,
)

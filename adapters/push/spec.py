"""What the core needs to know about Web Push (bridge.specs): a handle is the inbox login
that turned notifications on (`push:ana` for the login `web:ana`); a person is reached on
every device they turned notifications on for. Off until a `push:` section is present."""

from __future__ import annotations

import re

from bridge.specs import ChannelSpec, HandleError

#: an inbox login name (adapters.web.settings.NAME_PATTERN), without spaces
IDENT = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")


def normalize(ident: str) -> str:
    if not IDENT.fullmatch(ident):
        raise HandleError("a push handle is an inbox login such as push:ana")
    return ident


SPEC = ChannelSpec(
    name="push",
    factory="adapters.push:build_channel",
    config_model="adapters.push.settings:PushSettings",
    order=6,
    missing_fix="add a push: section (with subject: mailto:you@example.com)",
    normalize=normalize,
    person_hint="push:<inbox login>",
    dm_target=lambda ident: f"push:{ident}",
    person_of_target=lambda ident: ident if IDENT.fullmatch(ident) else None,
    target_forms=("push:<inbox login>",),
    quiet_loggers=("pywebpush",),
)

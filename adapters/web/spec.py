"""What the core needs to know about the web inbox (bridge.specs): target `web`, handles
are inbox logins (`web:ana`); on unless `web: {enabled: false}`; it shows every request,
so no route has to notify it. The shared inbox password is nobody in particular."""

from __future__ import annotations

from bridge.specs import ChannelSpec, HandleError

#: every inbox login with the shared `web.password`, whatever name was typed
SHARED_PASSWORD = "shared-password"


def normalize(ident: str) -> str:
    if ident == SHARED_PASSWORD:
        raise HandleError("the shared inbox password is everyone's, not one person's")
    return ident


SPEC = ChannelSpec(
    name="web",
    factory="adapters.web:build_channel",
    config_model="adapters.web.settings:WebConfig",
    order=0,
    default_section={},
    enabled=lambda section: section.get("enabled") is not False,
    missing_fix="remove `web: {enabled: false}`",
    normalize=normalize,
    target_forms=("web",),
    passive=True,
    default_target=True,
    shared_identity=SHARED_PASSWORD,
    local_callers=True,
    daemon_authenticated=True,
)

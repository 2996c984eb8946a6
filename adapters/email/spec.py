"""What the core needs to know about email (bridge.specs): a handle is an address
(`email:ana@example.com`), compared in lower case; a person is reached at it."""

from __future__ import annotations

from bridge.specs import ChannelSpec, HandleError


def normalize(ident: str) -> str:
    ident = ident.lower()
    if ident.count("@") != 1 or ident.startswith("@") or ident.endswith("@") or len(ident) > 254:
        raise HandleError("an email handle is an address such as email:ana@example.com")
    return ident


SPEC = ChannelSpec(
    name="email",
    factory="adapters.email:build_channel",
    config_model="adapters.email.settings:EmailSettings",
    order=3,
    missing_fix="add an email: section with smtp_url and from",
    normalize=normalize,
    person_hint="email:",
    dm_target=lambda ident: f"email:{ident}",
    canonical_target=lambda ident: ident.strip().lower(),
    target_forms=("email:<address>",),
)

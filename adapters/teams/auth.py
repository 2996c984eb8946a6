"""Inbound activities' JWTs, checked with the Teams SDK's `TokenValidator`: signed by a
key from Bot Framework's OpenID metadata, issued by Bot Framework, for this app id, not
expired, and carrying the `serviceurl` claim the activity itself names. Anything else is
refused (and counted by reason) before the body is read as an activity."""

from __future__ import annotations

import asyncio
import logging
import re
import warnings
from collections import Counter
from typing import Any

import jwt
from microsoft_teams.api.auth.cloud_environment import PUBLIC, CloudEnvironment

with warnings.catch_warnings():  # the SDK's app package announces a preview feature we do not use
    warnings.simplefilter("ignore")
    from microsoft_teams.apps.auth.token_validator import JwtValidationOptions, TokenValidator

from adapters.teams.settings import TeamsSettings

log = logging.getLogger("hitl_bridge.teams")


class Refused(Exception):
    """An inbound call the bot does not take; `reason` is the counted label."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def cloud_of(settings: TeamsSettings) -> CloudEnvironment:
    """The SDK's cloud environment with the section's endpoints."""
    from dataclasses import replace

    return replace(PUBLIC, login_endpoint=settings.login_endpoint, login_tenant=settings.login_tenant,
                   bot_scope=settings.bot_scope, openid_metadata_url=settings.openid_metadata_url,
                   token_issuer=settings.token_issuer)


def keys_url(settings: TeamsSettings) -> str:
    """Where the signing keys are: beside the OpenID metadata, as the SDK reads them."""
    return re.sub(r"/openidconfiguration$", "/keys", settings.openid_metadata_url)


class ActivityAuth:
    """Checks `Authorization: Bearer …` against the activity's `serviceUrl`."""

    def __init__(self, settings: TeamsSettings) -> None:
        self.settings = settings
        self.refused: Counter[str] = Counter()
        self._validator = TokenValidator(JwtValidationOptions(
            valid_issuers=[settings.token_issuer], valid_audiences=[settings.app_id],
            jwks_uri=keys_url(settings)))

    def refuse(self, reason: str) -> Refused:
        self.refused[reason] += 1
        return Refused(reason)

    async def verify(self, header: str | None, activity: dict[str, Any]) -> dict[str, Any]:
        """The token's claims, or `Refused` (missing, malformed, forged, expired, wrong
        audience or issuer, another service URL)."""
        if not header or not header.startswith("Bearer ") or len(header) > 10_000:
            raise self.refuse("no_token")
        token = header.removeprefix("Bearer ").strip()
        service_url = activity.get("serviceUrl")
        if not isinstance(service_url, str) or not service_url.startswith(("https://", "http://")):
            raise self.refuse("no_service_url")
        try:
            # The SDK's key client reads the keys with blocking I/O: fetch (or find cached) here,
            # off the event loop; the validation below then finds the key in its cache.
            await asyncio.to_thread(self._validator._jwks_client.get_signing_key_from_jwt, token)
            return await self._validator.validate_token(token, service_url=service_url)
        except jwt.ExpiredSignatureError:
            raise self.refuse("expired") from None
        except jwt.InvalidAudienceError:
            raise self.refuse("audience") from None
        except jwt.InvalidIssuerError:
            raise self.refuse("issuer") from None
        except jwt.PyJWKClientConnectionError:
            log.warning("teams: cannot read the signing keys at %s", keys_url(self.settings))
            raise self.refuse("keys_unreachable") from None
        except jwt.PyJWKClientError:  # a key id the metadata does not list
            raise self.refuse("invalid") from None
        except jwt.InvalidTokenError as exc:
            reason = "service_url" if "serviceurl" in str(exc).lower() or "service url" in str(exc).lower() \
                else "invalid"
            raise self.refuse(reason) from None

"""Bearer tokens for /v1: required whenever any are configured (and they must be before the
daemon listens beyond loopback)."""

from __future__ import annotations

import hmac

from fastapi import HTTPException, Request, status

from bridge.config import Settings


def token_name(settings: Settings, header: str | None) -> str | None:
    """The name of the configured token in an `Authorization: Bearer` header, else None.
    Every token is compared in constant time, with no early exit on a match."""
    if not header or not header.lower().startswith("bearer "):
        return None
    given = header[7:].strip().encode()
    found = None
    for name, token in settings.http.api_tokens.items():
        if hmac.compare_digest(given, token.token.encode()) and found is None:
            found = name
    return found


def token_ok(settings: Settings, header: str | None) -> bool:
    if not settings.http.api_tokens:
        return True
    return token_name(settings, header) is not None


async def require_api_token(request: Request) -> None:
    """FastAPI dependency guarding /v1 (adapters use it for their own /v1 routes too)."""
    settings: Settings = request.app.state.settings
    if not token_ok(settings, request.headers.get("authorization")):
        raise HTTPException(
            status_code=status.HTTP_401_UNAUTHORIZED,
            detail="missing or wrong bearer token (Authorization: Bearer <one of http.api_tokens>)",
            headers={"WWW-Authenticate": "Bearer"},
        )

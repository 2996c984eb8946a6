"""Bearer tokens for /v1: required whenever any are configured (and they must be before the
daemon listens beyond loopback)."""

from __future__ import annotations

import hmac

from fastapi import HTTPException, Request, status

from bridge.config import Settings


def token_ok(settings: Settings, header: str | None) -> bool:
    tokens = settings.http.api_tokens
    if not tokens:
        return True
    if not header or not header.lower().startswith("bearer "):
        return False
    given = header[7:].strip().encode()
    # compare against every token in constant time; no early exit on a match
    matches = [hmac.compare_digest(given, t.encode()) for t in tokens]
    return any(matches)


async def require_api_token(request: Request) -> None:
    """FastAPI dependency guarding /v1 (adapters use it for their own /v1 routes too)."""
    settings: Settings = request.app.state.settings
    if not token_ok(settings, request.headers.get("authorization")):
        raise HTTPException(
            status_code=status.HTTP_401_UNAUTHORIZED,
            detail="missing or wrong bearer token (Authorization: Bearer <one of http.api_tokens>)",
            headers={"WWW-Authenticate": "Bearer"},
        )

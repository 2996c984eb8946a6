"""The Teams app package: `manifest.json` (schema 1.17) with the bot in personal, team and
group-chat scopes, and the two icons Teams requires (192×192 colour, 32×32 outline), as a
zip to upload in Teams (Apps → Manage your apps → Upload an app) or the admin center."""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib
from typing import Any

SCHEMA = "https://developer.microsoft.com/en-us/json-schemas/teams/v1.17/MicrosoftTeams.schema.json"


def manifest(app_id: str, name: str, *, version: str = "1.0.0",
             developer_url: str = "https://example.com") -> dict[str, Any]:
    """The app manifest for the bot registered as `app_id`."""
    return {
        "$schema": SCHEMA, "manifestVersion": "1.17", "version": version, "id": app_id,
        "developer": {"name": name, "websiteUrl": developer_url, "privacyUrl": developer_url,
                      "termsOfUseUrl": developer_url},
        "name": {"short": name[:30], "full": f"{name}: approvals for AI agents"[:100]},
        "description": {"short": "Approve or answer what paused AI agents ask."[:80],
                        "full": ("Requests from AI agents appear as cards: approve, reject or answer them in "
                                 "the card; secrets are asked only in a dialog in a one-to-one chat.")},
        "icons": {"color": "color.png", "outline": "outline.png"},
        "accentColor": "#2F5597",
        "bots": [{"botId": app_id, "scopes": ["personal", "team", "groupChat"], "isNotificationOnly": False,
                  "supportsFiles": False}],
        "permissions": ["identity", "messageTeamMembers"],
        "validDomains": [],
    }


def png(size: int, rgba: tuple[int, int, int, int]) -> bytes:
    """A plain square PNG (the icons Teams requires)."""
    row = b"\x00" + bytes(rgba) * size
    raw = zlib.compress(row * size)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


def package(app_id: str, name: str) -> bytes:
    """The zip Teams installs."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", json.dumps(manifest(app_id, name), indent=2))
        archive.writestr("color.png", png(192, (47, 85, 151, 255)))
        archive.writestr("outline.png", png(32, (255, 255, 255, 255)))
    return buffer.getvalue()

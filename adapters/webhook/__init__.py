"""Generic HTTP intake + signed callbacks (type: webhook)."""

from adapters.webhook.source import WebhookSource, build_source

__all__ = ["WebhookSource", "build_source"]

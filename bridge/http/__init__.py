"""The bridge's one ASGI app: /v1 API, adapter routes (/slack/events, /telegram/webhook,
/inbox), health and metrics."""

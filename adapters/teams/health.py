"""How the Teams channel reports itself as `channel:teams`: a credential the token
endpoint or the Bot Connector refuses makes it `failing` (nobody can be reached on
Teams); unreachable or throttled past its retries, `degraded`; the next call that
succeeds, `ok` again."""

from __future__ import annotations

from bridge.health import Health, Status

COMPONENT = "channel:teams"
CREDENTIAL_FIX = ("put the app registration's client secret in teams.app_password (and its id in "
                  "teams.app_id, its tenant in teams.tenant_id for a single-tenant bot), then restart")


class TeamsHealth:
    def __init__(self) -> None:
        self.health: Health | None = None

    def attach(self, health: Health) -> None:
        self.health = health

    def observe(self, error: str | None) -> None:
        """After each call: None when it succeeded, else "refused", "unreachable" or "HTTP <n>"."""
        health = self.health
        if health is None:
            return
        current = health.current(COMPONENT)
        if error is None:
            if current is None or current.status is not Status.ok:
                health.ok(COMPONENT, "Bot Framework calls succeed")
        elif error == "refused":
            health.failing(COMPONENT, "Microsoft refused the bot's credential", CREDENTIAL_FIX)
        elif error == "unreachable":
            health.degraded(COMPONENT, "cannot reach Microsoft's token endpoint or the Bot Connector",
                            "check the network, a proxy, and teams.login_endpoint")
        else:
            health.degraded(COMPONENT, f"Bot Connector calls fail after retries ({error})",
                            "wait for Teams' throttling to pass; fewer targets per route post less")

"""How the Slack channel reports itself as `channel:slack` in the health registry.

A token Slack refuses — at start (`auth.test`) or on any later call — makes the channel
`failing` (the daemon is not ready: nobody can be reached on Slack) with Slack's error
and the fix; the next call that succeeds makes it `ok` again. Slack unreachable, or a
call that needs a scope the token lacks, makes it `degraded`.
"""

from __future__ import annotations

from bridge.health import Health, Status

COMPONENT = "channel:slack"
#: Slack's errors for a token it will not take (any method)
AUTH_ERRORS = frozenset({"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired",
                         "not_allowed_token_type", "org_login_required", "ekm_access_denied",
                         "team_access_not_granted"})
TOKEN_FIX = ("put the app's Bot User OAuth Token (xoxb-…, from the app's OAuth & Permissions page) in "
             "slack.bot_token and restart; an uninstalled or revoked app must be reinstalled first")
APP_TOKEN_FIX = ("put an app-level token (xapp-…, scope connections:write, from the app's Basic Information "
                 "page) in slack.app_token and restart")
SCOPE_FIX = "run `hitl-bridge doctor`: it names the missing scope; add it, reinstall the app, update slack.bot_token"


class SlackHealth:
    """Turns what Slack answered into the channel's health (after `attach`)."""

    def __init__(self) -> None:
        self.health: Health | None = None
        self._app_token_refused = False

    def attach(self, health: Health) -> None:
        self.health = health

    def connected(self, user: str, team: str) -> None:
        if self.health is not None:
            self.health.ok(COMPONENT, f"connected as @{user} in {team}")

    def unreachable(self, where: str, error: str) -> None:
        if self.health is not None:
            self.health.degraded(COMPONENT, f"cannot reach Slack at {where} ({error})",
                                 "check the network, a proxy, and slack.api_url")

    def app_token_refused(self, error: str) -> None:
        self._app_token_refused = True
        if self.health is not None:
            self.health.failing(COMPONENT, f"the app token was refused ({error}): Socket Mode is off, "
                                "clicks and replies do not arrive", APP_TOKEN_FIX)

    def observe(self, error: str | None, *, network: bool = False) -> None:
        """After each Slack call: `error` is Slack's error code (None: it succeeded)."""
        health = self.health
        if health is None:
            return
        if error is None:
            current = health.current(COMPONENT)
            if current is not None and current.status is not Status.ok and not self._app_token_refused:
                health.ok(COMPONENT, "Slack calls succeed again")
        elif network:
            self.unreachable("its API", error)
        elif error in AUTH_ERRORS:
            health.failing(COMPONENT, f"Slack refused the bot token ({error})", TOKEN_FIX)
        elif error == "missing_scope":
            health.degraded(COMPONENT, "a call needs a scope the bot token lacks (missing_scope)", SCOPE_FIX)

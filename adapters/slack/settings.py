"""The `slack:` section of the config (DESIGN §4), validated."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator


class SlackSettings(BaseModel):
    """Tokens are SecretStr: they never show up in a repr, a log line or an error."""

    model_config = ConfigDict(extra="forbid")

    bot_token: SecretStr
    signing_secret: SecretStr = SecretStr("")
    app_token: SecretStr = SecretStr("")  # set → Socket Mode instead of /slack/events
    api_url: str = "https://slack.com/api/"
    post_interval_s: float = Field(default=1.0, ge=0, le=60)  # chat.postMessage pace per channel
    request_timeout_s: float = Field(default=10.0, gt=0, le=120)
    max_attempts: int = Field(default=6, ge=1, le=50)  # per post, 429s not counted
    backoff_s: float = Field(default=0.5, ge=0, le=60)  # first retry delay after 5xx/timeout
    usergroup_cache_s: float = Field(default=300.0, ge=0)
    group_dm_limit: int = Field(default=50, ge=1, le=1000)  # most DMs a `slack:@group` target becomes
    max_body_bytes: int = Field(default=1_000_000, ge=10_000)
    ack_budget_s: float = Field(default=2.0, gt=0, le=2.5)  # Slack wants an ack within 3 s

    @field_validator("api_url")
    @classmethod
    def _ends_with_slash(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL such as https://slack.com/api/")
        return url if url.endswith("/") else url + "/"

    @field_validator("bot_token")
    @classmethod
    def _bot_token_shape(cls, token: SecretStr) -> SecretStr:
        if not token.get_secret_value().startswith("xoxb-"):
            raise ValueError("must be a bot token (xoxb-…)")
        return token

    @model_validator(mode="after")
    def _mode_has_its_secret(self) -> SlackSettings:
        app_token = self.app_token.get_secret_value()
        if app_token and not app_token.startswith("xapp-"):
            raise ValueError("app_token must be an app-level token (xapp-…) for Socket Mode")
        if not app_token and not self.signing_secret.get_secret_value():
            raise ValueError("Slack needs slack.signing_secret (env SLACK_SIGNING_SECRET) to check "
                             "/slack/events in HTTP mode, or slack.app_token (env SLACK_APP_TOKEN, xapp-…) for "
                             "Socket Mode")
        return self

    @property
    def socket_mode(self) -> bool:
        return bool(self.app_token.get_secret_value())

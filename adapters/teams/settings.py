"""The `teams:` section of the config, validated.

The endpoints default to Microsoft's public cloud; a sovereign cloud (or the tests' fake
Bot Framework on 127.0.0.1) sets them all.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator


def _http_url(url: str) -> str:
    if not url.startswith(("http://", "https://")):
        raise ValueError("must be an http(s) URL")
    return url.rstrip("/")


class TeamsSettings(BaseModel):
    """The bot's Azure registration. The password is a SecretStr: never in a repr or a log."""

    model_config = ConfigDict(extra="forbid")

    app_id: str = Field(min_length=1, max_length=100, description="the bot's Microsoft App ID (a GUID)")
    app_password: SecretStr = Field(description="a client secret of the app registration")
    tenant_id: str = Field(default="", max_length=100,
                           description="the Entra tenant of a single-tenant bot (empty: multi-tenant)")
    app_name: str = Field(default="hitl-bridge", min_length=1, max_length=30,
                          description="the app's short name in the manifest `hitl-bridge teams manifest` writes")
    login_endpoint: str = Field(default="https://login.microsoftonline.com",
                                description="where the bot's client-credentials token is asked for")
    login_tenant: str = Field(default="botframework.com",
                              description="the token tenant of a multi-tenant bot")
    bot_scope: str = "https://api.botframework.com/.default"
    openid_metadata_url: str = Field(
        default="https://login.botframework.com/v1/.well-known/openidconfiguration",
        description="Bot Framework's OpenID metadata; its signing keys are read beside it (`…/keys`)")
    token_issuer: str = Field(default="https://api.botframework.com",
                              description="the issuer inbound activities' tokens must carry")
    request_timeout_s: float = Field(default=10.0, gt=0, le=120)
    max_attempts: int = Field(default=6, ge=1, le=50, description="tries per Bot Connector call (429s included)")
    backoff_s: float = Field(default=0.5, ge=0, le=60, description="first retry delay after a 5xx or a timeout")
    max_retry_after_s: float = Field(default=60.0, ge=0, le=600,
                                     description="the longest Retry-After the bot waits before giving up")
    calls_per_s: float = Field(default=7.0, ge=0, le=1000,
                               description="Bot Connector calls a second per conversation (Teams allows a bot "
                                           "7; 0: unpaced)")
    max_body_bytes: int = Field(default=256_000, ge=10_000, description="the largest inbound activity taken")

    @field_validator("login_endpoint", "openid_metadata_url", "token_issuer")
    @classmethod
    def _urls(cls, url: str) -> str:
        return _http_url(url)

    @field_validator("app_password")
    @classmethod
    def _password_set(cls, password: SecretStr) -> SecretStr:
        if not password.get_secret_value():
            raise ValueError("must be a client secret of the app registration")
        return password

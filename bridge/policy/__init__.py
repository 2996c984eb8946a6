"""Decisions without a person (DESIGN §9): the config's rules (`policies:`) and the standing
approvals people grant (grants). The core asks here for a verdict before a request is
posted; channels only offer the grant choices (`grant_offers`) and pass the person's
choice with their answer (`BridgeAPI.answer(..., grant=)`)."""

from bridge.policy.choice import GrantChoice as GrantChoice
from bridge.policy.choice import GrantOffer as GrantOffer
from bridge.policy.choice import GrantScope as GrantScope
from bridge.policy.choice import grant_offers as grant_offers

"""The Python client, for code that imported it from here: it lives in the
`hitl-bridge-client` distribution (clients/python/), which the daemon depends on."""

from hitl_bridge_client import *  # noqa: F403
from hitl_bridge_client import __all__ as __all__

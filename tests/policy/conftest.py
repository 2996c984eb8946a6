"""Policy tests: the PostgreSQL fixtures of the store tests (a fresh schema each)."""

from tests.store.conftest import postgres_admin_url as postgres_admin_url
from tests.store.conftest import postgres_url as postgres_url

"""The client's version: the one place it is written (pyproject.toml reads it; the TypeScript
package and the daemon's pin are checked against it by tests/clients/test_packaging.py)."""

__version__ = "0.1.0"

"""`python -m bridge.cli` is `hitl-bridge`."""

from bridge.cli import main

main()

"""The record as evidence: verifying the events' hash chain, exporting it, signed receipts of
decisions and the decision insights (see docs/guides/audits.md)."""

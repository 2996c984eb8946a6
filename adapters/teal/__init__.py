"""Teal Agents (sk-agents) tool-call approvals: paused replies in, approve/reject out."""

"""Engine sources (Teal Agents, Mastra, agent-world): protocol-true fakes and tests."""

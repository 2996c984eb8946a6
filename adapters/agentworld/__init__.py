"""agent-world HITL prompts: single/multiple-select questions per world and chat."""

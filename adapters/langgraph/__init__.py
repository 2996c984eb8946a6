"""LangGraph source (type: langgraph): interrupted threads in, `command.resume` out."""

from adapters.langgraph.source import LangGraphConfig, LangGraphSource, build_source

__all__ = ["LangGraphConfig", "LangGraphSource", "build_source"]

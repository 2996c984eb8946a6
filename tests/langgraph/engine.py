"""The engine side of the tests: start graph runs on the real LangGraph server and read
back what they were resumed with."""

from __future__ import annotations

import uuid
from typing import Any

import httpx


class Engine:
    def __init__(self, url: str) -> None:
        self.http = httpx.AsyncClient(base_url=url, timeout=30)
        self.tag = uuid.uuid4().hex  # thread metadata that scopes one test's bridge to its threads

    async def start(self, graph: str, input: dict[str, Any] | None = None) -> str:
        """Create a thread, run `graph` until it interrupts, return the thread id."""
        reply = await self.http.post("/threads", json={"metadata": {"test": self.tag, "team": "ops"}})
        thread_id: str = reply.raise_for_status().json()["thread_id"]
        run = await self.http.post(f"/threads/{thread_id}/runs/wait",
                                   json={"assistant_id": graph, "input": input or {}})
        run.raise_for_status()
        return thread_id

    async def thread(self, thread_id: str) -> dict[str, Any]:
        reply = await self.http.get(f"/threads/{thread_id}")
        data: dict[str, Any] = reply.raise_for_status().json()
        return data

    async def answers_when_idle(self, thread_id: str) -> list[Any] | None:
        """The graph's recorded answers once the thread finished, else None."""
        data = await self.thread(thread_id)
        if data["status"] != "idle":
            return None
        answers: list[Any] = (data.get("values") or {}).get("answers", [])
        return answers

    async def interrupt_ids(self, thread_id: str) -> list[str]:
        data = await self.thread(thread_id)
        return [i["id"] for items in (data.get("interrupts") or {}).values() for i in items]

    async def resume_directly(self, thread_id: str, graph: str, value: Any) -> None:
        """Someone resumes the thread from LangGraph itself (Studio, another tool)."""
        reply = await self.http.post(f"/threads/{thread_id}/runs/wait",
                                     json={"assistant_id": graph, "command": {"resume": value}})
        reply.raise_for_status()

    async def delete(self, thread_id: str) -> None:
        (await self.http.delete(f"/threads/{thread_id}")).raise_for_status()

    async def aclose(self) -> None:
        await self.http.aclose()

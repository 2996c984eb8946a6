"""A2A tasks and their push notification configs kept in the bridge's store (its key/value
space), so a task outlives the daemon that took it and every replica sees it.

The SDK's request handler reads and writes tasks through `StoredTasks` (the `TaskStore` port)
and push configs through `StoredPushConfigs`; both are owner-scoped as the SDK's in-memory
stores are (the caller's user, `resolve_user_scope`). A task is kept `KEEP` after its last
change. A task whose executor is gone (the daemon restarted while people were asked) is
finished when its request closes (`A2aSource.deliver` → `finish`); `claim` makes sure only
one finisher — the running executor or a delivery — writes the outcome and pushes it.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from a2a.helpers.proto_helpers import new_text_message
from a2a.server.context import ServerCallContext
from a2a.server.owner_resolver import OwnerResolver, resolve_user_scope
from a2a.server.tasks import InMemoryTaskStore, PushNotificationConfigStore, TaskStore
from a2a.server.tasks.push_notification_config_store import normalize_push_notification_config
from a2a.types import (
    Artifact,
    ListTasksRequest,
    ListTasksResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
)
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.timestamp_pb2 import Timestamp

from adapters.a2a.mapping import answer_parts
from bridge.models import Request, utcnow
from bridge.store.concerns.kv import KVStore

TASKS = "a2a-tasks"
PUSH = "a2a-push"
OPEN = "a2a-open"  # one entry per task still to be finished: deleting it is the claim
KEEP = timedelta(days=30)


class TaskOfAnotherOwner(ValueError):
    """A save under an id another caller's task already has."""


class StoredTasks(TaskStore):
    """The SDK's task store on the bridge's key/value space (see the module docstring)."""

    def __init__(self, kv: KVStore, owner_resolver: OwnerResolver = resolve_user_scope) -> None:
        self.kv = kv
        self.owner_resolver = owner_resolver

    async def save(self, task: Task, context: ServerCallContext) -> None:
        owner = self.owner_resolver(context)
        found = await self.kv.kv_get(TASKS, task.id, now=utcnow())
        if found is not None and found.get("owner") != owner:
            raise TaskOfAnotherOwner(f"task {task.id} belongs to another caller")
        await self.kv.kv_put(TASKS, task.id, {"owner": owner, "task": MessageToDict(task)},
                             expires_at=utcnow() + KEEP)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        owner, task = await self.get_any(task_id)
        return task if task is not None and owner == self.owner_resolver(context) else None

    async def get_any(self, task_id: str) -> tuple[str | None, Task | None]:
        """(owner, task) whoever owns it: for finishing a task no caller is asking about."""
        found = await self.kv.kv_get(TASKS, task_id, now=utcnow())
        if found is None:
            return None, None
        return str(found.get("owner")), ParseDict(found["task"], Task(), ignore_unknown_fields=True)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """The caller's tasks, filtered and paged as the SDK's in-memory store does it."""
        owner = self.owner_resolver(context)
        mine = InMemoryTaskStore(owner_resolver=self.owner_resolver)
        for _key, value in await self.kv.kv_items(TASKS, now=utcnow()):
            if value.get("owner") == owner:
                await mine.save(ParseDict(value["task"], Task(), ignore_unknown_fields=True), context)
        return await mine.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        if await self.get(task_id, context) is not None:
            await self.kv.kv_delete(TASKS, task_id)

    async def save_as(self, owner: str, task: Task) -> None:
        """Save a task for `owner` with no caller's context (finishing after a restart)."""
        await self.kv.kv_put(TASKS, task.id, {"owner": owner, "task": MessageToDict(task)},
                             expires_at=utcnow() + KEEP)

    async def mark_open(self, task_id: str) -> None:
        """The task waits for people: someone must finish it (`claim`)."""
        await self.kv.kv_put(OPEN, task_id, {}, expires_at=utcnow() + KEEP)

    async def claim(self, task_id: str) -> bool:
        """True for the one finisher of the task (the running executor or a delivery)."""
        return await self.kv.kv_delete(OPEN, task_id)


class StoredPushConfigs(PushNotificationConfigStore):
    """The SDK's push notification config store on the bridge's key/value space: per task,
    the configs with their owners."""

    def __init__(self, kv: KVStore, owner_resolver: OwnerResolver = resolve_user_scope) -> None:
        self.kv = kv
        self.owner_resolver = owner_resolver

    async def _entries(self, task_id: str) -> list[dict[str, Any]]:
        found = await self.kv.kv_get(PUSH, task_id, now=utcnow())
        return list(found.get("configs", [])) if found is not None else []

    async def _write(self, task_id: str, entries: list[dict[str, Any]]) -> None:
        if entries:
            await self.kv.kv_put(PUSH, task_id, {"configs": entries}, expires_at=utcnow() + KEEP)
        else:
            await self.kv.kv_delete(PUSH, task_id)

    async def set_info(self, task_id: str, notification_config: TaskPushNotificationConfig,
                       context: ServerCallContext) -> TaskPushNotificationConfig:
        owner = self.owner_resolver(context)
        stored = normalize_push_notification_config(task_id, notification_config)
        entries = [e for e in await self._entries(task_id)
                   if not (e["owner"] == owner and e["config"].get("id") == stored.id)]
        entries.append({"owner": owner, "config": MessageToDict(stored)})
        await self._write(task_id, entries)
        result = TaskPushNotificationConfig()
        result.CopyFrom(stored)
        return result

    async def get_info(self, task_id: str, context: ServerCallContext) -> list[TaskPushNotificationConfig]:
        owner = self.owner_resolver(context)
        return [_config(e) for e in await self._entries(task_id) if e["owner"] == owner]

    async def get_info_for_dispatch(self, task_id: str) -> list[TaskPushNotificationConfig]:
        return [_config(e) for e in await self._entries(task_id)]

    async def delete_info(self, task_id: str, context: ServerCallContext, config_id: str | None = None) -> None:
        owner = self.owner_resolver(context)
        kept = [e for e in await self._entries(task_id)
                if e["owner"] != owner or (config_id is not None and e["config"].get("id") != config_id)]
        await self._write(task_id, kept)


def _config(entry: dict[str, Any]) -> TaskPushNotificationConfig:
    return ParseDict(entry["config"], TaskPushNotificationConfig(), ignore_unknown_fields=True)


def finished(task: Task, request: Request) -> Task:
    """`task` as its executor would have left it once `request` closed: `completed` with the
    answer as an artifact, `canceled`, or `failed` with why (the same as `PeopleExecutor`)."""
    done = Task()
    done.CopyFrom(task)
    now = Timestamp()
    now.FromDatetime(utcnow())
    if request.answer is not None:
        artifact = Artifact(artifact_id=uuid.uuid4().hex, name="answer", parts=answer_parts(request.answer))
        artifact.metadata.update({"request_id": request.id})
        done.artifacts.append(artifact)
        status = TaskStatus(state=TaskState.TASK_STATE_COMPLETED)
    elif request.state.value == "cancelled":
        status = TaskStatus(state=TaskState.TASK_STATE_CANCELED)
    else:
        status = TaskStatus(state=TaskState.TASK_STATE_FAILED, message=new_text_message(
            f"request {request.id} closed {request.state.value} with no answer",
            context_id=task.context_id, task_id=task.id))
    status.timestamp.CopyFrom(now)
    done.status.CopyFrom(status)
    return done


TERMINAL = frozenset({TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_FAILED,
                      TaskState.TASK_STATE_REJECTED})

"""`hitl-bridge`: serve, list, show, answer, cancel, redeliver, doctor, demo.

`answer`, `cancel` and `redeliver` go through the running daemon's HTTP API when it answers
(so chat messages update at once); otherwise they act on the store directly and the daemon
delivers when it next runs. `list` and `show` read the store.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from bridge.clock import SystemClock
from bridge.config import Settings, load_settings
from bridge.crypto import SecretBox
from bridge.errors import BridgeError, ConfigError
from bridge.http.views import event_view, outbox_view, post_view, request_view
from bridge.logs import configure_logging
from bridge.models import QuestionKind, RequestState, Responder
from bridge.registry import add_commands
from bridge.router import Router
from bridge.service import BridgeService
from bridge.store import Store, StoreError, open_store_from_url
from bridge.timing_view import vote_line

Command = Callable[[argparse.Namespace, Settings], Awaitable[int]]


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        sys.exit(2)
    if getattr(args, "without_config", False):  # `hitl-bridge mcp` runs in any project, whatever its config
        configure_logging("INFO", "text")
        sys.exit(asyncio.run(args.func(args, None)))
    try:
        settings = load_settings(getattr(args, "file", None) or args.config)
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        sys.exit(2)
    configure_logging(settings.log_level, settings.log_format)
    try:
        sys.exit(asyncio.run(args.func(args, settings)))
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        sys.exit(2)
    except StoreError as exc:  # one line, no traceback: a store that cannot be opened or used
        print(f"store error: {exc}" + (f" (fix: {exc.fix})" if exc.fix else ""), file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hitl-bridge", description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--config", "-c", help="YAML config file (default: $HITL_BRIDGE_CONFIG, "
                        "./hitl-bridge.yaml, else embedded defaults)")
    sub = parser.add_subparsers(dest="command")

    p = sub.add_parser("serve", help="run the daemon")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("list", help="list requests (newest first)")
    p.add_argument("--state", action="append", choices=[s.value for s in RequestState])
    p.add_argument("--source")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("show", help="show one request with its timeline")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("answer", help="answer a request (validated against its question)")
    p.add_argument("id")
    p.add_argument("value", help="the answer; JSON for multi_choice/form/edit (a,b also works for multi_choice)")
    p.add_argument("--question", "-q", help="question id (needed when there are several)")
    p.add_argument("--as", dest="who", default="cli", help="who is answering (audited)")
    p.add_argument("--reason")
    p.set_defaults(func=cmd_answer)

    p = sub.add_parser("cancel", help="cancel an open request")
    p.add_argument("id")
    p.add_argument("--reason", default="")
    p.set_defaults(func=cmd_cancel)

    p = sub.add_parser("redeliver", help="queue the write-back of an answer again")
    p.add_argument("id")
    p.set_defaults(func=cmd_redeliver)

    p = sub.add_parser("doctor", help="check config, tokens, scopes, chats, store, engines and the daemon")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("check-config", help="validate a config file (no network): exit 0, or 2 naming the key")
    p.add_argument("file", nargs="?", help="the file to check (default: the one serve would read)")
    p.set_defaults(func=cmd_check_config)

    try:
        from bridge.demo import add_demo_command  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        pass
    else:
        add_demo_command(sub)
    add_commands(sub)  # adapters' verbs: `hitl-bridge mcp`
    for verb in sub.choices.values():  # --config works after the verb too: `hitl-bridge serve -c FILE`
        if "--config" not in verb._option_string_actions:
            verb.add_argument("--config", "-c", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return parser


# serve --------------------------------------------------------------------------------
async def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from bridge.config import EMBEDDED
    from bridge.daemon import Daemon

    daemon = Daemon(settings, embedded=settings.origin == EMBEDDED)
    if settings.origin == EMBEDDED:  # a log line, not a print: JSON logs stay JSON
        logging.getLogger("hitl_bridge").info(
            "no config file, running on embedded defaults (store %s, web inbox at http://%s/inbox)",
            settings.store.url, settings.http.listen)
    await daemon.run_forever()
    return 0


# store access -------------------------------------------------------------------------
async def open_service(settings: Settings) -> BridgeService:
    store: Store = open_store_from_url(settings.store.url)
    await store.open()
    return BridgeService(store, Router(settings.routes, settings.default_route),
                         SecretBox(settings.secrets.key), SystemClock(), people=settings.directory)


def api_client(settings: Settings) -> httpx.AsyncClient:
    token = settings.http.first_token
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    host = settings.http.host
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    return httpx.AsyncClient(base_url=f"http://{host}:{settings.http.port}", headers=headers, timeout=10)


async def daemon_up(client: httpx.AsyncClient) -> bool:
    try:
        response = await client.get("/healthz", timeout=0.5)
    except httpx.HTTPError:
        return False
    return response.status_code == 200


# list / show --------------------------------------------------------------------------
async def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    service = await open_service(settings)
    try:
        states = [RequestState(s) for s in args.state] if args.state else None
        rows = await service.store.list_requests(states=states, source=args.source, limit=args.limit)
        dead = {item.request_id for item in await service.store.list_outbox(dead=True)}
    finally:
        await service.store.close()
    if args.json:
        print(json.dumps([request_view(r) for r in rows], indent=2))
        return 0
    if not rows:
        print("no requests")
        return 0
    print(f"{'ID':<22} {'STATE':<10} {'SOURCE':<10} {'ROUTE':<14} {'CREATED':<17} TITLE")
    for r in rows:
        mark = " [delivery dead-lettered]" if r.id in dead else ""
        print(f"{r.id:<22} {r.state.value:<10} {r.source[:10]:<10} {r.route[:14]:<14} "
              f"{r.created_at.strftime('%Y-%m-%d %H:%M'):<17} {r.title[:60]}{mark}")
    return 0


async def cmd_show(args: argparse.Namespace, settings: Settings) -> int:
    service = await open_service(settings)
    try:
        request = await service.store.get_request(args.id)
        if request is None:
            print(f"no request {args.id!r}", file=sys.stderr)
            return 1
        events = await service.store.list_events(args.id)
        posts = await service.store.list_posts(args.id)
        outbox = await service.store.list_outbox(request_id=args.id)
        votes = await service.store.list_votes(args.id)
    finally:
        await service.store.close()
    if args.json:
        view = request_view(request)
        view.update(events=[event_view(e) for e in events], posts=[post_view(p) for p in posts],
                    outbox=[outbox_view(o) for o in outbox])
        print(json.dumps(view, indent=2))
        return 0
    out = [
        f"{request.id}  [{request.state.value}]  {request.title}",
        f"  source     {request.source}" + (f" (external id {request.external_id})" if request.external_id else ""),
    ]
    for label, value in (("engine", request.engine), ("workspace", request.workspace), ("run", request.run_id),
                         ("agent", request.agent), ("tool", request.tool)):
        if value:
            out.append(f"  {label:<10} {value}")
    out.append(f"  route      {request.route} → {', '.join(request.targets) or '(no targets)'}")
    if request.responders:
        out.append(f"  responders {', '.join(request.responders)}")
    if request.deadline:
        out.append(f"  deadline   {request.deadline.isoformat()}")
    if request.escalation_level:
        out.append(f"  escalation level {request.escalation_level}")
    timers = [f"{label} {at.isoformat()}" for label, at in (("reminder", request.next_reminder_at),
              ("escalation", request.next_escalation_at)) if at is not None and request.is_open]
    if timers or request.reminders_sent:
        out.append(f"  timers     reminders sent {request.reminders_sent}" + "".join(f", next {t}" for t in timers))
    for q in request.questions:
        extra = f" options: {', '.join(q.options)}" if q.options else ""
        out.append(f"  question   [{q.id}] ({q.kind.value}) {q.prompt[:200]}{extra}")
    if votes:
        out.append("  votes      " + ", ".join(f"{v.name}: {v.value}" for v in votes))
        tally = vote_line(request, votes, service.route_of(request).quorum)
        if tally:
            out.append(f"             {tally}")
    if request.answer:
        a = request.answer
        out.append(f"  answer     {json.dumps(request.redacted_answer())} by {a.responder.display} "
                   f"via {a.via} at {a.answered_at.isoformat()}" + (f" — {a.reason}" if a.reason else ""))
    if request.error:
        out.append(f"  error      {request.error}")
    copies = Counter(p.target for p in posts)  # a target with several copies: a group's DMs
    for p in posts:
        status = "ok" if p.ok else f"FAILED: {p.error}"
        where = f" ({p.ref['channel']})" if copies[p.target] > 1 and p.ref.get("channel") else ""
        out.append(f"  copy       {p.channel} {p.target}{where}: {status}")
    for o in outbox:
        status = "dead-lettered" if o.dead else f"retrying, next at {o.due_at.isoformat()}"
        out.append(f"  delivery   {o.state}: attempts {o.attempts}, "
                   f"{status}" + (f", last error: {o.last_error}" if o.last_error else ""))
    out.append("  timeline")
    for e in events:
        detail = ", ".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in e.data.items()
                           if v not in (None, "", [], {}))
        out.append(f"    {e.at.strftime('%Y-%m-%d %H:%M:%S')}  {e.kind:<16} {e.actor}  {detail}"[:400])
    print("\n".join(out))
    return 0


# answer / cancel / redeliver --------------------------------------------------------------
def parse_value(kind: QuestionKind, text: str) -> Any:
    if kind in (QuestionKind.form, QuestionKind.edit, QuestionKind.multi_choice):
        try:
            return json.loads(text)
        except ValueError:
            return text  # validated below: multi_choice accepts "a,b"; others get a clear error
    return text


async def cmd_answer(args: argparse.Namespace, settings: Settings) -> int:
    service = await open_service(settings)
    try:
        request = await service.store.get_request(args.id)
        if request is None:
            print(f"no request {args.id!r}", file=sys.stderr)
            return 1
        if args.question is None and len(request.questions) > 1:
            ids = ", ".join(q.id for q in request.questions)
            print(f"this request has several questions ({ids}): pass --question ID", file=sys.stderr)
            return 2
        question = request.question(args.question) if args.question else request.questions[0]
        if question is None:
            print(f"no question {args.question!r}; questions: {[q.id for q in request.questions]}", file=sys.stderr)
            return 2
        values = {question.id: parse_value(question.kind, args.value)}
        try:
            service.validate(request, values)
        except BridgeError as exc:
            print(f"invalid answer: {exc}", file=sys.stderr)
            return 2
        async with api_client(settings) as client:
            if await daemon_up(client):
                response = await client.post(f"/v1/requests/{args.id}/answer",
                                             json={"values": values, "responder": args.who, "reason": args.reason})
                return report(response, "answered")
        try:
            updated = await service.answer(args.id, Responder(platform="cli", user_id=args.who, name=args.who),
                                           values, via="cli", reason=args.reason)
        except BridgeError as exc:
            print(str(exc), file=sys.stderr)
            return 1
        print(f"{updated.id} {updated.state.value} (daemon not running: it delivers when it starts)")
        return 0
    finally:
        await service.store.close()


async def _simple(args: argparse.Namespace, settings: Settings, verb: str,
                  direct: Callable[[BridgeService], Awaitable[Any]], body: dict[str, Any] | None) -> int:
    async with api_client(settings) as client:
        if await daemon_up(client):
            response = await client.post(f"/v1/requests/{args.id}/{verb}", json=body)
            return report(response, verb)
    service = await open_service(settings)
    try:
        updated = await direct(service)
    except BridgeError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    finally:
        await service.store.close()
    print(f"{updated.id} {updated.state.value} (daemon not running: it delivers when it starts)")
    return 0


async def cmd_cancel(args: argparse.Namespace, settings: Settings) -> int:
    return await _simple(args, settings, "cancel",
                         lambda s: s.cancel(args.id, actor="cli", reason=args.reason),
                         {"reason": args.reason, "actor": "cli"})


async def cmd_redeliver(args: argparse.Namespace, settings: Settings) -> int:
    return await _simple(args, settings, "redeliver", lambda s: s.redeliver(args.id, actor="cli"), None)


def report(response: httpx.Response, verb: str) -> int:
    try:
        data = response.json()
    except ValueError:
        data = {"detail": response.text}
    if response.status_code >= 400:
        print(f"{verb} refused ({response.status_code}): {data.get('detail')}", file=sys.stderr)
        return 1
    print(f"{data.get('id')} {data.get('state')}")
    return 0


# doctor / check-config ---------------------------------------------------------------------
async def cmd_doctor(args: argparse.Namespace, settings: Settings) -> int:
    from bridge.doctor import diagnose, exit_code, render_json, render_text

    findings = await diagnose(settings)
    print(render_json(findings) if args.json else render_text(findings))
    return exit_code(findings)


async def cmd_check_config(args: argparse.Namespace, settings: Settings) -> int:
    from bridge.preflight import check_config

    print(check_config(settings))  # raises ConfigError (exit 2) on the first mistake
    return 0

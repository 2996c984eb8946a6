/** The client of the daemon's HTTP API: ask and wait, approvals around a function, and the rest of the API. */

import {
  type Answer, approved, asked, confirm, type Question, type RequestFields, type RequestView, outcome, requestBody, shown,
} from "./answers.js";
import { BridgeError, StillOpen } from "./errors.js";
import { type Call, type ClientOptions, Endpoint, Lost, sleep } from "./transport.js";
import { type Outcome, streamEvents, WATCH_PATH, Waits } from "./watching.js";

const WAIT_S = 60; // one long poll (the API allows up to 120 s)
const CALL_TIMEOUT_MS = 30_000;

export interface AskOptions extends RequestFields {
  /** give up waiting after this long with StillOpen (the request stays open; `timeout_s` is the daemon's deadline) */
  maxWaitMs?: number;
}

export interface ApprovalOptions extends RequestFields {
  /** default: "Approve <name>?" */
  title?: string;
  /** the tool's name shown to people; default: the function's name */
  name?: string;
}

export interface ListOptions {
  state?: string | string[];
  source?: string;
  route?: string;
  limit?: number;
  offset?: number;
}

export interface AnswerOptions {
  /** for a request with one question */
  value?: unknown;
  /** by question id */
  values?: Record<string, unknown>;
  responder?: string;
  reason?: string;
  /** with an approval: a standing approval — "session", "span:3600", "always", or
   * `{ scope: "always", pattern: "Bash(npm test:*)" }` */
  grant?: string | { scope: string; pattern?: string };
}

/** The same answer to many requests (`answerBatch`): each item goes through the ordinary answer path. */
export interface BatchOptions {
  value?: unknown;
  values?: Record<string, unknown>;
  responder?: string;
  reason?: string;
}

/** A delegation window (`away`): `until` and `starts` are ISO 8601 with a UTC offset. */
export interface AwayOptions {
  until: string;
  starts?: string;
  /** who is away: with a token that acts for others, a person of `people:`; else the caller */
  person?: string;
}

/** `reply[key]`, or a BridgeError saying what the reply lacked (a proxy's page, another API). */
function part<T>(reply: unknown, key: string): T {
  if (typeof reply !== "object" || reply === null || Array.isArray(reply) || !(key in reply)) {
    throw new BridgeError(`the bridge's reply has no "${key}": ${JSON.stringify(reply)?.slice(0, 200)}`);
  }
  return (reply as Record<string, T>)[key]!;
}

const path = (requestId: string, action = "") =>
  `/v1/requests/${encodeURIComponent(requestId)}${action ? `/${action}` : ""}`;

/**
 * The daemon's HTTP API. `baseUrl` and `token` default to HITL_BRIDGE_URL and HITL_BRIDGE_TOKEN
 * (then http://127.0.0.1:8787, no token). While the daemon does not answer (a restart), calls are
 * retried for `unavailableAfterMs`, then throw BridgeUnavailable.
 */
export class Client {
  readonly endpoint: Endpoint;

  constructor(options: ClientOptions = {}) {
    this.endpoint = new Endpoint(options);
  }

  get baseUrl(): string {
    return this.endpoint.baseUrl;
  }

  /** Ask and wait for the answer. No `questions`: one Approve/Reject. */
  async ask(title: string, questions?: Question[], options: AskOptions = {}): Promise<Answer> {
    const { maxWaitMs, ...fields } = options;
    return this.wait(await this.create(asked(title, questions, fields)), { maxWaitMs });
  }

  /** Wrap a function: each call first asks for approval (showing its arguments) and runs only
   * when approved; a rejection throws `Rejected`. */
  requireApproval<A extends unknown[], R>(fn: (...args: A) => R | Promise<R>, options: ApprovalOptions = {}):
  (...args: A) => Promise<R> {
    const { title, name = fn.name || "call", context, ...fields } = options;
    return async (...args: A) => {
      const body = requestBody(title ?? `Approve ${name}?`, [confirm("approve", `Allow this call to ${name}?`)], {
        tool: name, ...fields, context: { function: name, arguments: args.map(shown), ...context },
      });
      approved(await this.wait(await this.create(body)));
      return (await fn(...args)) as R;
    };
  }

  /** Create a request from a native or structured body; its id. */
  async create(body: Record<string, unknown>): Promise<string> {
    const view = await this.endpoint.send({ method: "POST", path: "/v1/requests", body, resend: "external_id" in body,
      creates: true });
    return String(part(view, "id"));
  }

  /** Long-poll until the request closes (NoAnswer when it closed without an answer). */
  async wait(requestId: string, { maxWaitMs }: { maxWaitMs?: number | undefined } = {}): Promise<Answer> {
    const deadline = maxWaitMs === undefined ? undefined : Date.now() + maxWaitMs;
    for (;;) {
      const left = deadline === undefined ? WAIT_S : Math.max(0, Math.min(WAIT_S, (deadline - Date.now()) / 1000));
      const view = await this.get(requestId, { waitS: left });
      part(view, "state");
      const found = outcome(view);
      if (found) return found;
      if (deadline !== undefined && Date.now() >= deadline) throw new StillOpen(view.id, view.state);
    }
  }

  /**
   * Wait on many requests over one connection (a watch stream): yields each one's outcome as it
   * closes, in the order they close: its `Answer`, or (yielded, not thrown, so the others keep
   * coming) `NoAnswer` when it closed without one, `Missing` for an id that is no request the token
   * may wait on, `StillOpen` for each still open when `maxWaitMs` passes. A dropped stream (a daemon
   * restart) is opened again with the ids still open; nothing is lost. At most 10,000 ids.
   */
  async *waitMany(ids: Iterable<string>, { maxWaitMs }: { maxWaitMs?: number | undefined } = {}):
  AsyncGenerator<Outcome> {
    const waits = new Waits(ids, maxWaitMs);
    let lostSince: number | undefined;
    let attempt = 0;
    while (waits.open.size) {
      const body = waits.body();
      if (!body) {
        yield* waits.ranOut();
        return;
      }
      const call: Call = { method: "POST", path: WATCH_PATH, body };
      const abort = new AbortController();
      try {
        const response = await this.endpoint.open(call, abort);
        lostSince = undefined;
        attempt = 0;
        for await (const [kind, data] of streamEvents(response, abort)) {
          yield* waits.event(kind, data);
        }
        if (!waits.ended && waits.open.size) throw new Lost("the watch stream was cut");
      } catch (error) {
        if (!(error instanceof Lost)) throw error;
        lostSince ??= Date.now();
        await sleep(this.endpoint.retryDelay(call, error, lostSince, attempt++));
      } finally {
        abort.abort(); // the connection, when the caller stops early too
      }
    }
  }

  /** The request as the API shows it (with posts and outbox); `waitS` long-polls. */
  async get(requestId: string, { waitS = 0 }: { waitS?: number } = {}): Promise<RequestView> {
    return this.endpoint.send({
      method: "GET", path: path(requestId), query: waitS > 0 ? { wait: waitS } : {},
      timeoutMs: waitS * 1000 + CALL_TIMEOUT_MS,
    });
  }

  /** Requests, newest first. */
  async list({ state, source, route, limit = 100, offset = 0 }: ListOptions = {}): Promise<RequestView[]> {
    const query: Record<string, string | number | string[]> = { limit, offset };
    if (state) query["state"] = Array.isArray(state) ? state : [state];
    if (source) query["source"] = source;
    if (route) query["route"] = route;
    return part(await this.endpoint.send({ method: "GET", path: "/v1/requests", query }), "requests");
  }

  /** Answer as an operator: `value` for one question, `values` by question id. */
  async answer(requestId: string, { value, values, responder, reason, grant }: AnswerOptions): Promise<RequestView> {
    const body: Record<string, unknown> = values !== undefined ? { values } : { value };
    if (responder !== undefined) body["responder"] = responder;
    if (reason !== undefined) body["reason"] = reason;
    if (grant !== undefined) body["grant"] = grant;
    return this.endpoint.send({ method: "POST", path: path(requestId, "answer"), body, resend: false });
  }

  /** The same answer to each of `ids`: `{ batch, counts, results }`, a result per item
   * (answered, voted, or refused with the reason), in the order given. */
  async answerBatch(ids: string[], { value, values, responder, reason }: BatchOptions): Promise<Record<string, unknown>> {
    const body: Record<string, unknown> = { ids, ...(values !== undefined ? { values } : { value }) };
    if (responder !== undefined) body["responder"] = responder;
    if (reason !== undefined) body["reason"] = reason;
    return this.endpoint.send({ method: "POST", path: "/v1/answers:batch", body, resend: false });
  }

  /** The open yes/no requests that look alike, grouped: `{ key, label, ids, titles }` each. */
  async batches({ source, route }: { source?: string; route?: string } = {}): Promise<Record<string, unknown>[]> {
    const query: Record<string, string> = {};
    if (source) query["source"] = source;
    if (route) query["route"] = route;
    return part(await this.endpoint.send({ method: "GET", path: "/v1/batches", query }), "batches");
  }

  /** Away until `until`, `delegate` (a person of `people:`) standing in. */
  async away(delegate: string, { until, starts, person }: AwayOptions): Promise<Record<string, unknown>> {
    const body: Record<string, unknown> = { delegate, until };
    if (starts !== undefined) body["starts"] = starts;
    if (person !== undefined) body["person"] = person;
    return this.endpoint.send({ method: "POST", path: "/v1/away", body, resend: true });
  }

  /** The delegation windows not yet ended. */
  async awayList(): Promise<Record<string, unknown>[]> {
    return part(await this.endpoint.send({ method: "GET", path: "/v1/away" }), "away");
  }

  /** End the caller's (or, acting for others, `person`'s) window now: `{ person, ended }`. */
  async back(person?: string): Promise<Record<string, unknown>> {
    return this.endpoint.send({ method: "DELETE", path: "/v1/away", query: person ? { person } : {}, resend: true });
  }

  /** The standing approvals in force (`all`: also the revoked and expired ones). */
  async grants({ all = false }: { all?: boolean } = {}): Promise<Record<string, unknown>[]> {
    return part(await this.endpoint.send({ method: "GET", path: "/v1/grants", query: all ? { all: "true" } : {} }),
      "grants");
  }

  async grant(grantId: string): Promise<Record<string, unknown>> {
    return this.endpoint.send({ method: "GET", path: `/v1/grants/${encodeURIComponent(grantId)}` });
  }

  /** Revoke a standing approval: the next call it would have allowed is asked again. */
  async revokeGrant(grantId: string): Promise<Record<string, unknown>> {
    return this.endpoint.send({ method: "DELETE", path: `/v1/grants/${encodeURIComponent(grantId)}`, resend: true });
  }

  async cancel(requestId: string, { reason = "", actor }: { reason?: string; actor?: string } = {}): Promise<RequestView> {
    return this.endpoint.send({
      method: "POST", path: path(requestId, "cancel"), body: actor ? { reason, actor } : { reason }, resend: false,
    });
  }

  async redeliver(requestId: string): Promise<RequestView> {
    return this.endpoint.send({ method: "POST", path: path(requestId, "redeliver"), resend: false });
  }

  /** The request's audit trail. */
  async events(requestId: string): Promise<Record<string, unknown>[]> {
    return part(await this.endpoint.send({ method: "GET", path: path(requestId, "events") }), "events");
  }

  /** The signed receipt of a closed request's outcome (check it with `verifyReceipt`). */
  async receipt(requestId: string): Promise<string> {
    return part(await this.endpoint.send({ method: "GET", path: path(requestId, "receipt") }), "receipt");
  }

  /** Each source and what it cannot show right now. */
  async sources(): Promise<Record<string, unknown>[]> {
    return part(await this.endpoint.send({ method: "GET", path: "/v1/sources" }), "sources");
  }
}

/** `new Client().ask(...)`: ask the daemon at HITL_BRIDGE_URL and wait for the answer. */
export function ask(title: string, questions?: Question[], options?: AskOptions & ClientOptions): Promise<Answer> {
  const { baseUrl, token, unavailableAfterMs, fetch, ...asking } = options ?? {};
  return new Client({ baseUrl, token, unavailableAfterMs, fetch }).ask(title, questions, asking);
}

/** Put a person in front of a function: each call asks the daemon at HITL_BRIDGE_URL first and
 * runs only when approved; a rejection throws `Rejected`. */
export function requireApproval<A extends unknown[], R>(fn: (...args: A) => R | Promise<R>,
  options?: ApprovalOptions & ClientOptions): (...args: A) => Promise<R> {
  const { baseUrl, token, unavailableAfterMs, fetch, ...approval } = options ?? {};
  return (...args: A) => new Client({ baseUrl, token, unavailableAfterMs, fetch }).requireApproval(fn, approval)(...args);
}

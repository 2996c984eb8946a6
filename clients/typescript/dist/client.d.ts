/** The client of the daemon's HTTP API: ask and wait, approvals around a function, and the rest of the API. */
import { type Answer, type Question, type RequestFields, type RequestView } from "./answers.js";
import { type ClientOptions, Endpoint } from "./transport.js";
import { type Outcome } from "./watching.js";
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
    grant?: string | {
        scope: string;
        pattern?: string;
    };
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
/**
 * The daemon's HTTP API. `baseUrl` and `token` default to HITL_BRIDGE_URL and HITL_BRIDGE_TOKEN
 * (then http://127.0.0.1:8787, no token). While the daemon does not answer (a restart), calls are
 * retried for `unavailableAfterMs`, then throw BridgeUnavailable.
 */
export declare class Client {
    readonly endpoint: Endpoint;
    constructor(options?: ClientOptions);
    get baseUrl(): string;
    /** Ask and wait for the answer. No `questions`: one Approve/Reject. */
    ask(title: string, questions?: Question[], options?: AskOptions): Promise<Answer>;
    /** Wrap a function: each call first asks for approval (showing its arguments) and runs only
     * when approved; a rejection throws `Rejected`. */
    requireApproval<A extends unknown[], R>(fn: (...args: A) => R | Promise<R>, options?: ApprovalOptions): (...args: A) => Promise<R>;
    /** Create a request from a native or structured body; its id. */
    create(body: Record<string, unknown>): Promise<string>;
    /** Long-poll until the request closes (NoAnswer when it closed without an answer). */
    wait(requestId: string, { maxWaitMs }?: {
        maxWaitMs?: number | undefined;
    }): Promise<Answer>;
    /**
     * Wait on many requests over one connection (a watch stream): yields each one's outcome as it
     * closes, in the order they close: its `Answer`, or (yielded, not thrown, so the others keep
     * coming) `NoAnswer` when it closed without one, `Missing` for an id that is no request the token
     * may wait on, `StillOpen` for each still open when `maxWaitMs` passes. A dropped stream (a daemon
     * restart) is opened again with the ids still open; nothing is lost. At most 10,000 ids.
     */
    waitMany(ids: Iterable<string>, { maxWaitMs }?: {
        maxWaitMs?: number | undefined;
    }): AsyncGenerator<Outcome>;
    /** The request as the API shows it (with posts and outbox); `waitS` long-polls. */
    get(requestId: string, { waitS }?: {
        waitS?: number;
    }): Promise<RequestView>;
    /** Requests, newest first. */
    list({ state, source, route, limit, offset }?: ListOptions): Promise<RequestView[]>;
    /** Answer as an operator: `value` for one question, `values` by question id. */
    answer(requestId: string, { value, values, responder, reason, grant }: AnswerOptions): Promise<RequestView>;
    /** The same answer to each of `ids`: `{ batch, counts, results }`, a result per item
     * (answered, voted, or refused with the reason), in the order given. */
    answerBatch(ids: string[], { value, values, responder, reason }: BatchOptions): Promise<Record<string, unknown>>;
    /** The open yes/no requests that look alike, grouped: `{ key, label, ids, titles }` each. */
    batches({ source, route }?: {
        source?: string;
        route?: string;
    }): Promise<Record<string, unknown>[]>;
    /** Away until `until`, `delegate` (a person of `people:`) standing in. */
    away(delegate: string, { until, starts, person }: AwayOptions): Promise<Record<string, unknown>>;
    /** The delegation windows not yet ended. */
    awayList(): Promise<Record<string, unknown>[]>;
    /** End the caller's (or, acting for others, `person`'s) window now: `{ person, ended }`. */
    back(person?: string): Promise<Record<string, unknown>>;
    /** The standing approvals in force (`all`: also the revoked and expired ones). */
    grants({ all }?: {
        all?: boolean;
    }): Promise<Record<string, unknown>[]>;
    grant(grantId: string): Promise<Record<string, unknown>>;
    /** Revoke a standing approval: the next call it would have allowed is asked again. */
    revokeGrant(grantId: string): Promise<Record<string, unknown>>;
    cancel(requestId: string, { reason, actor }?: {
        reason?: string;
        actor?: string;
    }): Promise<RequestView>;
    redeliver(requestId: string): Promise<RequestView>;
    /** The request's audit trail. */
    events(requestId: string): Promise<Record<string, unknown>[]>;
    /** The signed receipt of a closed request's outcome (check it with `verifyReceipt`). */
    receipt(requestId: string): Promise<string>;
    /** Each source and what it cannot show right now. */
    sources(): Promise<Record<string, unknown>[]>;
}
/** `new Client().ask(...)`: ask the daemon at HITL_BRIDGE_URL and wait for the answer. */
export declare function ask(title: string, questions?: Question[], options?: AskOptions & ClientOptions): Promise<Answer>;
/** Put a person in front of a function: each call asks the daemon at HITL_BRIDGE_URL first and
 * runs only when approved; a rejection throws `Rejected`. */
export declare function requireApproval<A extends unknown[], R>(fn: (...args: A) => R | Promise<R>, options?: ApprovalOptions & ClientOptions): (...args: A) => Promise<R>;

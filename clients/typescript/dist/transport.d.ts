/** Where the daemon is, how its replies are read, and how long a restart is ridden out. */
export declare const URL_ENV = "HITL_BRIDGE_URL";
export declare const TOKEN_ENV = "HITL_BRIDGE_TOKEN";
export declare const DEFAULT_URL = "http://127.0.0.1:8787";
export declare const VERSION = "0.1.0";
export interface ClientOptions {
    /** default: HITL_BRIDGE_URL, then http://127.0.0.1:8787 */
    baseUrl?: string;
    /** default: HITL_BRIDGE_TOKEN */
    token?: string;
    /** how long calls are retried while the daemon does not answer (a restart); default 300 s */
    unavailableAfterMs?: number;
    /** creating a request gives up sooner: no daemon at all is said at once; default 5 s */
    createUnavailableAfterMs?: number;
    /** another fetch (a proxy agent, tests); default: the global one */
    fetch?: typeof fetch;
}
export interface Call {
    method: "GET" | "POST" | "DELETE";
    path: string;
    query?: Record<string, string | number | string[]>;
    body?: unknown;
    /** safe to send again when the connection broke after sending (reads; creates with an external_id) */
    resend?: boolean;
    timeoutMs?: number;
    /** creates a request: when the daemon does not answer, fail fast (nothing waits on it yet) */
    creates?: boolean;
}
/** The daemon did not answer: a network failure or a timeout (`cause`), or a proxy in front of a
 * restarting daemon (502/503/504, `restarting`). Tried again for `unavailableAfterMs`. */
export declare class Lost extends Error {
    readonly restarting: boolean;
    constructor(message: string, restarting?: boolean, options?: ErrorOptions);
}
export declare const sleep: (ms: number) => Promise<unknown>;
export declare class Endpoint {
    #private;
    readonly baseUrl: string;
    readonly unavailableAfterMs: number;
    readonly createUnavailableAfterMs: number;
    constructor(options?: ClientOptions);
    /** Send `call`, riding out a daemon restart for `unavailableAfterMs`; its JSON result. */
    send<T>(call: Call): Promise<T>;
    /** How long to wait before sending `call` again after `error` (the daemon did not answer);
     * throws BridgeUnavailable when it must not be sent again, or `unavailableAfterMs` has passed. */
    retryDelay(call: Call, error: Lost, started: number, attempt: number): number;
    /** Send `call` once and return its response with the body unread (a stream); a refusal throws
     * as in `send`, a daemon that does not answer throws `Lost`. `abort` ends it (and its body); it is
     * aborted when no response has begun within the call's timeout. */
    open(call: Call, abort: AbortController): Promise<Response>;
    /** Never show the token. */
    toJSON(): object;
}

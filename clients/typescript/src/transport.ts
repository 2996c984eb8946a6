/** Where the daemon is, how its replies are read, and how long a restart is ridden out. */

import { BridgeError, BridgeUnavailable, refusal } from "./errors.js";

export const URL_ENV = "HITL_BRIDGE_URL";
export const TOKEN_ENV = "HITL_BRIDGE_TOKEN";
export const DEFAULT_URL = "http://127.0.0.1:8787";
export const VERSION = "0.1.0";
const RETRY_MS = [200, 500, 1000, 2000, 5000]; // backoff while the daemon does not answer
const CALL_TIMEOUT_MS = 30_000;
/** a request that could not even be created fails fast: nothing waits on it yet */
const CREATE_GIVE_UP_MS = 5_000;

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

function env(name: string): string | undefined {
  const process = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return process?.env?.[name] || undefined;
}

/** The daemon did not answer: a network failure or a timeout (`cause`), or a proxy in front of a
 * restarting daemon (502/503/504, `restarting`). Tried again for `unavailableAfterMs`. */
export class Lost extends Error {
  constructor(message: string, readonly restarting = false, options?: ErrorOptions) {
    super(message, options);
  }
}

const NOT_SENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT"]);

/** True when the call never reached the daemon (refused connection, a proxy's 502/503): safe to send again. */
function neverSent(error: Lost): boolean {
  const code = (error.cause as { cause?: { code?: string } } | undefined)?.cause?.code;
  return error.restarting || (code !== undefined && NOT_SENT.has(code));
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class Endpoint {
  readonly baseUrl: string;
  readonly unavailableAfterMs: number;
  readonly createUnavailableAfterMs: number;
  readonly #headers: Record<string, string>;
  readonly #fetch: typeof fetch;

  constructor(options: ClientOptions = {}) {
    const url = (options.baseUrl || env(URL_ENV) || DEFAULT_URL).replace(/\/+$/, "");
    if (!/^https?:\/\//.test(url)) throw new TypeError(`the bridge URL must start with http:// or https://, got ${url}`);
    this.baseUrl = url;
    this.unavailableAfterMs = options.unavailableAfterMs ?? 300_000;
    this.createUnavailableAfterMs = options.createUnavailableAfterMs ?? CREATE_GIVE_UP_MS;
    const token = options.token ?? env(TOKEN_ENV);
    this.#headers = { "content-type": "application/json", "user-agent": `hitl-bridge-client-js/${VERSION}` };
    if (token) this.#headers["authorization"] = `Bearer ${token}`;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** Send `call`, riding out a daemon restart for `unavailableAfterMs`; its JSON result. */
  async send<T>(call: Call): Promise<T> {
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      try {
        return (await this.#once(call)) as T;
      } catch (error) {
        if (!(error instanceof Lost)) throw error;
        await sleep(this.retryDelay(call, error, started, attempt));
      }
    }
  }

  /** How long to wait before sending `call` again after `error` (the daemon did not answer);
   * throws BridgeUnavailable when it must not be sent again, or `unavailableAfterMs` has passed. */
  retryDelay(call: Call, error: Lost, started: number, attempt: number): number {
    const giveUpMs = call.creates ? Math.min(this.unavailableAfterMs, this.createUnavailableAfterMs)
      : this.unavailableAfterMs;
    const where = `${call.method} ${this.baseUrl}${call.path}`;
    if (call.resend === false && !neverSent(error)) {
      throw new BridgeUnavailable(`${where}: the connection broke after sending; it may have been applied: look with get()`,
        { cause: error });
    }
    const elapsed = Date.now() - started;
    if (elapsed > giveUpMs) {
      if (call.creates) {
        throw new BridgeUnavailable(`could not create the request: no hitl-bridge daemon answers at ${this.baseUrl} `
          + `(${describe(error)}); start one (hitl-bridge serve) or set ${URL_ENV} to where it runs`, { cause: error });
      }
      throw new BridgeUnavailable(`${where}: no answer for ${Math.round(this.unavailableAfterMs / 1000)} s: ${describe(error)}`,
        { cause: error });
    }
    if (attempt === 0) { // say so at once, not after minutes of silence
      console.warn(`hitl-bridge-client: no hitl-bridge daemon answers at ${this.baseUrl} yet (${describe(error)}); `
        + `trying again for ${Math.round(giveUpMs / 1000)} s (is it running? ${URL_ENV} says where it is)`);
    }
    return Math.min(RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)]!, Math.max(50, giveUpMs - elapsed + 50));
  }

  /** Send `call` once and return its response with the body unread (a stream); a refusal throws
   * as in `send`, a daemon that does not answer throws `Lost`. `abort` ends it (and its body); it is
   * aborted when no response has begun within the call's timeout. */
  async open(call: Call, abort: AbortController): Promise<Response> {
    let response: Response;
    const late = setTimeout(() => abort.abort(), call.timeoutMs ?? CALL_TIMEOUT_MS);
    try {
      response = await this.#fetch(new URL(this.baseUrl + call.path), {
        method: call.method, headers: this.#headers, body: JSON.stringify(call.body), signal: abort.signal,
      });
    } catch (error) {
      throw new Lost(String(error), false, { cause: error });
    } finally {
      clearTimeout(late);
    }
    if (response.status === 200) return response;
    const text = await response.text().catch(() => "");
    if ([502, 503, 504].includes(response.status)) throw new Lost(`HTTP ${response.status}`, true);
    let detail = text.slice(0, 500);
    try {
      const parsed = (JSON.parse(text) as { detail?: unknown })?.detail;
      if (parsed !== undefined) detail = typeof parsed === "string" ? parsed : JSON.stringify(parsed);
    } catch { /* not JSON: the text itself */ }
    if (response.status >= 400) throw refusal(response.status, detail);
    throw new BridgeError(`the bridge answered HTTP ${response.status} to ${call.path}: ${detail.slice(0, 200)}`);
  }

  async #once(call: Call): Promise<unknown> {
    const url = new URL(this.baseUrl + call.path);
    for (const [key, value] of Object.entries(call.query ?? {})) {
      for (const one of Array.isArray(value) ? value : [value]) url.searchParams.append(key, String(one));
    }
    const body = call.body === undefined ? undefined : JSON.stringify(call.body);
    let response: Response;
    let text: string;
    try {
      response = await this.#fetch(url, {
        method: call.method, headers: this.#headers, body, signal: AbortSignal.timeout(call.timeoutMs ?? CALL_TIMEOUT_MS),
      });
      text = await response.text();
    } catch (error) { // fetch rejects only for the network (or the timeout): the daemon did not answer
      throw new Lost(String(error), false, { cause: error });
    }
    if ([502, 503, 504].includes(response.status)) throw new Lost(`HTTP ${response.status}`, true);
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      if (response.status >= 400) throw refusal(response.status, text.slice(0, 500));
      throw new BridgeError(`the bridge answered HTTP ${response.status} without JSON: ${text.slice(0, 200)}`);
    }
    if (response.status >= 400) {
      const detail = (data as { detail?: unknown })?.detail;
      throw refusal(response.status, typeof detail === "string" ? detail : JSON.stringify(detail ?? data));
    }
    return data;
  }

  /** Never show the token. */
  toJSON(): object {
    return { baseUrl: this.baseUrl, unavailableAfterMs: this.unavailableAfterMs,
      createUnavailableAfterMs: this.createUnavailableAfterMs };
  }
}

function describe(error: Lost): string {
  const cause = (error.cause as { cause?: { code?: string; message?: string } } | undefined)?.cause;
  return cause?.code ?? cause?.message ?? error.message;
}

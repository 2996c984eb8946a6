/**
 * `waitMany`'s bookkeeping: the ids still open, the body of the next watch stream
 * (`POST /v1/requests:watch`), its server-sent events read from the response, and what each event
 * means for the caller. A stream that drops (the daemon restarting) is opened again with the ids
 * still open: the daemon reports at once those that closed meanwhile, so nothing is lost.
 */

import { type Answer, outcome, type RequestView } from "./answers.js";
import { BridgeError, Missing, NoAnswer, StillOpen } from "./errors.js";
import { Lost } from "./transport.js";

export const WATCH_PATH = "/v1/requests:watch";
/** the daemon's limit per stream */
export const MAX_IDS = 10_000;
/** one stream's wait at most (the daemon's limit), seconds */
const STREAM_WAIT_S = 3600;
/** the daemon sends a keep-alive every 15 s: this long without a byte, the connection is dead */
export const READ_TIMEOUT_MS = 45_000;

/** What `waitMany` yields for each id: its Answer, or why there is none (yielded, not thrown, so the
 * others keep coming): NoAnswer (closed without one), Missing (no such request, or not the token's to
 * wait on), StillOpen (`maxWaitMs` ran out first). */
export type Outcome = Answer | NoAnswer | Missing | StillOpen;

export type StreamEvent = [kind: string, data: unknown];

/** The ids `waitMany` still waits on, in the order given, and until when. */
export class Waits {
  readonly open: Set<string>;
  readonly deadline: number | undefined;
  /** the stream being read sent its `end` (else it was cut, or the daemon is shutting down) */
  ended = false;

  constructor(ids: Iterable<string>, maxWaitMs?: number) {
    this.open = new Set(Array.from(ids, String));
    if (this.open.size > MAX_IDS) throw new BridgeError(`waitMany takes at most ${MAX_IDS} ids (got ${this.open.size})`);
    this.deadline = maxWaitMs === undefined ? undefined : Date.now() + maxWaitMs;
  }

  /** The next stream's body; undefined when `maxWaitMs` has run out. */
  body(): { ids: string[]; wait: number } | undefined {
    this.ended = false;
    const left = this.deadline === undefined ? STREAM_WAIT_S : Math.min(STREAM_WAIT_S, (this.deadline - Date.now()) / 1000);
    if (left <= 0) return undefined;
    return { ids: [...this.open], wait: Math.max(Math.round(left * 1000) / 1000, 0.001) };
  }

  /** `maxWaitMs` passed: a StillOpen for each id still open, and no more waiting. */
  ranOut(): Outcome[] {
    const left = [...this.open];
    this.open.clear();
    return left.map((id) => new StillOpen(id, "open"));
  }

  /** What the caller gets from one event. */
  event(kind: string, data: unknown): Outcome[] {
    const view = (typeof data === "object" && data !== null ? data : {}) as Record<string, unknown>;
    const id = String(view["id"]);
    if ((kind === "closed" || kind === "missing") && this.open.has(id)) {
      this.open.delete(id);
      if (kind === "missing") return [new Missing(id, String(view["detail"] ?? `no request '${id}'`))];
      try {
        const found = outcome(view as unknown as RequestView);
        return found ? [found] : [];
      } catch (error) {
        if (error instanceof NoAnswer) return [error];
        throw error;
      }
    }
    if (kind === "end") {
      this.ended = view["reason"] !== "shutdown"; // shutting down counts as cut: wait for the daemon to be back
      if (this.open.size && this.deadline !== undefined && Date.now() >= this.deadline) return this.ranOut();
    }
    return [];
  }
}

/** The events of a watch stream's response; `Lost` when the connection breaks or stays silent
 * longer than READ_TIMEOUT_MS (`abort` is aborted then). */
export async function* streamEvents(response: Response, abort: AbortController): AsyncGenerator<StreamEvent> {
  if (!response.body) throw new Lost("the watch stream has no body");
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  let kind = "message";
  let data: string[] = [];
  let silent: ReturnType<typeof setTimeout> | undefined;
  try {
    for (;;) {
      silent = setTimeout(() => abort.abort(), READ_TIMEOUT_MS);
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        throw new Lost(String(error), false, { cause: error });
      } finally {
        clearTimeout(silent);
      }
      if (chunk.done) return;
      buffered += decoder.decode(chunk.value, { stream: true });
      let newline: number;
      while ((newline = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, newline).replace(/\r$/, "");
        buffered = buffered.slice(newline + 1);
        if (line.startsWith(":")) continue; // a keep-alive
        if (line === "") {
          if (data.length) {
            const text = data.join("\n");
            let parsed: unknown;
            try {
              parsed = JSON.parse(text);
            } catch {
              throw new BridgeError(`the bridge's watch stream sent an event that is not JSON: ${text.slice(0, 200)}`);
            }
            yield [kind, parsed];
          }
          kind = "message";
          data = [];
          continue;
        }
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") kind = value;
        else if (field === "data") data.push(value);
      }
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * `waitMany`'s bookkeeping: the ids still open, the body of the next watch stream
 * (`POST /v1/requests:watch`), its server-sent events read from the response, and what each event
 * means for the caller. A stream that drops (the daemon restarting) is opened again with the ids
 * still open: the daemon reports at once those that closed meanwhile, so nothing is lost.
 */
import { type Answer } from "./answers.js";
import { Missing, NoAnswer, StillOpen } from "./errors.js";
export declare const WATCH_PATH = "/v1/requests:watch";
/** the daemon's limit per stream */
export declare const MAX_IDS = 10000;
/** the daemon sends a keep-alive every 15 s: this long without a byte, the connection is dead */
export declare const READ_TIMEOUT_MS = 45000;
/** What `waitMany` yields for each id: its Answer, or why there is none (yielded, not thrown, so the
 * others keep coming): NoAnswer (closed without one), Missing (no such request, or not the token's to
 * wait on), StillOpen (`maxWaitMs` ran out first). */
export type Outcome = Answer | NoAnswer | Missing | StillOpen;
export type StreamEvent = [kind: string, data: unknown];
/** The ids `waitMany` still waits on, in the order given, and until when. */
export declare class Waits {
    readonly open: Set<string>;
    readonly deadline: number | undefined;
    /** the stream being read sent its `end` (else it was cut, or the daemon is shutting down) */
    ended: boolean;
    constructor(ids: Iterable<string>, maxWaitMs?: number);
    /** The next stream's body; undefined when `maxWaitMs` has run out. */
    body(): {
        ids: string[];
        wait: number;
    } | undefined;
    /** `maxWaitMs` passed: a StillOpen for each id still open, and no more waiting. */
    ranOut(): Outcome[];
    /** What the caller gets from one event. */
    event(kind: string, data: unknown): Outcome[];
}
/** The events of a watch stream's response; `Lost` when the connection breaks or stays silent
 * longer than READ_TIMEOUT_MS (`abort` is aborted then). */
export declare function streamEvents(response: Response, abort: AbortController): AsyncGenerator<StreamEvent>;

/** What can go wrong when asking, each with a name that says it. */
import type { Answer } from "./answers.js";
/** Base of the errors this client throws. */
export declare class BridgeError extends Error {
    name: string;
}
/** The daemon did not answer for longer than the client's `unavailableAfterMs`. */
export declare class BridgeUnavailable extends BridgeError {
    name: string;
}
/** The daemon refused the call: `status` (HTTP) and `detail` (the API's reason). */
export declare class BridgeRefused extends BridgeError {
    readonly status: number;
    readonly detail: string;
    name: string;
    constructor(status: number, detail: string);
}
/** 401/403: no token, or a wrong one (`HITL_BRIDGE_TOKEN`). */
export declare class Unauthorized extends BridgeRefused {
    name: string;
}
/** 404: no such request. */
export declare class NotFound extends BridgeRefused {
    name: string;
}
/** `waitMany`: `requestId` is no request, or not one the token may wait on (the bridge says the same of both). */
export declare class Missing extends NotFound {
    readonly requestId: string;
    name: string;
    constructor(requestId: string, detail: string);
}
/** 409: the request is closed already (answered by someone else, cancelled...). */
export declare class Conflict extends BridgeRefused {
    name: string;
}
/** 400/413/422: the body does not fit the API (the detail names the field). */
export declare class InvalidRequest extends BridgeRefused {
    name: string;
}
export declare function refusal(status: number, detail: string): BridgeRefused;
/** The request closed without an answer: `state` is expired, cancelled or failed. */
export declare class NoAnswer extends BridgeError {
    readonly requestId: string;
    readonly state: string;
    readonly error: string | null;
    name: string;
    constructor(requestId: string, state: string, error: string | null);
}
/** `wait({ maxWaitMs })` (or `waitMany`) ran out while the request was still open (it stays open). */
export declare class StillOpen extends BridgeError {
    readonly requestId: string;
    readonly state: string;
    name: string;
    constructor(requestId: string, state: string);
}
/** An approval was rejected (by a person, or by the route's `on_timeout` answer). */
export declare class Rejected extends BridgeError {
    readonly answer: Answer;
    name: string;
    readonly reason: string | null;
    constructor(answer: Answer);
}

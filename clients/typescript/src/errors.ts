/** What can go wrong when asking, each with a name that says it. */

import type { Answer } from "./answers.js";

/** Base of the errors this client throws. */
export class BridgeError extends Error {
  override name = "BridgeError";
}

/** The daemon did not answer for longer than the client's `unavailableAfterMs`. */
export class BridgeUnavailable extends BridgeError {
  override name = "BridgeUnavailable";
}

/** The daemon refused the call: `status` (HTTP) and `detail` (the API's reason). */
export class BridgeRefused extends BridgeError {
  override name = "BridgeRefused";
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(`the bridge refused the call (${status}): ${detail}`);
  }
}

/** 401/403: no token, or a wrong one (`HITL_BRIDGE_TOKEN`). */
export class Unauthorized extends BridgeRefused {
  override name = "Unauthorized";
}

/** 404: no such request. */
export class NotFound extends BridgeRefused {
  override name = "NotFound";
}

/** `waitMany`: `requestId` is no request, or not one the token may wait on (the bridge says the same of both). */
export class Missing extends NotFound {
  override name = "Missing";
  constructor(readonly requestId: string, detail: string) {
    super(404, detail);
  }
}

/** 409: the request is closed already (answered by someone else, cancelled...). */
export class Conflict extends BridgeRefused {
  override name = "Conflict";
}

/** 400/413/422: the body does not fit the API (the detail names the field). */
export class InvalidRequest extends BridgeRefused {
  override name = "InvalidRequest";
}

const REFUSALS: Record<number, typeof BridgeRefused> = {
  400: InvalidRequest, 401: Unauthorized, 403: Unauthorized, 404: NotFound, 409: Conflict,
  413: InvalidRequest, 422: InvalidRequest,
};

export function refusal(status: number, detail: string): BridgeRefused {
  return new (REFUSALS[status] ?? BridgeRefused)(status, detail);
}

/** The request closed without an answer: `state` is expired, cancelled or failed. */
export class NoAnswer extends BridgeError {
  override name = "NoAnswer";
  constructor(
    readonly requestId: string,
    readonly state: string,
    readonly error: string | null,
  ) {
    super(`request ${requestId} ${state} without an answer${error ? `: ${error}` : ""}`);
  }
}

/** `wait({ maxWaitMs })` (or `waitMany`) ran out while the request was still open (it stays open). */
export class StillOpen extends BridgeError {
  override name = "StillOpen";
  constructor(
    readonly requestId: string,
    readonly state: string,
  ) {
    super(`request ${requestId} is still ${state}`);
  }
}

/** An approval was rejected (by a person, or by the route's `on_timeout` answer). */
export class Rejected extends BridgeError {
  override name = "Rejected";
  readonly reason: string | null;
  constructor(readonly answer: Answer) {
    super(`rejected by ${answer.responderName}${answer.reason ? `: ${answer.reason}` : ""}`);
    this.reason = answer.reason;
  }
}

/** What can go wrong when asking, each with a name that says it. */
/** Base of the errors this client throws. */
export class BridgeError extends Error {
    name = "BridgeError";
}
/** The daemon did not answer for longer than the client's `unavailableAfterMs`. */
export class BridgeUnavailable extends BridgeError {
    name = "BridgeUnavailable";
}
/** The daemon refused the call: `status` (HTTP) and `detail` (the API's reason). */
export class BridgeRefused extends BridgeError {
    status;
    detail;
    name = "BridgeRefused";
    constructor(status, detail) {
        super(`the bridge refused the call (${status}): ${detail}`);
        this.status = status;
        this.detail = detail;
    }
}
/** 401/403: no token, or a wrong one (`HITL_BRIDGE_TOKEN`). */
export class Unauthorized extends BridgeRefused {
    name = "Unauthorized";
}
/** 404: no such request. */
export class NotFound extends BridgeRefused {
    name = "NotFound";
}
/** `waitMany`: `requestId` is no request, or not one the token may wait on (the bridge says the same of both). */
export class Missing extends NotFound {
    requestId;
    name = "Missing";
    constructor(requestId, detail) {
        super(404, detail);
        this.requestId = requestId;
    }
}
/** 409: the request is closed already (answered by someone else, cancelled...). */
export class Conflict extends BridgeRefused {
    name = "Conflict";
}
/** 400/413/422: the body does not fit the API (the detail names the field). */
export class InvalidRequest extends BridgeRefused {
    name = "InvalidRequest";
}
const REFUSALS = {
    400: InvalidRequest, 401: Unauthorized, 403: Unauthorized, 404: NotFound, 409: Conflict,
    413: InvalidRequest, 422: InvalidRequest,
};
export function refusal(status, detail) {
    return new (REFUSALS[status] ?? BridgeRefused)(status, detail);
}
/** The request closed without an answer: `state` is expired, cancelled or failed. */
export class NoAnswer extends BridgeError {
    requestId;
    state;
    error;
    name = "NoAnswer";
    constructor(requestId, state, error) {
        super(`request ${requestId} ${state} without an answer${error ? `: ${error}` : ""}`);
        this.requestId = requestId;
        this.state = state;
        this.error = error;
    }
}
/** `wait({ maxWaitMs })` (or `waitMany`) ran out while the request was still open (it stays open). */
export class StillOpen extends BridgeError {
    requestId;
    state;
    name = "StillOpen";
    constructor(requestId, state) {
        super(`request ${requestId} is still ${state}`);
        this.requestId = requestId;
        this.state = state;
    }
}
/** An approval was rejected (by a person, or by the route's `on_timeout` answer). */
export class Rejected extends BridgeError {
    answer;
    name = "Rejected";
    reason;
    constructor(answer) {
        super(`rejected by ${answer.responderName}${answer.reason ? `: ${answer.reason}` : ""}`);
        this.answer = answer;
        this.reason = answer.reason;
    }
}

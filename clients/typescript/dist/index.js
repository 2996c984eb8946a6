/**
 * Ask people from agent code, through a running hitl-bridge daemon.
 *
 * ```ts
 * import { ask, choice } from "hitl-bridge-client";
 * if ((await ask("Deploy api v2.3 to production?")).value === "yes") { ... }   // Approve / Reject
 * ```
 *
 * The daemon is found at HITL_BRIDGE_URL (default http://127.0.0.1:8787) with the bearer token
 * HITL_BRIDGE_TOKEN; `new Client({ baseUrl, token })` takes both and offers the rest of the API.
 */
export { Answer, approved, choice, confirm, outcome, requestBody, text, } from "./answers.js";
export { ask, Client, requireApproval, } from "./client.js";
export { BridgeError, BridgeRefused, BridgeUnavailable, Conflict, InvalidRequest, Missing, NoAnswer, NotFound, Rejected, StillOpen, Unauthorized, } from "./errors.js";
export { BadReceipt, fetchJwks, JWKS_PATH, verifyReceipt, } from "./receipts.js";
export { signatureHeaders, standardSecret, verifyCallback } from "./signing.js";
export { DEFAULT_URL, TOKEN_ENV, URL_ENV, VERSION } from "./transport.js";

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
export { Answer, type AnswerView, approved, choice, confirm, outcome, type Question, type QuestionKind, requestBody, type RequestFields, type RequestView, text, } from "./answers.js";
export { type AnswerOptions, type ApprovalOptions, ask, type AskOptions, type AwayOptions, type BatchOptions, Client, type ListOptions, requireApproval, } from "./client.js";
export { BridgeError, BridgeRefused, BridgeUnavailable, Conflict, InvalidRequest, Missing, NoAnswer, NotFound, Rejected, StillOpen, Unauthorized, } from "./errors.js";
export { BadReceipt, fetchJwks, type Jwk, type Jwks, JWKS_PATH, type ReceiptClaims, verifyReceipt, } from "./receipts.js";
export { type HeadersLike, signatureHeaders, standardSecret, verifyCallback, type VerifyOptions } from "./signing.js";
export { type ClientOptions, DEFAULT_URL, TOKEN_ENV, URL_ENV, VERSION } from "./transport.js";
export { type Outcome } from "./watching.js";

/** The request bodies this client sends and the answers it reads back (no I/O). */
import { BridgeError, NoAnswer, Rejected } from "./errors.js";
const OPEN_STATES = new Set(["pending", "posted"]);
/** What people answered: `values` by question id (a secret shows as "[secret]"). */
export class Answer {
    requestId;
    values;
    responder;
    via;
    reason;
    answeredAt;
    constructor(requestId, values, responder, 
    /** slack, telegram, web, email, api, cli, or timeout (the route's on_timeout answer) */
    via, reason, answeredAt) {
        this.requestId = requestId;
        this.values = values;
        this.responder = responder;
        this.via = via;
        this.reason = reason;
        this.answeredAt = answeredAt;
    }
    /** The value when the request had one question (`(await ask("Deploy?")).value === "yes"`). */
    get value() {
        const values = Object.values(this.values);
        if (values.length !== 1) {
            throw new BridgeError(`this answer has ${values.length} values: read answer.values[questionId]`);
        }
        return values[0];
    }
    get responderName() {
        return String(this.responder["name"] || this.responder["user_id"] || this.via);
    }
}
export function confirm(id, prompt) {
    return { id, kind: "confirm", prompt };
}
export function choice(id, prompt, options) {
    return { id, kind: "choice", prompt, options };
}
export function text(id, prompt, { required = true } = {}) {
    return { id, kind: "text", prompt, required };
}
/** The native intake body. No questions: one Approve/Reject (`ok`). `external_id` is
 * generated when missing, so a retried POST never asks twice. */
export function requestBody(title, questions, fields = {}) {
    const body = {};
    for (const [key, value] of Object.entries(fields)) {
        if (value !== undefined && value !== null)
            body[key] = value;
    }
    body["title"] = title;
    body["questions"] = questions?.length ? questions : [confirm("ok", title)];
    body["external_id"] ??= `client-${crypto.randomUUID()}`;
    return body;
}
/** The body for `ask`, which returns the answer itself: never for a secret. */
export function asked(title, questions, fields) {
    if (questions?.some((q) => q.kind === "secret")) {
        throw new BridgeError("the API never shows a secret answer: create the request with a callback and read the secret there");
    }
    return requestBody(title, questions, fields);
}
/** The answer of a request as the API shows it; null while open; NoAnswer when it closed without one. */
export function outcome(view) {
    if (OPEN_STATES.has(view.state))
        return null;
    const answer = view.answer;
    if (!answer || typeof answer !== "object")
        throw new NoAnswer(view.id, view.state, view.error ?? null);
    return new Answer(view.id, { ...answer.values }, { ...answer.responder }, String(answer.via), answer.reason ?? null, String(answer.answered_at));
}
/** The answer when it approves; `Rejected` otherwise. */
export function approved(answer, questionId = "approve") {
    if (answer.values[questionId] !== "yes")
        throw new Rejected(answer);
    return answer;
}
/** A value as a request's context can hold it: itself when JSON can, else its String(). */
export function shown(value) {
    try {
        return JSON.stringify(value) === undefined ? String(value) : value;
    }
    catch {
        return String(value).slice(0, 2000);
    }
}

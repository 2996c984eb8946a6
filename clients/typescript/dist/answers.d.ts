/** The request bodies this client sends and the answers it reads back (no I/O). */
export type QuestionKind = "confirm" | "choice" | "multi_choice" | "text" | "secret" | "form" | "edit";
export interface Question {
    id: string;
    kind: QuestionKind;
    prompt: string;
    options?: string[];
    required?: boolean;
    [field: string]: unknown;
}
/** Any field of the native request body besides title and questions. */
export interface RequestFields {
    external_id?: string;
    description?: string;
    engine?: string;
    workspace?: string;
    run_id?: string;
    agent?: string;
    tool?: string;
    context?: Record<string, unknown>;
    labels?: Record<string, string>;
    responders?: string[];
    timeout_s?: number;
    callback?: {
        url: string;
        secret: string;
        signing?: "hitl" | "standard";
    };
    [field: string]: unknown;
}
/** A request as the API shows it (`GET /v1/requests/{id}`). */
export interface RequestView {
    id: string;
    state: string;
    title: string;
    external_id: string | null;
    questions: Question[];
    answer: AnswerView | null;
    error: string | null;
    [field: string]: unknown;
}
export interface AnswerView {
    values: Record<string, unknown>;
    responder: Record<string, unknown>;
    via: string;
    reason: string | null;
    answered_at: string;
}
/** What people answered: `values` by question id (a secret shows as "[secret]"). */
export declare class Answer {
    readonly requestId: string;
    readonly values: Record<string, unknown>;
    readonly responder: Record<string, unknown>;
    /** slack, telegram, web, email, api, cli, or timeout (the route's on_timeout answer) */
    readonly via: string;
    readonly reason: string | null;
    readonly answeredAt: string;
    constructor(requestId: string, values: Record<string, unknown>, responder: Record<string, unknown>, 
    /** slack, telegram, web, email, api, cli, or timeout (the route's on_timeout answer) */
    via: string, reason: string | null, answeredAt: string);
    /** The value when the request had one question (`(await ask("Deploy?")).value === "yes"`). */
    get value(): unknown;
    get responderName(): string;
}
export declare function confirm(id: string, prompt: string): Question;
export declare function choice(id: string, prompt: string, options: string[]): Question;
export declare function text(id: string, prompt: string, { required }?: {
    required?: boolean;
}): Question;
/** The native intake body. No questions: one Approve/Reject (`ok`). `external_id` is
 * generated when missing, so a retried POST never asks twice. */
export declare function requestBody(title: string, questions?: Question[], fields?: RequestFields): Record<string, unknown>;
/** The body for `ask`, which returns the answer itself: never for a secret. */
export declare function asked(title: string, questions: Question[] | undefined, fields: RequestFields): Record<string, unknown>;
/** The answer of a request as the API shows it; null while open; NoAnswer when it closed without one. */
export declare function outcome(view: RequestView): Answer | null;
/** The answer when it approves; `Rejected` otherwise. */
export declare function approved(answer: Answer, questionId?: string): Answer;
/** A value as a request's context can hold it: itself when JSON can, else its String(). */
export declare function shown(value: unknown): unknown;

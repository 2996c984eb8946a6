/** The request bodies this client sends and the answers it reads back (no I/O). */

import { BridgeError, NoAnswer, Rejected } from "./errors.js";

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
  callback?: { url: string; secret: string; signing?: "hitl" | "standard" };
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

const OPEN_STATES = new Set(["pending", "posted"]);

/** What people answered: `values` by question id (a secret shows as "[secret]"). */
export class Answer {
  constructor(
    readonly requestId: string,
    readonly values: Record<string, unknown>,
    readonly responder: Record<string, unknown>,
    /** slack, telegram, web, email, api, cli, or timeout (the route's on_timeout answer) */
    readonly via: string,
    readonly reason: string | null,
    readonly answeredAt: string,
  ) {}

  /** The value when the request had one question (`(await ask("Deploy?")).value === "yes"`). */
  get value(): unknown {
    const values = Object.values(this.values);
    if (values.length !== 1) {
      throw new BridgeError(`this answer has ${values.length} values: read answer.values[questionId]`);
    }
    return values[0];
  }

  get responderName(): string {
    return String(this.responder["name"] || this.responder["user_id"] || this.via);
  }
}

export function confirm(id: string, prompt: string): Question {
  return { id, kind: "confirm", prompt };
}

export function choice(id: string, prompt: string, options: string[]): Question {
  return { id, kind: "choice", prompt, options };
}

export function text(id: string, prompt: string, { required = true }: { required?: boolean } = {}): Question {
  return { id, kind: "text", prompt, required };
}

/** The native intake body. No questions: one Approve/Reject (`ok`). `external_id` is
 * generated when missing, so a retried POST never asks twice. */
export function requestBody(title: string, questions?: Question[], fields: RequestFields = {}): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (value !== undefined && value !== null) body[key] = value;
  }
  body["title"] = title;
  body["questions"] = questions?.length ? questions : [confirm("ok", title)];
  body["external_id"] ??= `client-${crypto.randomUUID()}`;
  return body;
}

/** The body for `ask`, which returns the answer itself: never for a secret. */
export function asked(title: string, questions: Question[] | undefined, fields: RequestFields): Record<string, unknown> {
  if (questions?.some((q) => q.kind === "secret")) {
    throw new BridgeError(
      "the API never shows a secret answer: create the request with a callback and read the secret there",
    );
  }
  return requestBody(title, questions, fields);
}

/** The answer of a request as the API shows it; null while open; NoAnswer when it closed without one. */
export function outcome(view: RequestView): Answer | null {
  if (OPEN_STATES.has(view.state)) return null;
  const answer = view.answer;
  if (!answer || typeof answer !== "object") throw new NoAnswer(view.id, view.state, view.error ?? null);
  return new Answer(view.id, { ...answer.values }, { ...answer.responder }, String(answer.via),
    answer.reason ?? null, String(answer.answered_at));
}

/** The answer when it approves; `Rejected` otherwise. */
export function approved(answer: Answer, questionId = "approve"): Answer {
  if (answer.values[questionId] !== "yes") throw new Rejected(answer);
  return answer;
}

/** A value as a request's context can hold it: itself when JSON can, else its String(). */
export function shown(value: unknown): unknown {
  try {
    return JSON.stringify(value) === undefined ? String(value) : value;
  } catch {
    return String(value).slice(0, 2000);
  }
}

// Errors as the server sends them: application/problem+json (RFC 9457).

import type { components } from "./schema.js";

/** An error body (application/problem+json, RFC 9457). */
export type Problem = components["schemas"]["Problem"];

/**
 * ProblemError is a refused request as a thrown error: the server's
 * problem+json body, or one made from the status when the body was not.
 */
export class ProblemError extends Error {
  readonly status: number;
  readonly problem: Problem;
  constructor(problem: Problem) {
    super(`${problem.status} ${problem.title}: ${problem.detail}`);
    this.name = "ProblemError";
    this.status = problem.status;
    this.problem = problem;
  }
}

/**
 * problemOf reads a refused response's body as a Problem. A body that is
 * not problem+json (a proxy's error page) becomes a Problem whose detail
 * is the start of that body.
 */
export async function problemOf(response: Response): Promise<Problem> {
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: the text itself is what the server said.
  }
  return problemIn(body, response);
}

/**
 * problemIn is the Problem of a refused response whose body was already
 * read: openapi-fetch's `error`, the parsed JSON or else the text. A body
 * that is not a Problem becomes one made from the status, its detail the
 * start of that body.
 */
export function problemIn(body: unknown, response: Response): Problem {
  if (isProblem(body)) {
    return body;
  }
  const text = typeof body === "string" ? body : body === undefined ? "" : JSON.stringify(body);
  return {
    type: "about:blank",
    title: response.statusText || `HTTP ${response.status}`,
    status: response.status,
    detail: text.slice(0, 200) || `${response.url} answered ${response.status} with no body`,
  };
}

/** isProblem tells whether a value has a Problem's required fields. */
export function isProblem(value: unknown): value is Problem {
  if (typeof value !== "object" || value === null) {
    return false;
  }
  const p = value as Record<string, unknown>;
  return (
    typeof p.type === "string" &&
    typeof p.title === "string" &&
    typeof p.status === "number" &&
    typeof p.detail === "string"
  );
}

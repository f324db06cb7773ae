// Durations in the API's JSON: a state's `duration`, each step's and tool
// call's, and the limits' `timeout`, `model_call_timeout` and
// `tool_call_timeout` are strings of seconds with an "s" suffix, e.g.
// "1.5s", "0.000352s", "30s" (the Duration schema).

import type { components } from "./schema.js";

/** A duration as the API writes it: seconds with an "s" suffix, e.g. "1.5s". */
export type Duration = components["schemas"]["Duration"];

/**
 * durationSeconds reads an API duration as a number of seconds: "1.5s"
 * is 1.5. A number is read as nanoseconds, the form servers before the
 * Duration schema wrote. A missing value is 0; anything else is an error
 * naming it, rather than a silent NaN.
 */
export function durationSeconds(d: Duration | number | null | undefined): number {
  if (d === undefined || d === null) {
    return 0;
  }
  if (typeof d === "number") {
    return d / 1e9;
  }
  // The wire form only: digits, an optional fraction, "s". parseFloat
  // alone would read "1m30s" as 1.
  if (!/^-?\d+(\.\d+)?s$/.test(d)) {
    throw new Error(`not an agentloop duration: ${JSON.stringify(d)} (want seconds such as "1.5s")`);
  }
  return Number.parseFloat(d);
}

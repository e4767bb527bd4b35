import { HookboxError } from "../errors.js";
import type { EgressRule } from "./egress.js";
import type { EgressHeader } from "./grants.js";

/*
 * The values of an egress entry's host-side headers, read from the host's environment (docs/capabilities.md).
 * A value is sent as Fetch would send it: the whitespace around it (a file's trailing newline, a CRLF .env's
 * carriage return) is dropped. What is left must be a header value, checked here, before anything sees it:
 * an unusable value is refused at start and at each request, by the entry and the variable's name, never
 * by its value. What is redacted from answers is what was sent.
 */

const SURROUNDING_WHITESPACE = /^[\t\n\r ]+|[\t\n\r ]+$/g;
const LINE_BREAK = /[\r\n]/;
/** A header value's characters: tab, visible ASCII and space, and Latin-1's upper half (obs-text). */
const HEADER_CHARACTERS = /^[\t\x20-\x7e\x80-\xff]*$/;

export type HeaderValue = { sent: string; secret: string } | { problem: string };

/** The header as sent (`prefix` + the value without the whitespace around both) and the secret part of it, or why it cannot be sent. */
export function headerValue(header: EgressHeader, raw: string): HeaderValue {
  const secret = raw.replace(SURROUNDING_WHITESPACE, "");
  if (secret === "") return { problem: "it is only whitespace" };
  const sent = ((header.prefix ?? "") + secret).replace(SURROUNDING_WHITESPACE, "");
  if (LINE_BREAK.test(sent)) return { problem: "it contains a line break" };
  if (!HEADER_CHARACTERS.test(sent))
    return { problem: "it contains a control character or one outside Latin-1, which a header cannot carry" };
  return { sent, secret };
}

function describe(rule: EgressRule, name: string, header: EgressHeader): string {
  return `the egress entry ${rule.source} adds header "${name}" from environment variable ${header.env}`;
}

/** At start: every header whose variable is set must be sendable (an unset one fails its requests instead). */
export function checkEgressSecrets(rules: EgressRule[], env: NodeJS.ProcessEnv, where: string): void {
  rules.forEach((rule, index) => {
    for (const [name, header] of rule.headers) {
      const raw = env[header.env];
      if (raw === undefined || raw === "") continue;
      const value = headerValue(header, raw);
      if ("problem" in value)
        throw new HookboxError(
          "CONFIG",
          `${where}[${index}]: ${describe(rule, name, header)}, whose value cannot be sent: ${value.problem}`,
          {
            field: `${where}[${index}].headers.${name}`,
            variable: header.env,
          },
        );
    }
  });
}

/** At a request: the values to send; each secret goes into `secrets` (for redaction) before anything is sent. */
export function secretHeaders(rule: EgressRule, env: NodeJS.ProcessEnv, secrets: string[]): [name: string, value: string][] {
  return rule.headers.map(([name, header]) => {
    const raw = env[header.env];
    if (raw === undefined || raw === "")
      throw new HookboxError("CAPABILITY_FAILED", `ctx.fetch: ${describe(rule, name, header)}, which is not set on the host`);
    const value = headerValue(header, raw);
    if ("problem" in value)
      throw new HookboxError(
        "CAPABILITY_FAILED",
        `ctx.fetch: ${describe(rule, name, header)}, whose value cannot be sent: ${value.problem}`,
      );
    secrets.push(value.secret);
    return [name, value.sent];
  });
}

/** Every occurrence of a secret replaced, longest first (so a secret inside another is not left half-shown). */
export function redactSecrets(text: string, secrets: string[], replacement: string): string {
  let out = text;
  for (const secret of [...secrets].sort((a, b) => b.length - a.length))
    if (out.includes(secret)) out = out.split(secret).join(replacement);
  return out;
}

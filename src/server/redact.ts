import { dirname, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { homedir, tmpdir } from "node:os";

/*
 * Host paths never reach a tenant: the store file, the config's folder, hookbox's own install folder (in
 * stacks), the working and home folders. Every text the server shows a tenant that may carry an error
 * message goes through one redactor; the operator's log keeps the full text.
 */

/** hookbox's install folder: the folder holding `dist/` (the bundle, in any chunk folder) or `src/`. */
function installRoot(): string {
  const here = fileURLToPath(import.meta.url);
  const at = Math.max(here.lastIndexOf(`${sep}dist${sep}`), here.lastIndexOf(`${sep}src${sep}`));
  return at > 0 ? here.slice(0, at) : dirname(here);
}

export type Redactor = (text: string) => string;

export function hostPathRedactor(options: { storeLocation: string; configFile: string }): Redactor {
  const candidates = [
    options.storeLocation === ":memory:" ? "" : resolve(options.storeLocation),
    options.storeLocation === ":memory:" ? "" : dirname(resolve(options.storeLocation)),
    dirname(options.configFile),
    installRoot(),
    process.cwd(),
    homedir(),
    tmpdir(),
  ];
  // Longest first, so a file inside a redacted folder goes as a whole; "/" and "" are never paths to hide.
  const paths = [...new Set(candidates.filter((path) => path.length > 1))].sort((a, b) => b.length - a.length);
  const pattern = new RegExp(paths.map((path) => `(?:file://)?${escape(path)}(?![\\w.-])`).join("|"), "g");
  return (text) => (paths.length === 0 ? text : text.replace(pattern, "<host>"));
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

/** A tool's error as a tool block records it in a stored turn: `"error":{"message":"..."` (message first). */
const TOOL_ERROR_MESSAGE = /"error":\{"message":("(?:[^"\\]|\\.)*")/g;

/**
 * `json` (a session view, its stored turn spliced in as text) with the message of each tool error redacted,
 * as the event stream redacts the same error in `tool-finished`. The turn is never parsed whole: only each
 * error's message string is decoded, redacted and encoded again.
 */
export function redactToolErrors(json: string, redact: Redactor): string {
  return json.replace(TOOL_ERROR_MESSAGE, (_whole, message: string) => {
    const redacted = redact(JSON.parse(message) as string);
    return `"error":{"message":${JSON.stringify(redacted)}`;
  });
}

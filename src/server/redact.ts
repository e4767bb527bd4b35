import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { homedir, tmpdir } from "node:os";

/*
 * Host paths never reach a tenant: the store file, the config's folder, hookbox's own install folder (in
 * stacks), the working and home folders. Every text the server shows a tenant that may carry an error
 * message goes through one redactor; the operator's log keeps the full text.
 */

/** hookbox's install folder: this file is dist/<bundle>.js or src/server/redact.ts. */
function installRoot(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  return here.endsWith("/src/server") ? resolve(here, "../..") : resolve(here, "..");
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

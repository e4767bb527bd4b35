import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Hono } from "hono";
import { packageRoot } from "../package-root.js";

/*
 * The web inspector's files (built from ui/ into dist/ui by scripts/build.mjs), served at /ui/ by `hookbox
 * serve`. Only the built files are served, each with a Content-Security-Policy that allows scripts, styles
 * and requests from this origin alone and no inline script: everything a script, a model or a tool produced
 * is rendered as text by the page, and the policy is the second line should any of it ever reach markup.
 * The page holds no data: it asks the API for it with the key the user gives it.
 */

const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const SECURITY_HEADERS = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cache-control": "no-cache",
};

const FILES: Record<string, string> = {
  "index.html": "text/html; charset=utf-8",
  "app.js": "text/javascript; charset=utf-8",
  "app.css": "text/css; charset=utf-8",
  "app.js.map": "application/json",
  "app.css.map": "application/json",
};

/**
 * The path of a request's URL without parsing it again: the node adapter makes every request's `url` a WHATWG
 * href (dot segments resolved), so its path is what follows the authority, up to `?` or `#` (the same string
 * `new URL(href).pathname` gives).
 */
export function hrefPath(href: string): string {
  const start = href.indexOf("/", href.indexOf("://") + 3);
  if (start === -1) return "/";
  let end = href.length;
  for (const mark of ["?", "#"]) {
    const at = href.indexOf(mark, start);
    if (at !== -1 && at < end) end = at;
  }
  return href.slice(start, end);
}

/** True for the paths the inspector answers (everything else is the API's). */
export function isInspectorPath(pathname: string): boolean {
  return pathname === "/" || pathname === "/ui" || pathname.startsWith("/ui/");
}

export function inspectorApp(options: { dir?: string } = {}): Hono {
  const dir = options.dir ?? join(packageRoot(), "dist", "ui");
  const cache = new Map<string, Promise<Buffer | undefined>>();
  const file = (name: string) => {
    let loaded = cache.get(name);
    if (!loaded) {
      // Read once; a missing file (an unbuilt checkout) is answered 404 with a hint, and read again next time.
      loaded = readFile(join(dir, name)).catch(() => {
        cache.delete(name);
        return undefined;
      });
      cache.set(name, loaded);
    }
    return loaded;
  };
  const app = new Hono();
  app.get("/", (c) => c.redirect("/ui/", 302));
  app.get("/ui", (c) => c.redirect("/ui/", 301));
  app.get("/ui/*", async (c) => {
    const name = c.req.path.slice("/ui/".length) || "index.html";
    const type = Object.hasOwn(FILES, name) ? FILES[name] : undefined;
    const body = type && (await file(name));
    if (!type || !body) {
      const hint = type ? "the web inspector is not built here: run npm run build" : `no file ${name.slice(0, 80)} in the web inspector`;
      return c.text(hint, 404, SECURITY_HEADERS);
    }
    return c.body(new Uint8Array(body), 200, { ...SECURITY_HEADERS, "content-type": type });
  });
  app.all("*", (c) => c.text("method not allowed", 405, SECURITY_HEADERS));
  return app;
}

import { describe, expect, it } from "vitest";
import { hrefPath, isInspectorPath } from "../../src/server/inspector.js";

/* Serve picks the inspector or the API by a request's path, read from the href the node adapter made (src/server/server.ts). */
describe("a request's path read from its href", () => {
  const targets = [
    "/",
    "/ui",
    "/ui/",
    "/ui/app.js?v=1",
    "/v1/runs/run_1/events?after=3#x",
    "/v1/../ui/app.css",
    "/ui/%2e%2e/v1/runs",
    "/%75i/",
    "/v1/sessions?next=/ui/",
    "/v1/a#/ui/",
    "?only=query",
    "/ui?x",
    "//ui/",
  ];
  const hosts = ["127.0.0.1:8080", "[::1]:3000", "example.com"];

  it("is the pathname a full parse gives, for every request target and host", () => {
    for (const host of hosts) {
      for (const target of targets) {
        const href = new URL(`http://${host}${target.startsWith("/") ? target : `/${target}`}`).href;
        expect(hrefPath(href), href).toBe(new URL(href).pathname);
      }
    }
  });

  it("sends only /, /ui and /ui/... to the inspector", () => {
    const inspector = (target: string) => isInspectorPath(hrefPath(new URL(`http://127.0.0.1:8080${target}`).href));
    expect(["/", "/ui", "/ui/app.js?v=1", "/v1/../ui/app.css"].map(inspector)).toEqual([true, true, true, true]);
    expect(["/v1/sessions?next=/ui/", "/v1/a#/ui/", "/uix", "/%75i/"].map(inspector)).toEqual([false, false, false, false]);
  });
});

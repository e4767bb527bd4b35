import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";

/*
 * Debian's Chromium driven by playwright-core: headless, with a fresh profile, and with the switches that keep
 * it off the network (no background requests, component updates, sync or QUIC). `.ci/run` installs the
 * `chromium` package when it is missing; playwright's own browser downloads are never used.
 */
export const CHROMIUM = "/usr/bin/chromium";

export interface Browser {
  context: BrowserContext;
  newPage(): Promise<Page>;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), "hookbox-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  return {
    context,
    newPage: () => context.newPage(),
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** What the tests read of a page's globals (evaluated in the browser: the tests' own types have no DOM). */
export interface InPage {
  document: { addEventListener(type: string, listener: (event: { violatedDirective: string; blockedURI: string }) => void): void };
  __reportViolation(what: string): void;
  __pwned?: string;
}

/** A new page that records every Content-Security-Policy violation it meets in `violations`. */
export async function pageRecordingViolations(browser: Browser): Promise<Page & { violations: string[] }> {
  const page = (await browser.newPage()) as Page & { violations: string[] };
  page.violations = [];
  await page.exposeFunction("__reportViolation", (what: string) => page.violations.push(what));
  await page.addInitScript(() => {
    const inPage = globalThis as unknown as InPage;
    inPage.document.addEventListener("securitypolicyviolation", (event) =>
      inPage.__reportViolation(`${event.violatedDirective} ${event.blockedURI}`),
    );
  });
  return page;
}

/** Signs the inspector in with a tenant's key, as a person does, and waits for its navigation. */
export async function signIn(page: Page, key: string): Promise<void> {
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Main" }).waitFor();
}

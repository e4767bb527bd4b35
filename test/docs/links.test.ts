import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/cli.js";

/* The repo's docs are self-contained: links resolve inside the repo, and every bench figure names a script in it. */
const docs = ["README.md", "BENCHMARKS.md", ...readdirSync(join(repoRoot, "docs")).map((f) => `docs/${f}`)].filter((f) =>
  f.endsWith(".md"),
);

function filesUnder(dir: string): string[] {
  return readdirSync(join(repoRoot, dir)).flatMap((name) => {
    const path = `${dir}/${name}`;
    return statSync(join(repoRoot, path)).isDirectory() ? filesUnder(path) : [path];
  });
}

describe("docs", () => {
  it("every relative link in README, BENCHMARKS and docs/ resolves to a file inside the repo", () => {
    let links = 0;
    for (const doc of docs) {
      for (const [, target] of readFileSync(join(repoRoot, doc), "utf8").matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const path = resolve(dirname(join(repoRoot, doc)), target!.split("#")[0]!);
        expect(relative(repoRoot, path).startsWith(".."), `${doc} -> ${target}`).toBe(false);
        expect(existsSync(path), `${doc} -> ${target}`).toBe(true);
        links += 1;
      }
    }
    expect(links).toBeGreaterThan(5);
  });

  it("nothing in docs, sources, types or scripts points at design files outside the repo", () => {
    const files = [...docs, ...filesUnder("src"), ...filesUnder("types"), ...filesUnder("scripts"), ...filesUnder("runtime")];
    expect(files.length).toBeGreaterThan(50);
    const offenders = files.filter((file) => /shared\/design|contract\.md|\.\.\/shared/.test(readFileSync(join(repoRoot, file), "utf8")));
    expect(offenders).toEqual([]);
  });

  it("every script BENCHMARKS.md names exists, and none is a local untracked one", () => {
    const text = readFileSync(join(repoRoot, "BENCHMARKS.md"), "utf8");
    const scripts = [...text.matchAll(/scripts\/[\w./-]+\.mjs/g)].map(([path]) => path);
    expect(scripts.length).toBeGreaterThan(0);
    for (const script of scripts) expect(existsSync(join(repoRoot, script)), script).toBe(true);
    expect(text).not.toMatch(/\.cache\/\w+\.mjs/);
  });
});

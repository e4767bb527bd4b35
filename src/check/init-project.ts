import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { HookboxError } from "../errors.js";
import { hookboxTypesDir } from "./compile.js";
import { POLICY_CASES, POLICY_TEST, packageJson } from "./init-policy-tests.js";

/*
 * `hookbox init DIR`: a script project an editor type-checks as it is; `hookbox check` uses the same compiler
 * options. Inside a project that has hookbox installed (node_modules/hookbox above DIR), the tsconfig resolves
 * "hookbox" to the installed package's script types through its `hookbox-script` export condition, so they
 * follow upgrades. Anywhere else the types are copied into DIR/types, so the project works on its own.
 */

const COMPILER_OPTIONS = {
  target: "ES2022",
  lib: ["ES2022"],
  module: "ESNext",
  moduleResolution: "Bundler",
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  allowJs: true,
  checkJs: true,
  // The sandbox has neither the DOM nor Node: no ambient types beyond the hookbox module.
  types: [],
};

const tsconfig = (typesFrom: "installed" | "copied") => ({
  compilerOptions: {
    ...COMPILER_OPTIONS,
    ...(typesFrom === "installed" ? { customConditions: ["hookbox-script"] } : { paths: { hookbox: ["./types/hookbox.d.ts"] } }),
  },
  include: ["**/*.ts", "**/*.js"],
});

/** Whether `import "hookbox"` from `dir` finds an installed hookbox package (node_modules/hookbox in an ancestor). */
function hookboxInstalledAbove(dir: string): boolean {
  for (let current = resolve(dir); ; current = dirname(current)) {
    if (existsSync(join(current, "node_modules", "hookbox", "package.json"))) return true;
    if (dirname(current) === current) return false;
  }
}

const POLICY = `import { BlockKinds, PayloadKeys, defineScript, keys, setKey } from "hookbox";
import type { BeforeToolCallReturn, OnToolErrorReturn } from "hookbox";

// 13 to 19 digits, single spaces or dashes between them; the text after the number is left alone.
const CARD_NUMBER = /\\b\\d(?:[ -]?\\d){12,18}\\b/g;
const REFUND_LIMIT = 100;

export default defineScript({
  name: "refund-policy",
  onHookError: "fail-closed",
  middleware: [
    // Card numbers never reach the model.
    async function redactCards(turn, next, ctx) {
      for (const block of turn.blocks) {
        const text = block.payload[PayloadKeys.text];
        if (block.kind === BlockKinds.user && typeof text === "string" && CARD_NUMBER.test(text)) {
          block.payload[PayloadKeys.text] = text.replace(CARD_NUMBER, "[card]");
          setKey(block.metadata, keys.blockMetadata.middleware, ctx.middlewareName);
        }
      }
      return next(turn);
    },
  ],
  tools: [
    {
      name: "lookup_order",
      description: "Look up an order by id",
      parameters: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
      async handler(args, ctx) {
        return { id: args.id, total: 120, currency: "EUR", requestedBy: ctx.userContext?.userId ?? null };
      },
    },
    {
      name: "refund",
      description: "Refund an amount of an order",
      parameters: {
        type: "object",
        properties: { id: { type: "string" }, amount: { type: "number" } },
        required: ["id", "amount"],
      },
      async handler(args) {
        return { refunded: args.amount, orderId: args.id };
      },
    },
  ],
  // Each hook's return type is written out, so any editor reports a bad return at its own line.
  hooks: {
    beforeToolCall(p): BeforeToolCallReturn {
      if (p.call.name === "refund" && p.call.args.amount > REFUND_LIMIT) {
        return { action: "deny", reason: \`refunds over \${REFUND_LIMIT} need a human\` };
      }
    },
    onToolError(p): OnToolErrorReturn {
      return p.attempt < 3 ? { action: "retry", backoffMs: 50 } : { action: "fail" };
    },
  },
});
`;

const MODEL = {
  steps: [
    { toolCalls: [{ id: "c1", name: "lookup_order", args: { id: "A17" } }] },
    { toolCalls: [{ id: "c2", name: "refund", args: { id: "A17", amount: 120 } }] },
    { text: "Refunds over 100 need a human; I have passed order A17 on to the team." },
  ],
};

const README = `# hookbox script project

- \`policy.ts\`: an example script (middleware, tools, hooks). Edit it; your editor type-checks it against the hookbox script types.
- \`model.json\`: a scripted model: each inference consumes the next step.
- \`policy.cases.json\`: the policy's test cases, each run in the real sandbox by \`hookbox test\`; \`policy.test.mjs\`:
  the same kind of test for \`node --test\` through \`hookbox/testing\`. \`npm test\` runs both (with hookbox installed:
  \`npm i -D hookbox\`).

\`\`\`sh
npx hookbox check policy.ts
npx hookbox run policy.ts --model scripted:model.json --prompt "Please refund order A17, I was charged twice"
npx hookbox test --coverage
npm test
\`\`\`
`;

export interface InitResult {
  dir: string;
  files: string[];
}

/** Writes the project into `dir` (created if needed). Refuses, writing nothing, if any file already exists. */
export function initProject(dir: string): InitResult {
  const installed = hookboxInstalledAbove(dir);
  const typesDir = hookboxTypesDir();
  const files: Record<string, string> = {
    "tsconfig.json": `${JSON.stringify(tsconfig(installed ? "installed" : "copied"), null, 2)}\n`,
    ...(installed
      ? {}
      : {
          "types/hookbox.d.ts": readFileSync(join(typesDir, "hookbox.d.ts"), "utf8"),
          "types/turns.d.ts": readFileSync(join(typesDir, "turns.d.ts"), "utf8"),
          "types/decisions.d.ts": readFileSync(join(typesDir, "decisions.d.ts"), "utf8"),
        }),
    "policy.ts": POLICY,
    "policy.cases.json": `${JSON.stringify(POLICY_CASES, null, 2)}\n`,
    "policy.test.mjs": POLICY_TEST,
    "model.json": `${JSON.stringify(MODEL, null, 2)}\n`,
    "package.json": packageJson(dir),
    "README.md": README,
  };
  const existing = Object.keys(files).filter((file) => existsSync(join(dir, file)));
  if (existing.length > 0) {
    throw new HookboxError("USAGE", `${dir}: already contains ${existing.join(", ")}; choose an empty or new directory`, { dir, existing });
  }
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), content);
  }
  return { dir, files: Object.keys(files) };
}

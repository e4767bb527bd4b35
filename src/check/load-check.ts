import { resolve } from "node:path";
import { createTenantRuntime } from "../host/tenant-runtime.js";
import { ScriptedModel } from "../engine/scripted.js";
import { createSandboxPool } from "../sandbox/index.js";

/*
 * The checks `hookbox run` makes when it loads scripts, made by `hookbox check` too: each script is loaded the way
 * run loads it (bundled, evaluated in a real sandbox, its definition and tool schemas validated), so a script
 * with no default export, a broken tool schema or a throw at load is reported before anyone runs it. Each file is
 * loaded alone (its own error, named by file), then all together (names two scripts may not share).
 */

/** One line per load error, as run would report it; [] when every script loads. */
export async function loadErrors(files: string[]): Promise<string[]> {
  const pool = createSandboxPool();
  try {
    const load = async (paths: string[], tenant: string): Promise<string | undefined> => {
      try {
        // The model is never called: loading only builds the tenant as run does.
        await createTenantRuntime(
          { name: tenant, scripts: paths.map((path) => ({ path: resolve(path) })), model: { kind: "scripted", file: "" } },
          pool,
          { model: new ScriptedModel([]) },
        );
        return undefined;
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        return `${typeof code === "string" ? `${code}: ` : ""}${error instanceof Error ? error.message : String(error)}`;
      }
    };
    const errors: string[] = [];
    for (const [index, file] of files.entries()) {
      const error = await load([file], `check-${index}`);
      if (error) errors.push(error);
    }
    if (errors.length === 0 && files.length > 1) {
      const together = await load(files, "check-all");
      if (together) errors.push(together);
    }
    return errors;
  } finally {
    await pool.close();
  }
}

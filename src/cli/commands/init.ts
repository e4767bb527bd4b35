import { resolve } from "node:path";
import { HookboxError } from "../../errors.js";
import { initProject } from "../../check/init-project.js";

const usage = "usage: hookbox init DIR";

/** `hookbox init DIR`: a script project (tsconfig, types, example policy, scripted model). Exit 2 on bad usage. */
export async function initCommand(argv: string[]): Promise<number> {
  if (argv.length !== 1 || argv[0]!.startsWith("-")) {
    process.stderr.write(`${usage}\n`);
    return 2;
  }
  const dir = argv[0]!;
  try {
    const result = initProject(resolve(dir));
    process.stdout.write(`created ${dir}: ${result.files.join(", ")}\nnext: cd ${dir} && npx hookbox check policy.ts\n`);
    return 0;
  } catch (error) {
    if (!(error instanceof HookboxError)) throw error;
    process.stderr.write(`hookbox init: ${error.message}\n`);
    return 2;
  }
}

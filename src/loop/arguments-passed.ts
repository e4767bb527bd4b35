import { canonicalJson, type JsonObject } from "../turns/json.js";

/** The arguments each hook of a beforeToolCall chain (by its place in the chain) last let through. */
export class ArgumentsPassed {
  private readonly passed: (JsonObject | undefined)[];
  /** Canonical JSON of the arguments compared: made once per arguments object, only when two differ as objects. */
  private keys: Map<JsonObject, string> | undefined;

  constructor(hooks: number) {
    this.passed = new Array<JsonObject | undefined>(hooks);
  }

  /** Whether hook `index` let these arguments (this object, or an equal JSON value) through. */
  saw(index: number, args: JsonObject): boolean {
    const seen = this.passed[index];
    return seen !== undefined && (seen === args || this.keyOf(seen) === this.keyOf(args));
  }

  let(index: number, args: JsonObject): void {
    this.passed[index] = args;
  }

  byEveryone(args: JsonObject): boolean {
    for (let index = 0; index < this.passed.length; index++) if (!this.saw(index, args)) return false;
    return true;
  }

  private keyOf(args: JsonObject): string {
    this.keys ??= new Map();
    let key = this.keys.get(args);
    if (key === undefined) this.keys.set(args, (key = canonicalJson(args)));
    return key;
  }
}

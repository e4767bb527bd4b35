/*
 * The JSON text of a value frozen whole to be shared (a tenant's tool definitions in every run's turn, its record in
 * every session), made once, before the freeze, and spliced into the texts that hold the value. Serializing it again
 * would cost more than its size says: V8 serializes a frozen array on its slow path, several times slower than a
 * plain one, and the turn's head holding the tool definitions is serialized at every snapshot.
 */

const texts = new WeakMap<object, string>();

/** Records `text` as the JSON of `value`, which must never change again (it is frozen, or about to be). */
export function keepJson(value: object, text: string): void {
  texts.set(value, text);
}

/** The JSON text of `value`: the one kept for it, else serialized now. */
export function jsonOf(value: unknown): string {
  return (value !== null && typeof value === "object" && texts.get(value)) || JSON.stringify(value);
}

/**
 * `JSON.stringify(bag)` for a bag of JSON values (a turn's metadata or data), with the kept texts of its values
 * spliced in. A bag that holds none is serialized as it is.
 */
export function bagJson(bag: Readonly<Record<string, unknown>>): string {
  let holdsKept = false;
  for (const key in bag) {
    const value = bag[key];
    if (value !== null && typeof value === "object" && texts.has(value)) {
      holdsKept = true;
      break;
    }
  }
  return holdsKept ? `{${membersJson(bag, (_key, value) => jsonOf(value))}}` : JSON.stringify(bag);
}

/**
 * An object's members as JSON, without the braces: `"key":text` for each own key, in JSON.stringify's order, with
 * `valueJson`'s text. A member whose text is undefined is left out, as JSON.stringify leaves out undefined,
 * functions and symbols.
 */
export function membersJson(object: object, valueJson: (key: string, value: unknown) => string | undefined): string {
  let text = "";
  for (const key of Object.keys(object)) {
    const valueText = valueJson(key, (object as Record<string, unknown>)[key]);
    if (valueText !== undefined) text += `${text ? "," : ""}${JSON.stringify(key)}:${valueText}`;
  }
  return text;
}

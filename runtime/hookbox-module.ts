/*
 * The module scripts import as "hookbox" inside the sandbox. The bundler maps the import to the object
 * built here, once per context, before the script's own code runs.
 */
import { ObjectFreeze } from "./primordials.js";
import {
  BLOCK_KINDS,
  BlockKinds,
  ERROR_CODES,
  EVENT_TYPES,
  FINISH_REASONS,
  HOOK_ACTIONS,
  HOOK_NAMES,
  NAMESPACE,
  ON_HOOK_ERROR,
  PayloadKeys,
  RUN_STATUSES,
  keys,
} from "./constants.gen.js";
import { contextRestartDisabledKey, deleteKey, getKey, setKey } from "./keys.js";
import { isBlockKind } from "./blocks.js";

/** Identity at run time: the shape is validated when the script is loaded (and typed by types/hookbox.d.ts). */
export function defineScript<T>(script: T): T {
  return script;
}

export function createHookboxModule(): Readonly<Record<string, unknown>> {
  return ObjectFreeze({
    __esModule: true,
    defineScript,
    keys,
    getKey,
    setKey,
    deleteKey,
    contextRestartDisabledKey,
    isBlockKind,
    BlockKinds,
    BLOCK_KINDS,
    PayloadKeys,
    HOOK_NAMES,
    HOOK_ACTIONS,
    ON_HOOK_ERROR,
    RUN_STATUSES,
    ERROR_CODES,
    EVENT_TYPES,
    FINISH_REASONS,
    NAMESPACE,
  });
}

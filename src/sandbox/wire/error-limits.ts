/*
 * How much text an error may carry out of the sandbox, on every side of the boundary: the runtime clips
 * what a script threw, the worker clips what it reports, and the host clips what it accepts (a worker may
 * be the attacker's). A script's error message reaches events, spans and the model: 4096 characters are
 * plenty to say what went wrong.
 */
export const MAX_ERROR_MESSAGE_CHARS = 4096;
export const MAX_ERROR_STACK_CHARS = 16384;
/** An error's name (`TypeError`) and the code a thrown capability error carries (`CAPABILITY_DENIED`). */
export const MAX_ERROR_NAME_CHARS = 200;
export const MAX_ERROR_CODE_CHARS = 64;
/**
 * The JSON text the runtime describes a thrown value with (`{code, name, message, stack, path, errorCode}`, each
 * text clipped above) at its longest: JSON writes a control character as six (`\u0001`), and the names and
 * punctuation take less than 1024. The worker reads no more of it than this, and never cuts a whole one.
 */
export const MAX_ERROR_DESCRIPTION_CHARS =
  6 * (MAX_ERROR_NAME_CHARS + 2 * MAX_ERROR_MESSAGE_CHARS + MAX_ERROR_STACK_CHARS + MAX_ERROR_CODE_CHARS) + 1024;

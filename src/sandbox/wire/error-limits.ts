/*
 * How much text an error may carry out of the sandbox, on every side of the boundary: the runtime clips
 * what a script threw, the worker clips what it reports, and the host clips what it accepts (a worker may
 * be the attacker's). A script's error message reaches events, spans and the model: 4096 characters are
 * plenty to say what went wrong.
 */
export const MAX_ERROR_MESSAGE_CHARS = 4096;
export const MAX_ERROR_STACK_CHARS = 16384;

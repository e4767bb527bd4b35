/**
 * What a script's tools may be, checked before ajv sees a schema: the host's work on a schema and on the
 * arguments it checks stays bounded whatever the schema's author wrote. No imports: the in-isolate runtime
 * applies the same numbers before a manifest leaves the sandbox.
 */
export const SCHEMA_LIMITS = {
  /** JSON text of one tool's `parameters`. */
  maxSchemaBytes: 64 * 1024,
  /** Nesting of objects and arrays in one schema. */
  maxSchemaDepth: 32,
  /** Tools one script may define. */
  maxToolsPerScript: 256,
} as const;

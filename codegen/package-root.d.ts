/**
 * The hookbox package root: the nearest ancestor of this module holding a package.json named "hookbox".
 * Works the same from the bundled dist/cli.js and from the sources under vitest.
 */
export declare function packageRoot(from?: string): string;
/** The version in the hookbox package's package.json. */
export declare function packageVersion(): string;

/*
 * Just enough source-map support to point script errors at the author's file:line:col: a VLQ decoder
 * for esbuild's `mappings` and a lookup. Decoded lazily, on the first error that needs it.
 */

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const DIGIT = new Map([...BASE64].map((char, index) => [char, index]));

interface Segment {
  column: number;
  source: number;
  line: number;
  sourceColumn: number;
}

export interface RawSourceMap {
  sources: string[];
  mappings: string;
}

export class SourceMap {
  private lines: Segment[][] | undefined;

  constructor(private readonly raw: RawSourceMap) {}

  /** 1-based line and column in the bundle -> the author's position, 1-based. */
  originalPosition(line: number, column: number): { source: string; line: number; column: number } | undefined {
    const segments = this.decoded()[line - 1];
    if (segments === undefined || segments.length === 0) return undefined;
    let best: Segment | undefined;
    for (const segment of segments) {
      if (segment.column <= column - 1) best = segment;
      else break;
    }
    best ??= segments[0];
    const source = this.raw.sources[best.source];
    if (source === undefined) return undefined;
    return { source, line: best.line + 1, column: best.sourceColumn + 1 };
  }

  private decoded(): Segment[][] {
    if (this.lines !== undefined) return this.lines;
    const lines: Segment[][] = [];
    let source = 0;
    let line = 0;
    let sourceColumn = 0;
    for (const text of this.raw.mappings.split(";")) {
      const segments: Segment[] = [];
      let column = 0;
      for (const part of text.split(",")) {
        if (part === "") continue;
        const fields = decodeVlq(part);
        column += fields[0] ?? 0;
        if (fields.length >= 4) {
          source += fields[1];
          line += fields[2];
          sourceColumn += fields[3];
          segments.push({ column, source, line, sourceColumn });
        }
      }
      lines.push(segments);
    }
    this.lines = lines;
    return lines;
  }
}

function decodeVlq(text: string): number[] {
  const values: number[] = [];
  let value = 0;
  let shift = 0;
  for (const char of text) {
    const digit = DIGIT.get(char);
    if (digit === undefined) break;
    value += (digit & 31) << shift;
    if (digit & 32) {
      shift += 5;
      continue;
    }
    values.push(value & 1 ? -(value >>> 1) : value >>> 1);
    value = 0;
    shift = 0;
  }
  return values;
}

/** Rewrites `bundle-<hash>.js:L:C` positions in a stack or message to the author's positions. */
export function remapStack(text: string, maps: (filename: string) => SourceMap | undefined): string {
  return text.replace(/(bundle-[0-9a-f]{12}\.js):(\d+):(\d+)/g, (whole, filename: string, line: string, column: string) => {
    const position = maps(filename)?.originalPosition(Number(line), Number(column));
    return position === undefined ? whole : `${position.source}:${position.line}:${position.column}`;
  });
}

export declare const PERIOD_MS: number;
export interface StallProbe {
  read(): { stallMs: number; busyStallMs: number };
  reset(): void;
  stop(): void;
}
export declare function startStallProbe(): StallProbe;

import type { RunHandle, RunOptions, TenantConfig } from "../host/types.js";
import type { Turn } from "../turns/turn.js";
import type { SessionRecord } from "../store/types.js";

/** @internal What a session asks of the SessionManager that made it (each call names the session by id). */
export interface SessionOwner {
  startRun(sessionId: string, prompt: string, options?: RunOptions): Promise<RunHandle>;
  resume(sessionId: string): Promise<RunHandle>;
  fork(sessionId: string, options?: { runId?: string; sessionId?: string }): Promise<Session>;
  history(sessionId: string): Promise<Turn | undefined>;
  activeRun(sessionId: string): RunHandle | undefined;
}

/** One conversation: its history of turns and at most one active run. Obtained from a SessionManager. */
export class Session {
  /** @internal A session is made by its SessionManager (create, get, fork), never by a host. */
  constructor(
    private readonly manager: SessionOwner,
    readonly record: SessionRecord,
  ) {}

  get id(): string {
    return this.record.id;
  }

  get tenant(): string {
    return this.record.tenant;
  }

  get defaults(): RunOptions {
    return this.record.defaults;
  }

  /** Starts a run (options merge over the session defaults). Rejects with SESSION_BUSY while another run is active. */
  run(prompt: string, options: RunOptions = {}): Promise<RunHandle> {
    return this.manager.startRun(this.id, prompt, options);
  }

  /** Continues this session's interrupted run from its last committed snapshot. */
  resume(): Promise<RunHandle> {
    return this.manager.resume(this.id);
  }

  /** A new session whose history is this one's as of `runId` (default: the latest run). */
  fork(options: { runId?: string; sessionId?: string } = {}): Promise<Session> {
    return this.manager.fork(this.id, options);
  }

  /** The conversation the next run continues. */
  history(): Promise<Turn | undefined> {
    return this.manager.history(this.id);
  }

  /** The active run's handle in this process, if any. */
  get activeRun(): RunHandle | undefined {
    return this.manager.activeRun(this.id);
  }
}

export interface CreateSessionOptions {
  tenant: string;
  tenantConfig: TenantConfig;
  defaults?: RunOptions;
  /** Choose the id (CLI `--session ID` for a new session); default a new `sess_<32 hex>` id. */
  sessionId?: string;
}

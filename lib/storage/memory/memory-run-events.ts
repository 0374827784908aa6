import {
  systemClock,
  type Clock,
  type RunEventBus,
  type RunEventEntry,
  type RunLiveEvent,
  type RunWakeUp,
} from '../../core';

/** Options of {@link MemoryRunEventBus}. */
export interface MemoryRunEventBusOptions {
  /** Time, for retention. @default systemClock */
  clock?: Clock;
  /** How long a run's log is kept after its last entry (ms). @default 24 h */
  retentionMs?: number;
  /** The newest entries kept per run. @default 1000 */
  maxLen?: number;
  /** The most runs whose logs are kept (the least recently appended to go first). @default 10000 */
  maxRuns?: number;
}

interface Log {
  entries: RunEventEntry[];
  seq: number;
  expiresAt: number;
}

/** Default number of entries kept per run, on both adapters. */
export const DEFAULT_RUN_EVENTS_MAX_LEN = 1000;

/**
 * The {@link RunEventBus} in one process (the embedded runtime): a bounded log per run, expiring
 * `retentionMs` after its last entry on the bus's clock, and synchronous wake-ups.
 */
export class MemoryRunEventBus implements RunEventBus {
  private readonly clock: Clock;
  private readonly retentionMs: number;
  private readonly maxLen: number;
  private readonly maxRuns: number;
  /** Logs by run, least recently appended to first (Map order). */
  private readonly logs = new Map<string, Log>();
  private readonly listeners = new Map<string, Set<(wakeUp: RunWakeUp) => void>>();

  constructor(options: MemoryRunEventBusOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.retentionMs = positive('retentionMs', options.retentionMs ?? 24 * 60 * 60 * 1000);
    this.maxLen = positive('maxLen', options.maxLen ?? DEFAULT_RUN_EVENTS_MAX_LEN);
    this.maxRuns = positive('maxRuns', options.maxRuns ?? 10_000);
  }

  async append(event: RunLiveEvent): Promise<string> {
    const { runId } = event;
    let log = this.live(runId);
    if (log) {
      this.logs.delete(runId);
    } else {
      log = { entries: [], seq: 0, expiresAt: 0 };
      if (this.logs.size >= this.maxRuns) this.logs.delete(this.logs.keys().next().value as string);
    }
    this.logs.set(runId, log);
    const id = `${++log.seq}`;
    log.entries.push({ id, event: structuredClone(event) });
    if (log.entries.length > this.maxLen) log.entries.splice(0, log.entries.length - this.maxLen);
    log.expiresAt = this.clock.now() + this.retentionMs;
    this.wake(runId, event.type);
    return id;
  }

  async signal(runId: string): Promise<void> {
    this.wake(runId, 'settled');
  }

  async read(runId: string, options: { after?: string; limit?: number } = {}): Promise<RunEventEntry[]> {
    const limit = options.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`limit must be a positive integer, got ${limit}.`);
    const log = this.live(runId);
    if (!log) return [];
    const after = options.after === undefined ? 0 : cursor(options.after);
    const out: RunEventEntry[] = [];
    for (const entry of log.entries) {
      if (Number(entry.id) <= after) continue;
      out.push({ id: entry.id, event: structuredClone(entry.event) });
      if (out.length === limit) break;
    }
    return out;
  }

  async subscribe(runId: string, listener: (wakeUp: RunWakeUp) => void): Promise<() => void> {
    let set = this.listeners.get(runId);
    if (!set) this.listeners.set(runId, (set = new Set()));
    // One entry per subscription, so that subscribing one function twice needs two unsubscribes.
    const own = (wakeUp: RunWakeUp) => listener(wakeUp);
    set.add(own);
    return () => {
      const current = this.listeners.get(runId);
      if (!current?.delete(own) || current.size > 0) return;
      this.listeners.delete(runId);
    };
  }

  async close(): Promise<void> {
    this.listeners.clear();
  }

  /** Forget every log and subscription (tests). */
  clear(): void {
    this.logs.clear();
    this.listeners.clear();
  }

  /** How many subscriptions run `runId` has (tests). */
  subscribers(runId: string): number {
    return this.listeners.get(runId)?.size ?? 0;
  }

  private live(runId: string): Log | undefined {
    const log = this.logs.get(runId);
    if (log && log.expiresAt <= this.clock.now()) {
      this.logs.delete(runId);
      return undefined;
    }
    return log;
  }

  private wake(runId: string, wakeUp: RunWakeUp): void {
    const set = this.listeners.get(runId);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        listener(wakeUp);
      } catch {
        // A listener's error is its own: the others are still woken.
      }
    }
  }
}

function positive(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, got ${value}.`);
  return value;
}

/** The sequence number of cursor `id` (ids are decimal sequence numbers; anything else is refused). */
function cursor(id: string): number {
  if (!/^\d+$/.test(id)) throw new RangeError(`'${id}' is not a cursor of this log.`);
  return Number(id);
}

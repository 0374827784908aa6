import type { RunEventBus, RunEventEntry, RunLiveEvent, RunWakeUp } from '../../core';
import type { RedisKeys } from './redis.keys';
import type { RedisConnection } from './redis-scripts';

/** Options of {@link RedisRunEventBus}. */
export interface RedisRunEventBusOptions {
  keys: RedisKeys;
  /** How long a run's log is kept after its last entry (ms): the record retention. @default 24 h */
  retentionMs?: number;
  /** About how many of the newest entries are kept per run (`XADD MAXLEN ~`). @default 1000 */
  maxLen?: number;
}

/** Append one event: the entry, the log's TTL and the wake-up, in one round trip. */
const APPEND_LUA = `
local id = redis.call("XADD", KEYS[1], "MAXLEN", "~", ARGV[1], "*", "e", ARGV[2])
redis.call("PEXPIRE", KEYS[1], ARGV[3])
redis.call("PUBLISH", KEYS[1], ARGV[4])
return id`;
const APPEND_COMMAND = 'nestReactor_liveAppend';

type AppendingConnection = RedisConnection & {
  [APPEND_COMMAND](key: string, maxLen: number, json: string, ttlMs: number, type: string): Promise<string>;
};

/** A stream id (`<ms>-<seq>`), or its first part; anything else is refused before Redis sees it. */
const CURSOR = /^\d{1,20}(-\d{1,20})?$/;

/**
 * The {@link RunEventBus} on Redis: a Stream per run ({@link RedisKeys.runEventsKey}, in the run's
 * slot), appended to with one Lua script (`XADD MAXLEN ~`, `PEXPIRE` to the retention, `PUBLISH`
 * of the event's type on the channel of the same name), replayed with `XRANGE` from a cursor
 * (the stream id). Wake-ups reach subscribers through one dedicated subscriber connection (a
 * duplicate of the storage connection, made at the first subscription), which subscribes to a
 * run's channel while someone in this process watches or waits for the run.
 */
export class RedisRunEventBus implements RunEventBus {
  private readonly keys: RedisKeys;
  private readonly retentionMs: number;
  private readonly maxLen: number;
  private subscriber?: RedisConnection;
  /** Listeners by channel; the channel is subscribed while its set is in the map. */
  private readonly listeners = new Map<string, { set: Set<(wakeUp: RunWakeUp) => void>; ready: Promise<unknown> }>();
  private closed = false;

  constructor(
    private readonly redis: RedisConnection,
    options: RedisRunEventBusOptions,
  ) {
    this.keys = options.keys;
    this.retentionMs = positive('retentionMs', options.retentionMs ?? 24 * 60 * 60 * 1000);
    this.maxLen = positive('maxLen', options.maxLen ?? 1000);
  }

  async append(event: RunLiveEvent): Promise<string> {
    const redis = this.appending();
    return redis[APPEND_COMMAND](
      this.keys.runEventsKey(event.runId),
      this.maxLen,
      JSON.stringify(event),
      this.retentionMs,
      event.type,
    );
  }

  async signal(runId: string): Promise<void> {
    await this.redis.publish(this.keys.runEventsChannel(runId), 'settled');
  }

  async read(runId: string, options: { after?: string; limit?: number } = {}): Promise<RunEventEntry[]> {
    const limit = options.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`limit must be a positive integer, got ${limit}.`);
    const { after } = options;
    if (after !== undefined && !CURSOR.test(after)) throw new RangeError(`'${after}' is not a cursor of this log.`);
    const start = after === undefined ? '-' : `(${after}`;
    const rows = (await this.redis.xrange(this.keys.runEventsKey(runId), start, '+', 'COUNT', limit)) as Array<
      [string, string[]]
    >;
    const out: RunEventEntry[] = [];
    for (const [id, fields] of rows) {
      const at = fields.indexOf('e');
      if (at === -1 || at + 1 >= fields.length) continue;
      try {
        out.push({ id, event: JSON.parse(fields[at + 1]) as RunLiveEvent });
      } catch {
        // An entry that is not ours: skipped.
      }
    }
    return out;
  }

  async subscribe(runId: string, listener: (wakeUp: RunWakeUp) => void): Promise<() => void> {
    if (this.closed) throw new Error('The run event bus is closed.');
    const channel = this.keys.runEventsChannel(runId);
    const own = (wakeUp: RunWakeUp) => listener(wakeUp);
    let entry = this.listeners.get(channel);
    if (!entry) {
      const subscriber = this.connection();
      entry = { set: new Set(), ready: subscriber.subscribe(channel) };
      this.listeners.set(channel, entry);
    }
    entry.set.add(own);
    const mine = entry;
    const unsubscribe = () => {
      if (!mine.set.delete(own) || mine.set.size > 0 || this.listeners.get(channel) !== mine) return;
      this.listeners.delete(channel);
      // Sent after the SUBSCRIBE on the same connection; a later subscription sends its own after it.
      this.subscriber?.unsubscribe(channel).catch(() => undefined);
    };
    try {
      await mine.ready;
    } catch (error) {
      unsubscribe();
      throw error;
    }
    return unsubscribe;
  }

  /** Channels this process is subscribed to (tests). */
  get subscribedChannels(): number {
    return this.listeners.size;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.listeners.clear();
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    if (!subscriber) return;
    if (subscriber.status === 'ready') await subscriber.quit().catch(() => subscriber.disconnect());
    else subscriber.disconnect();
  }

  /** The subscriber connection, made at the first subscription. */
  private connection(): RedisConnection {
    if (this.subscriber) return this.subscriber;
    const subscriber = this.redis.duplicate() as RedisConnection;
    // Its errors are the storage connection's too (reported there); a lost wake-up is covered by polling.
    subscriber.on('error', () => undefined);
    subscriber.on('message', (channel: string, message: string) => {
      const entry = this.listeners.get(channel);
      if (!entry) return;
      for (const listener of [...entry.set]) {
        try {
          listener(message as RunWakeUp);
        } catch {
          // A listener's error is its own.
        }
      }
    });
    this.subscriber = subscriber;
    return subscriber;
  }

  private appending(): AppendingConnection {
    const redis = this.redis as AppendingConnection;
    if (typeof redis[APPEND_COMMAND] !== 'function') {
      redis.defineCommand(APPEND_COMMAND, { numberOfKeys: 1, lua: APPEND_LUA });
    }
    return redis;
  }
}

function positive(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, got ${value}.`);
  return value;
}

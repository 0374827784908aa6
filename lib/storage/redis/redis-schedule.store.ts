import type { ScheduleDefinition, ScheduleLastTick, ScheduleRecord, ScheduleStore } from '../../core';
import { recordedTick } from '../memory/memory-schedule.store';
import type { RedisKeys } from './redis.keys';
import type { RedisConnection } from './redis-scripts';

/**
 * The Redis runtime's schedules: one HASH, `<prefix>:{schedules:all}`, with three fields per
 * schedule: `d:<id>` (its definition, JSON), `t:<id>` (its last tick) and `r:<id>` (its last run).
 * Each write sets the fields of one schedule, so an upsert and a tick never overwrite each other.
 * A few schedules per deployment (not per run): one key, read whole by `list`.
 */
export class RedisScheduleStore implements ScheduleStore {
  private readonly key: string;

  constructor(
    private readonly redis: RedisConnection,
    keys: RedisKeys,
  ) {
    this.key = keys.coordinationKey('schedules', 'all');
  }

  async put(definition: ScheduleDefinition): Promise<void> {
    await this.redis.hset(this.key, `d:${definition.id}`, JSON.stringify(definition));
  }

  async get(id: string): Promise<ScheduleRecord | undefined> {
    const [d, t, r] = await this.redis.hmget(this.key, `d:${id}`, `t:${id}`, `r:${id}`);
    return d === null ? undefined : record(d, t, r);
  }

  async list(): Promise<ScheduleRecord[]> {
    const all = await this.redis.hgetall(this.key);
    const records: ScheduleRecord[] = [];
    for (const [field, value] of Object.entries(all)) {
      if (!field.startsWith('d:')) continue;
      const id = field.slice(2);
      records.push(record(value, all[`t:${id}`] ?? null, all[`r:${id}`] ?? null));
    }
    return records;
  }

  async remove(id: string): Promise<boolean> {
    const removed = await this.redis.hdel(this.key, `d:${id}`, `t:${id}`, `r:${id}`);
    return removed > 0;
  }

  /**
   * NOTE: read, then written: two ticks of one schedule recorded at once (a late duplicate beside
   * the next tick) may leave the older one as the last tick. Only what `list` shows and what the
   * overlap check reads are affected, never which runs start.
   */
  async recordTick(id: string, tick: ScheduleLastTick): Promise<void> {
    const [d, t, r] = await this.redis.hmget(this.key, `d:${id}`, `t:${id}`, `r:${id}`);
    if (d === null) return;
    const changes = recordedTick(record(d, t, r), tick);
    const fields: string[] = [];
    if (changes.lastTick) fields.push(`t:${id}`, JSON.stringify(changes.lastTick));
    if (changes.lastRun) fields.push(`r:${id}`, JSON.stringify(changes.lastRun));
    if (fields.length > 0) await this.redis.hset(this.key, ...fields);
  }
}

function record(d: string, t: string | null, r: string | null): ScheduleRecord {
  return {
    definition: JSON.parse(d) as ScheduleDefinition,
    ...(t !== null ? { lastTick: JSON.parse(t) as ScheduleLastTick } : {}),
    ...(r !== null ? { lastRun: JSON.parse(r) as { runId: string; at: number } } : {}),
  };
}

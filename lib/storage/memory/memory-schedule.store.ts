import type { ScheduleDefinition, ScheduleLastTick, ScheduleRecord, ScheduleStore } from '../../core';

interface Entry {
  definition: ScheduleDefinition;
  lastTick?: ScheduleLastTick;
  lastRun?: { runId: string; at: number };
}

/** The embedded runtime's schedules, in memory (copies in and out, as a store would). */
export class MemoryScheduleStore implements ScheduleStore {
  private readonly entries = new Map<string, Entry>();

  async put(definition: ScheduleDefinition): Promise<void> {
    const entry = this.entries.get(definition.id);
    this.entries.set(definition.id, { ...entry, definition: copy(definition) });
  }

  async get(id: string): Promise<ScheduleRecord | undefined> {
    const entry = this.entries.get(id);
    return entry ? copy(entry) : undefined;
  }

  async list(): Promise<ScheduleRecord[]> {
    return [...this.entries.values()].map(copy);
  }

  async remove(id: string): Promise<boolean> {
    return this.entries.delete(id);
  }

  async recordTick(id: string, tick: ScheduleLastTick): Promise<void> {
    const entry = this.entries.get(id);
    if (!entry) return;
    const next = recordedTick(entry, tick);
    this.entries.set(id, { ...entry, ...next });
  }
}

/**
 * What recording `tick` changes of a schedule's last tick and last run: a tick older than the one
 * recorded (a late duplicate delivery) does not move them back.
 */
export function recordedTick(
  current: { lastTick?: ScheduleLastTick; lastRun?: { runId: string; at: number } },
  tick: ScheduleLastTick,
): { lastTick?: ScheduleLastTick; lastRun?: { runId: string; at: number } } {
  const changes: { lastTick?: ScheduleLastTick; lastRun?: { runId: string; at: number } } = {};
  if (!current.lastTick || tick.at >= current.lastTick.at) changes.lastTick = { ...tick };
  if (tick.runId !== undefined && tick.skipped === undefined && (!current.lastRun || tick.at >= current.lastRun.at)) {
    changes.lastRun = { runId: tick.runId, at: tick.at };
  }
  return changes;
}

function copy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

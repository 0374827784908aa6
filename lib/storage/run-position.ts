/**
 * The order `listRuns` gives a reactor's runs in, shared by both adapters: newest first, by
 * creation time, then by run id (descending), and where a cursor leaves off in it.
 */
import type { RunPosition } from '../core';

/** Sort comparator: newest first, ties by run id, descending (a Redis `ZRANGE ... REV` order). */
export function newestFirst(a: RunPosition, b: RunPosition): number {
  return b.createdAt - a.createdAt || (a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0);
}

/** Whether `p` comes after `cursor` in {@link newestFirst} order (a page starts after its cursor). */
export function comesAfter(p: RunPosition, cursor: RunPosition | undefined): boolean {
  if (!cursor) return true;
  return p.createdAt < cursor.createdAt || (p.createdAt === cursor.createdAt && p.runId < cursor.runId);
}

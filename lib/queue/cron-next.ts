import { createRequire } from 'node:module';
import type { ScheduleTiming } from '../core';

/** The part of `cron-parser` (4 or 5) this module uses. */
interface CronParserModule {
  /** cron-parser 4 (BullMQ 5). */
  parseExpression?(pattern: string, options: CronOptions): CronInterval;
  /** cron-parser 5 (BullMQ 6). */
  CronExpressionParser?: { parse(pattern: string, options: CronOptions): CronInterval };
}
interface CronOptions {
  currentDate: Date;
  tz?: string;
}
interface CronInterval {
  next(): { getTime(): number };
}

let parser: CronParserModule | undefined;

/**
 * `cron-parser` as BullMQ loads it: resolved from BullMQ's own location (its dependency, in the
 * version BullMQ computes its job schedulers' ticks with), so both runtimes read a cron pattern
 * exactly as BullMQ does. No dependency of this package: BullMQ is a peer dependency.
 */
function cronParser(): CronParserModule {
  if (parser) return parser;
  try {
    parser = createRequire(require.resolve('bullmq'))('cron-parser') as CronParserModule;
  } catch {
    // No BullMQ to resolve from (a bundled app): the application's own cron-parser.
    parser = createRequire(__filename)('cron-parser') as CronParserModule;
  }
  return parser;
}

/**
 * The first tick of `timing` after `from` (epoch ms), as a BullMQ job scheduler computes it: the
 * next time the cron pattern matches in its time zone (UTC by default), or `from + everyMs`.
 * @throws Error naming what is wrong with a pattern or a time zone it cannot read
 */
export function nextTickAfter(timing: ScheduleTiming, from: number): number {
  if (timing.everyMs !== undefined) return from + timing.everyMs;
  const pattern = timing.cron ?? '';
  const options: CronOptions = { currentDate: new Date(from), tz: timing.tz ?? 'UTC' };
  let next: number;
  try {
    const lib = cronParser();
    const interval = lib.CronExpressionParser
      ? lib.CronExpressionParser.parse(pattern, options)
      : lib.parseExpression!(pattern, options);
    next = interval.next().getTime();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`cron '${pattern}'${timing.tz ? ` in time zone '${timing.tz}'` : ''} cannot be read: ${reason}`);
  }
  if (!Number.isFinite(next)) {
    throw new Error(`cron '${pattern}'${timing.tz ? ` in time zone '${timing.tz}'` : ''} has no next tick`);
  }
  return next;
}

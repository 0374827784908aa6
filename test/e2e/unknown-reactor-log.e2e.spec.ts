/**
 * A job for a reactor the worker does not know (a rolling deploy: this worker is older), on Redis
 * and BullMQ: it goes back to the queue `unknownReactorRetries` times, is logged once for the run
 * (with the retry count and what to do) and once more when the run is parked; the record is
 * untouched. The embedded runtime: test/core/unknown-reactor-log.spec.ts.
 */
import type { TestingModule } from '@nestjs/testing';
import { REACTOR_RUNTIME } from '../../lib/config';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import { success } from '../../lib/core/results/step-outcome';
import { Reactor } from '../../lib/nest/reactor.decorator';
import type { RedisReactorRuntime } from '../../lib/runtime/redis.runtime';
import type { CapturingLogger } from '../nest/fixtures';
import { createRedisApp, pollUntil, useRedisPrefixes } from './e2e.fixtures';

/** Registered by the newer (producer) app only. */
@Reactor('e2e-newer-reactor')
class NewerReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    return r.step('one', () => success(1), {});
  }
}

describe('an unknown reactor on Redis and BullMQ (e2e)', () => {
  const { redis, prefix } = useRedisPrefixes();
  const apps: TestingModule[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0).reverse()) await app.close();
  });

  it('is handed back unknownReactorRetries times, logged once with the retry count, and once more when parked', async () => {
    const p = prefix('e2e-unknown-log');
    const sweeper = { enabled: false };
    // The newer release stores the run and enqueues its job; it consumes nothing.
    const newer = await createRedisApp(p, { workers: false, sweeper }, { providers: [NewerReactor] });
    apps.push(newer.app);
    // The older worker does not register the reactor.
    const older = await createRedisApp(p, { sweeper, unknownReactorRetries: 3, unknownReactorDelayMs: 0 });
    apps.push(older.app);
    const loggers: CapturingLogger[] = [newer.logger, older.logger];
    const about = (runId: string, level: string) =>
      loggers.flatMap((l) => l.messages(level)).filter((m) => m.includes(runId));

    const runId = (await newer.client.start(NewerReactor, {})).runId;
    const runtime = newer.app.get<RedisReactorRuntime>(REACTOR_RUNTIME);
    const before = await redis().hgetall(runtime.keys.runKey(runId));
    await pollUntil(() => about(runId, 'error').length > 0, 10_000);
    await pollUntil(
      async () => Object.values(await runtime.dispatcher.queue.getJobCounts()).every((n) => n === 0),
      10_000,
    );

    const warnings = about(runId, 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("reactor 'e2e-newer-reactor' is not registered in this process");
    expect(warnings[0]).toContain('up to 3 times 0 ms apart');
    const errors = about(runId, 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(`Run '${runId}' of reactor 'e2e-newer-reactor' is parked`);
    expect(errors[0]).toContain('3 of 3 hand-backs');
    expect(await redis().hgetall(runtime.keys.runKey(runId))).toEqual(before);
    expect((await newer.client.get(runId))?.status).toBe('running');
  });
});

/**
 * An emitting process of the events chaos test: a Nest application context with the ReactorModule
 * on Redis (no workers, no sweeper) and one reactor started by event `chaos.order.paid`. Started by
 * `events-emit.spec.ts`:
 *
 *   node -r ts-node/register/transpile-only test/chaos/events-emitter.ts
 *
 * Environment: REDIS_URL (or, in the cluster run, REDIS_CLUSTER_NODES), CHAOS_PREFIX, EVENTS (how
 * many event ids). Prints `ready` once booted; on the line `go` on stdin it emits every event id
 * (`e0` .. `e<EVENTS-1>`) at once, prints `result <JSON>` (the run ids it started, and how many
 * targets refused an event) and exits.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { reactorRedisOption } from '../setup/redis';
import { ChaosFulfilReactor } from './events.fixtures';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`events emitter: environment variable ${name} is required`);
  return value;
}

async function main(): Promise<void> {
  const prefix = required('CHAOS_PREFIX');
  const events = Number(required('EVENTS'));
  // `{ url }`, or in the cluster run a Cluster connection of ours, which the module never closes.
  const redis = reactorRedisOption();
  @Module({
    imports: [
      ReactorModule.forRoot({
        redis: redis.redis,
        prefix,
        workers: false,
        sweeper: { enabled: false },
      }),
    ],
    providers: [ChaosFulfilReactor],
  })
  class EventsEmitterModule {}

  const app = await NestFactory.createApplicationContext(EventsEmitterModule, {
    logger: ['warn', 'error'],
    abortOnError: false,
  });
  const client = app.get(ReactorClient);
  process.stdout.write('ready\n');
  await new Promise<void>((resolve) => {
    let input = '';
    process.stdin.setEncoding('utf8').on('data', (chunk: string) => {
      input += chunk;
      if (!/^go$/m.test(input)) return;
      process.stdin.destroy(); // nothing more to read: the process may exit once the app is closed
      resolve();
    });
  });
  const results = await Promise.all(
    Array.from({ length: events }, (_, i) => client.emit('chaos.order.paid', { orderId: `o${i}` }, { id: `e${i}` })),
  );
  const started = results.flatMap((r) => r.started.map((s) => s.runId));
  const rejected = results.reduce((n, r) => n + r.rejected.length, 0);
  process.stdout.write(`result ${JSON.stringify({ started, rejected })}\n`);
  await app.close();
  await redis.close();
}

main().catch((error: unknown) => {
  process.stderr.write(`events emitter failed: ${(error as Error)?.stack ?? String(error)}\n`);
  process.exit(1);
});

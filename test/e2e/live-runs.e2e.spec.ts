/**
 * Live runs (issue 25) through the Nest module, on both runtimes: `client.watch(runId)` yields a
 * run's events as they happen and replays what a late subscriber missed from a cursor; without
 * `liveEvents` it still yields the pause and the end; `wait()` wakes on the run's end (also in
 * another process on Redis) instead of polling.
 */
import type { TestingModule } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import { InvalidArgumentError } from '../../lib/core/errors/invalid-argument.error';
import { RunNotFoundError } from '../../lib/core/errors/run-state.error';
import type { RunWatchEvent } from '../../lib/core/ports/run-events.port';
import { success } from '../../lib/core/results/step-outcome';
import type { ReactorModuleOptions } from '../../lib/config/reactor-module-options.interface';
import { REACTOR_RUNTIME, type ReactorRuntime } from '../../lib/config';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import type { RedisRunEventBus } from '../../lib/storage/redis/redis-run-events';
import type { MemoryRunEventBus } from '../../lib/storage/memory/memory-run-events';
import {
  BackgroundRetryReactor,
  BackgroundRollbackReactor,
  E2E_PROVIDERS,
  Gate,
  GateStep,
  LetterStep,
  createEmbeddedApp,
  createRedisApp,
  useRedisPrefixes,
} from './e2e.fixtures';

type Word = { word: string };

/** a, b, then the gate, in a worker. */
@Reactor('live-steps', { background: { all: true } })
class LiveStepsReactor implements ReactorBlueprint<Word> {
  build(r: ReactorBuilder<Word>) {
    const word = r.input('word', { type: 'string' });
    const a = r.step('a', LetterStep, { word, at: r.value(0) });
    const b = r.step('b', LetterStep, { word, at: r.value(1) }, { waitFor: [a] });
    return r.step('gate', GateStep, {}, { waitFor: [b] });
  }
}

/** a, then a pause at `approve`, then b. */
@Reactor('live-approval')
class LiveApprovalReactor implements ReactorBlueprint<Word> {
  build(r: ReactorBuilder<Word>) {
    const word = r.input('word', { type: 'string' });
    const a = r.step('a', LetterStep, { word, at: r.value(0) });
    const approve = r.interrupt<string>('approve', { waitFor: [a], payload: { type: 'string' } });
    return r.step('b', ({ ok }: { ok: string }) => success(ok.toUpperCase()), { ok: approve });
  }
}

const PROVIDERS = [...E2E_PROVIDERS, LiveStepsReactor, LiveApprovalReactor];

/** Everything the watch yields until it ends. */
async function collect(events: AsyncIterable<RunWatchEvent>): Promise<RunWatchEvent[]> {
  const out: RunWatchEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
}

/** `type` (and `step`) of each event, the form most assertions compare. */
const shapes = (events: RunWatchEvent[]) =>
  events.map((e) =>
    'step' in e ? `${e.type}:${e.step}` : e.type === 'run.finished' ? `${e.type}:${e.status}` : e.type,
  );

interface RuntimeCase {
  name: 'embedded' | 'redis';
  make(options?: ReactorModuleOptions): Promise<TestingModule>;
}

const redisPrefixes = useRedisPrefixes();
const RUNTIMES: RuntimeCase[] = [
  { name: 'embedded', make: (options) => createEmbeddedApp(PROVIDERS, options) },
  {
    name: 'redis',
    make: async (options) =>
      (
        await createRedisApp(redisPrefixes.prefix('live-runs'), options ?? {}, {
          providers: [LiveStepsReactor, LiveApprovalReactor],
        })
      ).app,
  },
];

/** How many subscriptions the runtime's bus holds (released when every watch and wait ended). */
function subscriptions(app: TestingModule): number {
  const bus = app.get<ReactorRuntime>(REACTOR_RUNTIME).runEvents as RedisRunEventBus | MemoryRunEventBus;
  return 'subscribedChannels' in bus ? bus.subscribedChannels : 0;
}

describe.each(RUNTIMES)('live runs on the $name runtime', ({ name, make }) => {
  describe('with liveEvents: true', () => {
    let app: TestingModule;
    let client: ReactorClient;
    beforeAll(async () => {
      app = await make({ liveEvents: true });
      client = app.get(ReactorClient);
    });
    afterAll(async () => {
      await app?.close();
    });

    it('yields every step of a background run as it happens, then its end', async () => {
      const started = await client.start(LiveStepsReactor, { word: 'hey' });
      const watch = client.watch(started.runId);
      const seen: RunWatchEvent[] = [];
      // The run waits at the gate: what came before is there already, the rest arrives live.
      for await (const event of watch) {
        seen.push(event);
        if (event.type === 'step.started' && event.step === 'gate') break;
      }
      expect(shapes(seen)).toEqual([
        'run.started',
        'step.started:a',
        'step.completed:a',
        'step.started:b',
        'step.completed:b',
        'step.started:gate',
      ]);
      const rest = client.watch(started.runId, { after: seen[seen.length - 1].id });
      const restDone = collect(rest);
      app.get(Gate).open();
      expect(shapes(await restDone)).toEqual(['step.completed:gate', 'run.finished:completed']);
      const all = await collect(client.watch(started.runId));
      expect(all.map((e) => e.id)).toEqual([...new Set(all.map((e) => e.id))]);
      expect(all[all.length - 1]).toMatchObject({
        type: 'run.finished',
        status: 'completed',
        runId: started.runId,
        reactorName: 'live-steps',
      });
      expect(all.every((e) => typeof e.at === 'number' && e.runId === started.runId)).toBe(true);
      expect(subscriptions(app)).toBe(0);
    }, 20_000);

    it('yields retries, and a failure with its rollback (compensated, undone) before the end', async () => {
      const retried = await client.start(BackgroundRetryReactor, {});
      expect(shapes(await collect(client.watch(retried.runId)))).toEqual([
        'run.started',
        'step.started:flaky',
        'step.retrying:flaky',
        // Each retry goes on in a job of its own.
        'run.resumed',
        'step.started:flaky',
        'step.retrying:flaky',
        'run.resumed',
        'step.started:flaky',
        'step.completed:flaky',
        'run.finished:completed',
      ]);
      const failed = await client.start(BackgroundRollbackReactor, { word: 'no' });
      const events = await collect(client.watch(failed.runId));
      expect(shapes(events)).toEqual([
        'run.started',
        'step.started:a',
        'step.completed:a',
        'step.started:b',
        'step.completed:b',
        'step.started:charge',
        'step.compensated:charge',
        'step.undone:b',
        'step.undone:a',
        'step.failed:charge',
        'run.finished:failed',
      ]);
      expect(events.find((e) => e.type === 'step.failed')).toMatchObject({ error: 'card declined', attempts: 1 });
      expect((events[events.length - 1] as { error?: string }).error).toContain('card declined');
    }, 20_000);

    it('yields the pause with its interrupts, then the resume and the end', async () => {
      const paused = await client.run(LiveApprovalReactor, { word: 'ok' });
      expect(paused.status).toBe('paused');
      const watch = client.watch(paused.runId);
      const first: RunWatchEvent[] = [];
      for await (const event of watch) {
        first.push(event);
        if (event.type === 'run.paused') break;
      }
      // The interrupt is a step: it starts, and completes with its answer.
      expect(shapes(first)).toEqual([
        'run.started',
        'step.started:a',
        'step.completed:a',
        'step.started:approve',
        'run.paused',
      ]);
      expect(first[4]).toMatchObject({ interrupts: ['approve'], runId: paused.runId });
      const rest = collect(client.watch(paused.runId, { after: first[4].id }));
      await client.continue(paused.runId, 'approve', 'yes');
      expect(shapes(await rest)).toEqual([
        'run.resumed',
        'step.started:approve',
        'step.completed:approve',
        'step.started:b',
        'step.completed:b',
        'run.finished:completed',
      ]);
    }, 20_000);

    it('replays everything to a subscriber that comes after the end, and only what followed a cursor', async () => {
      const paused = await client.run(LiveApprovalReactor, { word: 'ok' });
      await client.continue(paused.runId, 'approve', 'yes');
      const all = await collect(client.watch(paused.runId));
      expect(shapes(all)).toEqual([
        'run.started',
        'step.started:a',
        'step.completed:a',
        'step.started:approve',
        'run.paused',
        'run.resumed',
        'step.started:approve',
        'step.completed:approve',
        'step.started:b',
        'step.completed:b',
        'run.finished:completed',
      ]);
      expect(await collect(client.watch(paused.runId, { after: all[5].id }))).toEqual(all.slice(6));
      // After the last event: only the end, made from storage.
      expect(shapes(await collect(client.watch(paused.runId, { after: all[10].id })))).toEqual([
        'run.finished:completed',
      ]);
    }, 20_000);

    it('stops at break, at an abort and at return(), releasing its subscription', async () => {
      const paused = await client.run(LiveApprovalReactor, { word: 'ok' });
      let last!: RunWatchEvent;
      for await (const event of client.watch(paused.runId)) {
        last = event;
        if (event.type === 'run.paused') break;
      }
      expect(subscriptions(app)).toBe(0);
      // After the pause nothing comes until the run is answered: the watches below wait.
      const controller = new AbortController();
      const aborted = client.watch(paused.runId, { signal: controller.signal, after: last.id });
      const pending = aborted.next();
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(subscriptions(app)).toBe(name === 'redis' ? 1 : 0);
      controller.abort();
      await expect(pending).resolves.toEqual({ value: undefined, done: true });
      await expect(aborted.next()).resolves.toEqual({ value: undefined, done: true });
      const returned = client.watch(paused.runId, { after: last.id });
      const waiting = returned.next();
      await new Promise((resolve) => setTimeout(resolve, 50));
      await returned.return!();
      await expect(waiting).resolves.toEqual({ value: undefined, done: true });
      expect(subscriptions(app)).toBe(0);
      // An aborted signal ends the watch before it starts.
      const gone = new AbortController();
      gone.abort();
      await expect(collect(client.watch(paused.runId, { signal: gone.signal }))).resolves.toEqual([]);
      await client.continue(paused.runId, 'approve', 'yes');
      await client.wait(paused.runId);
    }, 20_000);

    it('refuses a run that is not there, a run id or cursor that is not one, and options it cannot use', async () => {
      await expect(client.watch('no-such-run').next()).rejects.toThrow(RunNotFoundError);
      expect(() => client.watch('')).toThrow(/run id/i);
      expect(() => client.watch('r-1', { after: 'latest' })).toThrow(InvalidArgumentError);
      expect(() => client.watch('r-1', { pollMs: 0 })).toThrow(InvalidArgumentError);
      expect(() => client.watch('r-1', { signal: {} as AbortSignal })).toThrow(InvalidArgumentError);
      expect(subscriptions(app)).toBe(0);
    });
  });

  describe('without liveEvents (the default)', () => {
    let app: TestingModule;
    let client: ReactorClient;
    beforeAll(async () => {
      app = await make();
      client = app.get(ReactorClient);
    });
    afterAll(async () => {
      await app?.close();
    });

    it('yields the pause and the end only, read from storage when the run settles', async () => {
      const paused = await client.run(LiveApprovalReactor, { word: 'ok' });
      const watch = client.watch(paused.runId);
      const first = await watch.next();
      expect(first.value).toMatchObject({ type: 'run.paused', interrupts: ['approve'], id: '0' });
      const rest = collect(watch);
      await client.continue(paused.runId, 'approve', 'yes');
      expect(shapes(await rest)).toEqual(['run.finished:completed']);
      const failed = await client.start(BackgroundRollbackReactor, { word: 'no' });
      const ended = await collect(client.watch(failed.runId));
      expect(shapes(ended)).toEqual(['run.finished:failed']);
      expect((ended[0] as { error?: string }).error).toContain('card declined');
    }, 20_000);

    it('wakes wait() at the run’s end, not at its next poll', async () => {
      const started = await client.start(LiveStepsReactor, { word: 'hey' });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const waited = client.wait(started.runId, { pollMs: 60_000, timeoutMs: 10_000 });
      await new Promise((resolve) => setTimeout(resolve, 50));
      const opened = Date.now();
      app.get(Gate).open();
      await expect(waited).resolves.toMatchObject({ status: 'completed' });
      expect(Date.now() - opened).toBeLessThan(2_000);
      expect(subscriptions(app)).toBe(0);
    }, 20_000);
  });
});

describe('live runs on Redis across processes', () => {
  const { prefix } = useRedisPrefixes();

  it('wakes wait() and watch() in a process without workers when a worker elsewhere finishes the run', async () => {
    const shared = prefix('live-two');
    const worker = await createRedisApp(shared, { liveEvents: true }, { providers: [LiveStepsReactor] });
    const api = await createRedisApp(shared, { liveEvents: true, workers: false }, { providers: [LiveStepsReactor] });
    try {
      const started = await api.client.start(LiveStepsReactor, { word: 'hey' });
      const watched = collect(api.client.watch(started.runId));
      // The fallback poll is a minute away: only the run's end can wake the waiter in time.
      const waited = api.client.wait(started.runId, { pollMs: 60_000, timeoutMs: 20_000 });
      await worker.app.get(Gate).entered();
      await new Promise((resolve) => setTimeout(resolve, 50));
      const opened = Date.now();
      worker.app.get(Gate).open();
      await expect(waited).resolves.toMatchObject({ status: 'completed' });
      expect(Date.now() - opened).toBeLessThan(2_000);
      expect(shapes(await watched)).toEqual([
        'run.started',
        'step.started:a',
        'step.completed:a',
        'step.started:b',
        'step.completed:b',
        'step.started:gate',
        'step.completed:gate',
        'run.finished:completed',
      ]);
    } finally {
      await api.app.close();
      await worker.app.close();
    }
  }, 30_000);
});

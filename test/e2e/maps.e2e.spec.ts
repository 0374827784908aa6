/**
 * Map steps end to end on Redis and BullMQ, in one Nest app with workers: inline and fan-out
 * maps of the same element reactor give the same results; a fan-out map never has more than
 * `batchSize` elements in flight; rollbacks (an element failing, a later step failing, a manual
 * undo) undo every completed element, highest index first, and list every element undo that
 * failed with its map step and element index; `client.get` shows a map's progress.
 */
import { Injectable, type Type } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext, StepHandler } from '../../lib/core/definition/step';
import type { ElementOutcome, MapResults } from '../../lib/core/map/map-results';
import type { RollbackFailure, RunOutcome } from '../../lib/core/results/run-outcome';
import { failure, success, type StepOutcome } from '../../lib/core/results/step-outcome';
import type { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { Step } from '../../lib/nest/step.decorator';
import { cleanupPrefix, createTestRedis, uniquePrefix } from '../setup/redis';
import { createRedisApp, pollUntil, quitAndWait } from './e2e.fixtures';
import { reactorMatchers } from '../../lib/testing/jest';

expect.extend(reactorMatchers);

const WAIT = { timeoutMs: 15_000 };
/** Longest an element waits for the window to fill (a broken window fails the test, never hangs it). */
const HOLD_LIMIT_MS = 5_000;

interface Counters {
  inflight: number;
  peak: number;
  left: number;
  waiters: Array<() => void>;
}

/** What the elements did, in this process: executions and undos per run, in-flight counts per map. */
@Injectable()
class MapProbe {
  private readonly counters = new Map<string, Counters>();
  private readonly logs = new Map<string, string[]>();
  private readonly gates = new Map<string, { open: boolean; waiters: Array<() => void> }>();
  holdTimedOut = false;

  log(runId: string, entry: string): void {
    const list = this.logs.get(runId) ?? [];
    list.push(entry);
    this.logs.set(runId, list);
  }

  logOf(runId: string, kind?: 'run' | 'undo'): string[] {
    const list = this.logs.get(runId) ?? [];
    return kind ? list.filter((e) => e.startsWith(`${kind}:`)) : list;
  }

  /** Indices in the log entries of `kind`, in log order. */
  indices(runId: string, kind: 'run' | 'undo'): number[] {
    return this.logOf(runId, kind).map((e) => Number(e.slice(kind.length + 1)));
  }

  inflight(mapId: string): number {
    return this.counters.get(mapId)?.inflight ?? 0;
  }

  peak(mapId: string): number {
    return this.counters.get(mapId)?.peak ?? 0;
  }

  /**
   * An element starts. With `holdFor > 0` it waits until the window is full: `holdFor` elements
   * in flight, or every element not finished yet in flight (the tail of the map).
   */
  async enter(mapId: string, holdFor: number, total: number): Promise<void> {
    const c = this.countersOf(mapId);
    c.inflight++;
    c.peak = Math.max(c.peak, c.inflight);
    this.releaseIfFull(c, holdFor, total);
    if (holdFor <= 0 || this.full(c, holdFor, total)) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.holdTimedOut = true;
        resolve();
      }, HOLD_LIMIT_MS);
      c.waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  leave(mapId: string, holdFor: number, total: number): void {
    const c = this.countersOf(mapId);
    c.inflight--;
    c.left++;
    this.releaseIfFull(c, holdFor, total);
  }

  /** Elements of run `runId` with index >= their `gateFrom` wait here until {@link openGate}. */
  async gate(runId: string): Promise<void> {
    const gate = this.gateOf(runId);
    if (!gate.open) await new Promise<void>((resolve) => gate.waiters.push(resolve));
  }

  openGate(runId: string): void {
    const gate = this.gateOf(runId);
    gate.open = true;
    for (const w of gate.waiters.splice(0)) w();
  }

  private full(c: Counters, holdFor: number, total: number): boolean {
    return c.inflight >= Math.min(holdFor, total - c.left);
  }

  private releaseIfFull(c: Counters, holdFor: number, total: number): void {
    if (holdFor > 0 && this.full(c, holdFor, total)) for (const w of c.waiters.splice(0)) w();
  }

  private countersOf(mapId: string): Counters {
    let c = this.counters.get(mapId);
    if (!c) this.counters.set(mapId, (c = { inflight: 0, peak: 0, left: 0, waiters: [] }));
    return c;
  }

  private gateOf(runId: string) {
    let gate = this.gates.get(runId);
    if (!gate) this.gates.set(runId, (gate = { open: false, waiters: [] }));
    return gate;
  }
}

interface ElementArgs {
  index: number;
  total: number;
  failAt: number[];
  undoFailAt: number[];
  gateFrom: number;
  holdFor: number;
}

/** `<ownerRunId>:<step>#<index>` -> owner run id and map id. */
function idsOf(ctx: StepContext): { owner: string; mapId: string } {
  return { owner: ctx.runId.slice(0, ctx.runId.indexOf(':')), mapId: ctx.runId.slice(0, ctx.runId.lastIndexOf('#')) };
}

/** The step of a map element: `index * 10 + 1`, failing or failing to undo at chosen indices. */
@Step('e2e-map-work')
class MapWorkStep implements StepHandler<ElementArgs, number> {
  constructor(private readonly probe: MapProbe) {}

  async run(args: ElementArgs, ctx: StepContext): Promise<StepOutcome<number>> {
    const { owner, mapId } = idsOf(ctx);
    this.probe.log(owner, `run:${args.index}`);
    await this.probe.enter(mapId, args.holdFor, args.total);
    try {
      if (args.index >= args.gateFrom) await this.probe.gate(owner);
      if (args.failAt.includes(args.index))
        return failure(new Error(`element ${args.index} failed`), { retryable: false });
      return success(args.index * 10 + 1);
    } finally {
      this.probe.leave(mapId, args.holdFor, args.total);
    }
  }

  undo(_value: number, args: ElementArgs, ctx: StepContext): void {
    this.probe.log(idsOf(ctx).owner, `undo:${args.index}`);
    if (args.undoFailAt.includes(args.index)) throw new Error(`cannot undo ${args.index}`);
  }
}

@Reactor('e2e-map-element')
class MapElementReactor implements ReactorBlueprint<ElementArgs> {
  build(r: ReactorBuilder<ElementArgs>) {
    return r.step('work', MapWorkStep, {
      index: r.input('index', { type: 'number' }),
      total: r.input('total', { type: 'number' }),
      failAt: r.input('failAt', { type: 'array' }),
      undoFailAt: r.input('undoFailAt', { type: 'array' }),
      gateFrom: r.input('gateFrom', { type: 'number' }),
      holdFor: r.input('holdFor', { type: 'number' }),
    });
  }
}

interface MapInput {
  items: Array<{ index: number }>;
  total: number;
  failAt: number[];
  undoFailAt: number[];
  gateFrom: number;
  holdFor: number;
}

/** The input of a map over `count` elements. */
function input(count: number, options: Partial<Omit<MapInput, 'items' | 'total'>> = {}): MapInput {
  return {
    items: Array.from({ length: count }, (_, index) => ({ index })),
    total: count,
    failAt: [],
    undoFailAt: [],
    gateFrom: Number.MAX_SAFE_INTEGER,
    holdFor: 0,
    ...options,
  };
}

/** A reactor mapping `e2e-map-element` over `items` (step `items`), optionally failing afterwards. */
function mapReactor(
  name: string,
  options: { batchSize?: number; elementsPerJob?: number; atomic: boolean; failLater?: boolean },
): Type {
  @Reactor(name)
  class MapReactor implements ReactorBlueprint<MapInput> {
    build(r: ReactorBuilder<MapInput>) {
      const refs = {
        total: r.input('total', { type: 'number' }),
        failAt: r.input('failAt', { type: 'array' }),
        undoFailAt: r.input('undoFailAt', { type: 'array' }),
        gateFrom: r.input('gateFrom', { type: 'number' }),
        holdFor: r.input('holdFor', { type: 'number' }),
      };
      const mapped = r.map('items', {
        source: r.input('items', { type: 'array' }),
        element: MapElementReactor,
        inputs: (item) => ({ index: item.path('index'), ...refs }),
        atomic: options.atomic,
        fanOut: options.batchSize
          ? { batchSize: options.batchSize, elementsPerJob: options.elementsPerJob ?? 1 }
          : undefined,
      });
      if (!options.failLater) return mapped;
      return r.step(
        'after',
        () => failure(new Error('later step broke'), { retryable: false }),
        {},
        { waitFor: [mapped] },
      );
    }
  }
  return MapReactor;
}

const BATCH = 4;
const CHUNKED = 6;
const reactors = {
  inlineAtomic: mapReactor('e2e-map-inline-atomic', { atomic: true }),
  inlineLenient: mapReactor('e2e-map-inline-lenient', { atomic: false }),
  inlineLater: mapReactor('e2e-map-inline-later', { atomic: true, failLater: true }),
  fanAtomic: mapReactor('e2e-map-fan-atomic', { batchSize: BATCH, atomic: true }),
  fanLenient: mapReactor('e2e-map-fan-lenient', { batchSize: BATCH, atomic: false }),
  fanLater: mapReactor('e2e-map-fan-later', { batchSize: BATCH, atomic: true, failLater: true }),
  // Jobs of three elements each (claimed, run and settled together), six elements in flight.
  fanAtomicChunked: mapReactor('e2e-map-fan-atomic-chunked', { batchSize: CHUNKED, elementsPerJob: 3, atomic: true }),
  fanLenientChunked: mapReactor('e2e-map-fan-lenient-chunked', {
    batchSize: CHUNKED,
    elementsPerJob: 3,
    atomic: false,
  }),
  fanLaterChunked: mapReactor('e2e-map-fan-later-chunked', {
    batchSize: CHUNKED,
    elementsPerJob: 3,
    atomic: true,
    failLater: true,
  }),
  // batchSize 1: element rollback jobs run one at a time, so their order is fully determined.
  fan1Atomic: mapReactor('e2e-map-fan1-atomic', { batchSize: 1, atomic: true }),
  fan1Later: mapReactor('e2e-map-fan1-later', { batchSize: 1, atomic: true, failLater: true }),
};

/** Each element's outcome, with failures reduced to their message. */
async function outcomesOf(value: unknown): Promise<Array<Record<string, unknown>>> {
  const out: Array<Record<string, unknown>> = [];
  for await (const o of value as MapResults<number>) out.push(brief(o));
  return out;
}

function brief(o: ElementOutcome<number>): Record<string, unknown> {
  return o.status === 'failed'
    ? { index: o.index, status: o.status, error: o.failure.errorMessage, code: o.failure.code }
    : { ...o };
}

function expectedValues(count: number): number[] {
  return Array.from({ length: count }, (_, i) => i * 10 + 1);
}

describe('maps on Redis and BullMQ (e2e)', () => {
  const prefix = uniquePrefix('e2e-maps');
  let redis: Redis;
  let app: TestingModule;
  let client: ReactorClient;
  let probe: MapProbe;

  beforeAll(async () => {
    redis = createTestRedis();
    ({ app, client } = await createRedisApp(
      prefix,
      { workerConcurrency: 12, sweeper: { enabled: false } },
      { providers: [MapProbe, MapWorkStep, MapElementReactor, ...Object.values(reactors)] },
    ));
    probe = app.get(MapProbe);
  });

  afterAll(async () => {
    await app?.close();
    await cleanupPrefix(redis, prefix);
    await quitAndWait(redis);
  });

  /** Run to the end: inline maps finish in the caller, fan-out maps in the workers. */
  async function runToEnd(reactor: Type, data: MapInput): Promise<RunOutcome> {
    const started = await client.run(reactor as never, data as never);
    return started.status === 'dispatched' ? client.wait(started.runId, WAIT) : started;
  }

  describe('inline and fan-out give the same results', () => {
    it('atomic: the values of every element, in index order', async () => {
      const inline = await runToEnd(reactors.inlineAtomic, input(13));
      const fanOut = await runToEnd(reactors.fanAtomic, input(13));

      expect(inline.status).toBe('completed');
      expect(fanOut.status).toBe('completed');
      if (inline.status !== 'completed' || fanOut.status !== 'completed') return;
      expect(await (inline.value as MapResults<number>).values()).toEqual(expectedValues(13));
      expect(await (fanOut.value as MapResults<number>).values()).toEqual(expectedValues(13));
      expect(await outcomesOf(fanOut.value)).toEqual(await outcomesOf(inline.value));
      expect(probe.indices(fanOut.runId, 'run').sort((a, b) => a - b)).toEqual([...Array(13).keys()]);
    });

    it('non-atomic: every element runs; failed elements are reported by index', async () => {
      const data = input(12, { failAt: [3, 7] });
      const inline = await runToEnd(reactors.inlineLenient, data);
      const fanOut = await runToEnd(reactors.fanLenient, data);

      expect(inline.status).toBe('completed');
      expect(fanOut.status).toBe('completed');
      if (inline.status !== 'completed' || fanOut.status !== 'completed') return;
      const outcomes = await outcomesOf(inline.value);
      expect(outcomes).toEqual(
        Array.from({ length: 12 }, (_, index) =>
          [3, 7].includes(index)
            ? { index, status: 'failed', error: `element ${index} failed`, code: 'STEP_FAILED' }
            : { index, status: 'completed', value: index * 10 + 1 },
        ),
      );
      expect(await outcomesOf(fanOut.value)).toEqual(outcomes);
      expect(probe.logOf(inline.runId, 'undo')).toEqual([]);
      expect(probe.logOf(fanOut.runId, 'undo')).toEqual([]);
      const [inlineView, fanOutView] = [await client.get(inline.runId), await client.get(fanOut.runId)];
      const progress = { total: 12, dispatched: 12, settled: 12, succeeded: 10, failed: 2, done: true };
      expect(inlineView?.maps.items).toMatchObject(progress);
      expect(fanOutView?.maps.items).toMatchObject(progress);
    });
  });

  describe('element jobs of several elements give the same results', () => {
    it('atomic: the values of every element, in index order, each element run once', async () => {
      const inline = await runToEnd(reactors.inlineAtomic, input(14));
      const chunked = await runToEnd(reactors.fanAtomicChunked, input(14));

      expect(chunked.status).toBe('completed');
      if (inline.status !== 'completed' || chunked.status !== 'completed') return;
      expect(await (chunked.value as MapResults<number>).values()).toEqual(expectedValues(14));
      expect(await outcomesOf(chunked.value)).toEqual(await outcomesOf(inline.value));
      expect(probe.indices(chunked.runId, 'run').sort((a, b) => a - b)).toEqual([...Array(14).keys()]);
    });

    it('non-atomic: failed elements of a chunk are reported by index, the others complete', async () => {
      const data = input(12, { failAt: [1, 4, 5] });
      const inline = await runToEnd(reactors.inlineLenient, data);
      const chunked = await runToEnd(reactors.fanLenientChunked, data);

      expect(chunked.status).toBe('completed');
      if (inline.status !== 'completed' || chunked.status !== 'completed') return;
      expect(await outcomesOf(chunked.value)).toEqual(await outcomesOf(inline.value));
      expect((await client.get(chunked.runId))?.maps.items).toMatchObject({
        total: 12,
        settled: 12,
        succeeded: 9,
        failed: 3,
        done: true,
      });
    });

    it('atomic: an element failing in a chunk fails the map and every completed element is undone', async () => {
      const outcome = await runToEnd(reactors.fanAtomicChunked, input(12, { failAt: [4] }));

      expect(outcome.status).toBe('failed');
      if (outcome.status !== 'failed') return;
      expect(outcome.failure).toMatchObject({
        stepName: 'items',
        errorMessage: 'element 4 failed',
        cause: { stepName: 'work', elementIndex: 4 },
      });
      // Every element that completed was undone, and only those.
      expect(probe.indices(outcome.runId, 'undo').sort((a, b) => a - b)).toEqual(
        probe
          .indices(outcome.runId, 'run')
          .filter((i) => i !== 4)
          .sort((a, b) => a - b),
      );
    });

    it('a later step failing: each element of every chunk undone once', async () => {
      const outcome = await runToEnd(reactors.fanLaterChunked, input(13));

      expect(outcome.status).toBe('failed');
      if (outcome.status !== 'failed') return;
      expect([...probe.indices(outcome.runId, 'undo')].sort((a, b) => a - b)).toEqual([...Array(13).keys()]);
    });

    it('back-pressure: never more than batchSize elements in flight, whatever the chunks', async () => {
      const outcome = await runToEnd(reactors.fanAtomicChunked, input(30, { holdFor: CHUNKED }));

      expect(outcome.status).toBe('completed');
      if (outcome.status !== 'completed') return;
      expect(await (outcome.value as MapResults<number>).values()).toEqual(expectedValues(30));
      expect(probe.peak(`${outcome.runId}:items`)).toBe(CHUNKED);
      expect(probe.inflight(`${outcome.runId}:items`)).toBe(0);
      expect(probe.holdTimedOut).toBe(false);
    });
  });

  it('back-pressure: a fan-out map never has more than batchSize elements in flight', async () => {
    // Each element waits until the window is full, so the window is seen full, and never larger.
    const outcome = await runToEnd(reactors.fanAtomic, input(40, { holdFor: BATCH }));

    expect(outcome.status).toBe('completed');
    if (outcome.status !== 'completed') return;
    expect(await (outcome.value as MapResults<number>).values()).toEqual(expectedValues(40));
    expect(probe.peak(`${outcome.runId}:items`)).toBe(BATCH);
    expect(probe.inflight(`${outcome.runId}:items`)).toBe(0);
    expect(probe.holdTimedOut).toBe(false);
  });

  describe('rollback: highest index first, element undo failures listed with map step and index', () => {
    const undoFailure = (index: number): RollbackFailure => ({
      step: 'work',
      kind: 'undo',
      reason: 'raised',
      message: `cannot undo ${index}`,
      reactorName: 'e2e-map-element',
      mapStep: 'items',
      elementIndex: index,
    });

    it('an atomic map whose element fails: the completed elements are undone, inline and fan-out alike', async () => {
      const data = input(8, { failAt: [5], undoFailAt: [2] });
      const inline = await runToEnd(reactors.inlineAtomic, data);
      const fanOut = await runToEnd(reactors.fan1Atomic, data);

      for (const outcome of [inline, fanOut]) {
        expect(outcome.status).toBe('failed');
        if (outcome.status !== 'failed') return;
        expect(outcome.failure).toMatchObject({ code: 'STEP_FAILED', errorMessage: 'element 5 failed' });
        expect(outcome.failure.rollbackFailures).toEqual([undoFailure(2)]);
        expect(probe.indices(outcome.runId, 'run')).toEqual([0, 1, 2, 3, 4, 5]);
        expect(probe.indices(outcome.runId, 'undo')).toEqual([4, 3, 2, 1, 0]);
      }
    });

    it('a later step failing after the map completed undoes every element, inline and fan-out alike', async () => {
      const data = input(6, { undoFailAt: [1, 4] });
      const inline = await runToEnd(reactors.inlineLater, data);
      const fanOut = await runToEnd(reactors.fan1Later, data);

      for (const outcome of [inline, fanOut]) {
        expect(outcome.status).toBe('failed');
        if (outcome.status !== 'failed') return;
        expect(outcome.failure).toMatchObject({ stepName: 'after', errorMessage: 'later step broke' });
        expect(outcome.failure.rollbackFailures).toEqual([undoFailure(4), undoFailure(1)]);
        expect(probe.indices(outcome.runId, 'undo')).toEqual([5, 4, 3, 2, 1, 0]);
      }
    });

    it('a later step failing after a fan-out map with a wider window: each element undone once', async () => {
      const outcome = await runToEnd(reactors.fanLater, input(15, { undoFailAt: [9, 3] }));

      expect(outcome.status).toBe('failed');
      if (outcome.status !== 'failed') return;
      expect(outcome.failure.rollbackFailures).toEqual([undoFailure(9), undoFailure(3)]);
      const undone = probe.indices(outcome.runId, 'undo');
      expect([...undone].sort((a, b) => a - b)).toEqual([...Array(15).keys()]);
      // Highest first, batchSize at a time: the element of rank r (0 = highest) is dispatched only
      // after r - BATCH + 1 element undos reported, so it is never undone earlier than that.
      for (const [position, index] of undone.entries()) expect(14 - index).toBeLessThanOrEqual(position + BATCH - 1);
      expect((await client.get(outcome.runId))?.status).toBe('failed');
    });

    it('client.undo of a completed run: elements undone highest index first, inline and fan-out alike', async () => {
      for (const reactor of [reactors.inlineAtomic, reactors.fan1Atomic]) {
        const completed = await runToEnd(reactor, input(7, { undoFailAt: [3] }));
        expect(completed).toHaveCompleted();
        const undone = await client.undo(completed.runId, { timeoutMs: WAIT.timeoutMs });
        expect(probe.indices(completed.runId, 'undo')).toEqual([6, 5, 4, 3, 2, 1, 0]);
        expect(undone).toHaveRollbackFailure('work', { kind: 'undo', mapStep: 'items', elementIndex: 3 });
        // Read back from Redis: the stored run keeps the rollback failure.
        expect(await client.get(completed.runId)).toHaveRollbackFailure('work', {
          reason: 'raised',
          message: 'cannot undo 3',
          elementIndex: 3,
        });
      }
    });
  });

  it('client.get shows a fan-out map’s progress while it runs and at the end', async () => {
    // Elements 0..5 run freely (element 2 fails; the map is not atomic); 6.. wait at the gate.
    const started = await client.run(reactors.fanLenient as never, input(20, { failAt: [2], gateFrom: 6 }) as never);
    expect(started.status).toBe('dispatched');
    const runId = started.runId;
    await pollUntil(async () => (await client.get(runId))?.maps.items?.settled === 6, 10_000);
    await pollUntil(() => probe.inflight(`${runId}:items`) === BATCH, 10_000);

    const running = await client.get(runId);
    expect(running?.status).toBe('running');
    expect(running?.maps.items).toEqual({
      total: 20,
      dispatched: 6 + BATCH,
      settled: 6,
      succeeded: 5,
      failed: 1,
      halted: 0,
      skipped: 0,
      done: false,
    });

    probe.openGate(runId);
    const done = await client.wait(runId, WAIT);
    expect(done.status).toBe('completed');
    expect((await client.get(runId))?.maps.items).toEqual({
      total: 20,
      dispatched: 20,
      settled: 20,
      succeeded: 19,
      failed: 1,
      halted: 0,
      skipped: 0,
      done: true,
    });
  });

  it('client.undo of a completed run with a fan-out map undoes every element; the run ends cancelled', async () => {
    const completed = await runToEnd(reactors.fanAtomic, input(12, { undoFailAt: [5] }));
    expect(completed.status).toBe('completed');
    const runId = completed.runId;
    expect(probe.logOf(runId, 'undo')).toEqual([]);

    // undo waits for the element rollback jobs: it resolves cancelled, as on the embedded runtime.
    const final = await client.undo(runId, { timeoutMs: WAIT.timeoutMs });

    expect(final.status).toBe('cancelled');
    if (final.status !== 'cancelled') return;
    expect(final.rollbackFailures).toEqual([
      {
        step: 'work',
        kind: 'undo',
        reason: 'raised',
        message: 'cannot undo 5',
        reactorName: 'e2e-map-element',
        mapStep: 'items',
        elementIndex: 5,
      },
    ]);
    expect(probe.indices(runId, 'undo').sort((a, b) => a - b)).toEqual([...Array(12).keys()]);
    expect((await client.get(runId))?.status).toBe('cancelled');
  });
});

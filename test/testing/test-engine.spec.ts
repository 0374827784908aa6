import { Test, type TestingModule } from '@nestjs/testing';
import {
  CoordinationContendedError,
  defineReactor,
  success,
  type MapResults,
  type ReactorBlueprint,
  type ReactorBuilder,
  type ReactorOptions,
  type RunOutcome,
} from '../../lib';
import { Reactor } from '../../lib/nest/reactor.decorator';
import {
  MemoryCoordinationStore,
  MemoryFlowStore,
  MemoryInterruptStore,
  MemoryLockManager,
  MemoryMapStore,
  MemoryReactorStorage,
  ReactorTestingKit,
  ReactorTestingModule,
  createMemoryAdapters,
  createTestEngine,
} from '../../lib/testing';
import { deferred } from '../core/harness';
import { CapturingLogger } from '../nest/fixtures';

type Input = { account: string; items: number[] };

/** Holds the first step of a run until the scenario opens it, and says when a run reached it. */
let gate = { entered: deferred(), open: Promise.resolve() };

function buildElement(r: ReactorBuilder<{ n: number }>) {
  return r.step('double', ({ n }: { n: number }) => success(n * 2), { n: r.input('n', { type: 'number' }) });
}

/** A fan-out map (the map store), then an interrupt (the interrupt store), under a lock per account (coordination). */
function buildParity(r: ReactorBuilder<Input>) {
  const account = r.input('account', { type: 'string' });
  const items = r.step(
    'prepare',
    async ({ items: list }: { items: number[] }) => {
      gate.entered.resolve();
      await gate.open;
      return success(list);
    },
    { items: r.input('items', { type: 'array' }) },
  );
  const sum = r.map('double-all', {
    source: items,
    element: 'kit-parity-element',
    inputs: (n) => ({ n }),
    fanOut: { batchSize: 2 },
    collect: async (results: MapResults<number>) => (await results.values()).reduce((a, b) => a + b, 0),
  });
  const approval = r.interrupt<{ by: string }, { account: string }>('approve', {
    args: { account },
    waitFor: [sum],
    correlationId: ({ args }) => `account-${args.account}`,
    payload: { by: { type: 'string', minLength: 1 } },
  });
  return r.step(
    'total',
    ({ sum: total, approval: a }: { sum: number; approval: { by: string } }) => success(`${total} by ${a.by}`),
    { sum, approval },
  );
}

const OPTIONS: ReactorOptions = { lock: { key: (i) => `account:${String(i.account)}` } };

@Reactor('kit-parity-element')
class ParityElementReactor implements ReactorBlueprint<{ n: number }> {
  build(r: ReactorBuilder<{ n: number }>) {
    return buildElement(r);
  }
}

@Reactor('kit-parity', OPTIONS)
class ParityReactor implements ReactorBlueprint<Input> {
  build(r: ReactorBuilder<Input>) {
    return buildParity(r);
  }
}

/** The operations the scenario needs, on either runtime. */
interface Runner {
  run(input: Input): Promise<RunOutcome>;
  wait(runId: string): Promise<RunOutcome>;
  continueByCorrelationId(id: string, payload: unknown): Promise<unknown>;
}

/** Map, interrupt and lock, in the order a user drives them; what each call answered. */
async function scenario(runner: Runner): Promise<unknown[]> {
  const seen: unknown[] = [];
  const open = deferred();
  gate = { entered: deferred(), open: open.promise };
  const running = runner.run({ account: 'a', items: [1, 2, 3] });
  await gate.entered.promise;
  // While it runs, the run holds its account's lock: another run on it is refused.
  const refused = await runner.run({ account: 'a', items: [] }).catch((e: unknown) => e);
  seen.push(refused instanceof CoordinationContendedError ? refused.code : refused);
  open.resolve();
  const first = await running;
  seen.push(first.status);
  const paused = await runner.wait(first.runId);
  seen.push({ status: paused.status, waitingFor: paused.status === 'paused' ? paused.stepName : undefined });
  await runner.continueByCorrelationId('account-a', { by: 'alice' });
  const done = await runner.wait(first.runId);
  seen.push({ status: done.status, value: done.status === 'completed' ? done.value : undefined });
  // The lock went with the run: the account takes a new one.
  const again = await runner.run({ account: 'a', items: [4] });
  seen.push((again.status === 'paused' ? again : await runner.wait(again.runId)).status);
  return seen;
}

const EXPECTED = [
  'LOCK_CONTENDED',
  'dispatched',
  { status: 'paused', waitingFor: 'approve' },
  { status: 'completed', value: '12 by alice' },
  'paused',
];

describe('createTestEngine(): the embedded runtime of the module', () => {
  let moduleRef: TestingModule | undefined;
  afterEach(async () => {
    await moduleRef?.close();
    moduleRef = undefined;
  });

  it('runs a reactor with a fan-out map, an interrupt and a lock as ReactorTestingModule does', async () => {
    moduleRef = await Test.createTestingModule({
      imports: [ReactorTestingModule.forRoot()],
      providers: [ParityReactor, ParityElementReactor],
    })
      .setLogger(new CapturingLogger())
      .compile();
    await moduleRef.init();
    const kit = moduleRef.get(ReactorTestingKit);
    const onModule = await scenario({
      run: (input) => kit.client.run(ParityReactor, input),
      wait: (runId) => kit.client.wait(runId),
      continueByCorrelationId: (id, payload) =>
        kit.client.continueByCorrelationId(ParityReactor, 'approve', id, payload),
    });

    const { engine } = createTestEngine();
    engine.register(defineReactor('kit-parity-element', buildElement));
    const def = defineReactor('kit-parity', buildParity, OPTIONS);
    engine.register(def);
    const onEngine = await scenario({
      run: (input) => engine.run(def, input),
      wait: (runId) => engine.wait(runId),
      continueByCorrelationId: (id, payload) => engine.continueByCorrelationId('kit-parity', 'approve', id, payload),
    });

    expect(onModule).toEqual(EXPECTED);
    expect(onEngine).toEqual(onModule);
  });

  it('hands the test the memory adapters it runs on, the classes of which nest-reactor/testing exports', async () => {
    const { engine, storage, locks, maps, interrupts, coordination, flow } = createTestEngine();
    expect(storage).toBeInstanceOf(MemoryReactorStorage);
    expect(locks).toBeInstanceOf(MemoryLockManager);
    expect(maps).toBeInstanceOf(MemoryMapStore);
    expect(interrupts).toBeInstanceOf(MemoryInterruptStore);
    expect(coordination).toBeInstanceOf(MemoryCoordinationStore);
    expect(flow).toBeInstanceOf(MemoryFlowStore);
    const def = defineReactor('kit-stored', (r: ReactorBuilder<object>) => r.step('one', () => success(1), {}));
    const outcome = await engine.run(def, {});
    expect((await storage.load(outcome.runId))?.status).toBe('completed');

    // The same adapters, built by hand, make an engine of a test's own.
    const own = createMemoryAdapters();
    expect(Object.keys(own).sort()).toEqual(['coordination', 'flow', 'interrupts', 'locks', 'maps', 'storage']);
  });
});

import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { ConfigurationError, failure, success, type ReactorBuilder, type ReactorBlueprint } from '../../lib';
import { REACTOR_RUNTIME, type ReactorRuntime } from '../../lib/config';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { Step } from '../../lib/nest/step.decorator';
import { ReactorTestingKit, ReactorTestingModule, TestClock } from '../../lib/testing';
import { reactorMatchers } from '../../lib/testing/jest';
import { Bank, CallLog, CapturingLogger, ChargeStep, ORDER_PROVIDERS, OrderReactor } from '../nest/fixtures';

expect.extend(reactorMatchers);

const order = { sku: 'sku-1', amount: 42, country: 'FR', card: '4242-4242' };

/** Fails until told otherwise; counts its calls. */
@Injectable()
class Flakiness {
  failuresLeft = 0;
  calls = 0;
}

@Step('flaky-sync')
class FlakySync {
  constructor(private readonly flakiness: Flakiness) {}
  run() {
    this.flakiness.calls++;
    return this.flakiness.failuresLeft-- > 0 ? failure('not yet') : success('synced');
  }
}

/** Runs in a worker, retried with backoff there: each retry is a delayed job, a timer on the test clock. */
@Reactor('background-sync', { background: { all: true } })
class BackgroundSyncReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    return r.step('sync', FlakySync, {}, { retries: { maxAttempts: 3, backoff: 'fixed', baseDelayMs: 60_000 } });
  }
}

async function compile(
  configure: (builder: ReturnType<typeof Test.createTestingModule>) => ReturnType<typeof Test.createTestingModule> = (
    b,
  ) => b,
  options: Parameters<typeof ReactorTestingModule.forRoot>[0] = {},
): Promise<TestingModule> {
  const moduleRef = await configure(
    Test.createTestingModule({
      imports: [ReactorTestingModule.forRoot(options)],
      providers: [...ORDER_PROVIDERS, Flakiness, FlakySync, BackgroundSyncReactor],
    }).setLogger(new CapturingLogger()),
  ).compile();
  await moduleRef.init();
  return moduleRef;
}

describe('ReactorTestingModule', () => {
  let moduleRef: TestingModule | undefined;

  afterEach(async () => {
    await moduleRef?.close();
    moduleRef = undefined;
  });

  it('forRoot() runs the embedded runtime on the kit clock and records every lifecycle event', async () => {
    const start = Date.UTC(2030, 5, 1);
    moduleRef = await compile(undefined, { clock: new TestClock(start) });
    const kit = moduleRef.get(ReactorTestingKit);

    expect(moduleRef.get<ReactorRuntime>(REACTOR_RUNTIME).kind).toBe('embedded');
    expect(moduleRef.get(TestClock)).toBe(kit.clock);
    const outcome = await kit.client.run(OrderReactor, order);

    expect(outcome).toHaveCompleted('sh-FR');
    expect(outcome.trace.every((e) => e.at === start)).toBe(true);
    expect(kit.sequenceOf(outcome.runId, ['step.complete'])).toEqual([
      'step.complete:reserve',
      'step.complete:charge',
      'step.complete:ship',
    ]);
    expect(kit.events.map((e) => e.type)).toEqual(expect.arrayContaining(['reactor.start', 'reactor.complete']));
  });

  it('forRoot() refuses the options that would leave the embedded runtime or its clock', () => {
    expect(() => ReactorTestingModule.forRoot({ redis: { url: 'redis://x' } } as never)).toThrow(ConfigurationError);
    expect(() => ReactorTestingModule.forRoot({ redis: { url: 'redis://x' } } as never)).toThrow(
      /'redis' option is not for the testing module/,
    );
    expect(() => ReactorTestingModule.forRoot({ clock: { now: () => 0, sleep: async () => {} } } as never)).toThrow(
      /'clock' option/,
    );
    expect(() => ReactorTestingModule.forRoot({ nope: 1 } as never)).toThrow(/nope/);
  });

  it('kit.mockStep replaces one step on the instance the reactors use, and restoreSteps puts it back', async () => {
    moduleRef = await compile();
    const kit = moduleRef.get(ReactorTestingKit);
    const log = moduleRef.get(CallLog);

    kit.mockStep(ChargeStep, { run: () => failure('card declined', { retryable: false }) });
    const declined = await kit.client.run(OrderReactor, order);
    expect(declined).toHaveFailedAt('charge');
    expect(declined).toHaveRolledBack(['reserve']);
    expect(log.calls).toEqual(['warehouse.reserve:sku-1', 'warehouse.release:res-sku-1']);

    kit.restoreSteps();
    expect(await kit.client.run(OrderReactor, order)).toHaveCompleted();
    expect(log.calls).toContain('bank.charge:42');
  });

  it('kit.mockStep refuses a class that is not a @Step provider of the module, saying which', async () => {
    moduleRef = await compile();
    const kit = moduleRef.get(ReactorTestingKit);
    expect(() => kit.mockStep(Bank as never, { run: () => success(1) })).toThrow(/Bank is not a @Step class/);

    @Step('never-provided')
    class NeverProvided {
      run() {
        return success(1);
      }
    }
    expect(() => kit.mockStep(NeverProvided, { run: () => success(2) })).toThrow(/no provider NeverProvided/);
  });

  it('overrideProvider(StepClass).useValue(fake) replaces the step for the whole module (discovery follows the token)', async () => {
    const charged: number[] = [];
    moduleRef = await compile((b) =>
      b.overrideProvider(ChargeStep).useValue({
        run: ({ amount }: { amount: number }) => (charged.push(amount), success(`fake-${amount}`)),
      }),
    );
    const kit = moduleRef.get(ReactorTestingKit);

    const outcome = await kit.client.run(OrderReactor, order);

    expect(outcome).toHaveCompleted('sh-FR');
    expect(outcome.results.charge).toBe('fake-42');
    expect(charged).toEqual([42]);
    expect(moduleRef.get(CallLog).calls).not.toContain('bank.charge:42');
  });

  it('overrideProvider(StepClass).useClass(Undecorated) works too', async () => {
    class DecliningCharge {
      run() {
        return failure('declined', { retryable: false });
      }
    }
    moduleRef = await compile((b) => b.overrideProvider(ChargeStep).useClass(DecliningCharge));
    const outcome = await moduleRef.get(ReactorTestingKit).client.run(OrderReactor, order);
    expect(outcome).toHaveFailedAt('charge');
  });

  it('a delayed job is a timer: a background retry runs when kit.advance reaches it, not before', async () => {
    moduleRef = await compile();
    const kit = moduleRef.get(ReactorTestingKit);
    const flakiness = moduleRef.get(Flakiness);
    flakiness.failuresLeft = 1;

    const started = await kit.client.start(BackgroundSyncReactor, {});
    await kit.idle();
    expect(flakiness.calls).toBe(1);
    expect(kit.clock.pendingTimers).toBe(1);
    expect((await kit.client.get(started.runId))?.status).not.toBe('completed');

    await kit.advance(59_999);
    expect(flakiness.calls).toBe(1);

    await kit.advance(1);
    expect(flakiness.calls).toBe(2);
    const done = await kit.client.wait(started.runId);
    expect(done).toHaveCompleted('synced');
    expect(done).toHaveRetried('sync', 1);
  });

  it('kit.runAllTimers runs every timer in time order until none is left', async () => {
    moduleRef = await compile();
    const kit = moduleRef.get(ReactorTestingKit);
    moduleRef.get(Flakiness).failuresLeft = 2;
    const before = kit.clock.now();

    const started = await kit.client.start(BackgroundSyncReactor, {});
    await kit.runAllTimers();

    expect(kit.clock.pendingTimers).toBe(0);
    expect(kit.clock.now() - before).toBe(120_000);
    const done = await kit.client.wait(started.runId);
    expect(done).toHaveCompleted();
    expect(done).toHaveRetried('sync', 2);
    expect(kit.sequenceOf(started.runId, ['step.retry'])).toEqual(['step.retry:sync', 'step.retry:sync']);
  });

  it('kit.advance refuses a negative or non-numeric time', async () => {
    moduleRef = await compile();
    const kit = moduleRef.get(ReactorTestingKit);
    await expect(kit.advance(-1)).rejects.toThrow(/milliseconds >= 0/);
    await expect(kit.advance(Number.NaN)).rejects.toThrow(ConfigurationError);
  });
});

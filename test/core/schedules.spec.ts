/**
 * Schedules (issue 23) on the embedded runtime, through `client.schedules` with the testing kit's
 * TestClock: a tick fires when the test moves time. Declared (`@Reactor({ schedule })`) and
 * upserted schedules start one run per tick (run id `<schedule id>@<due ms>`), `overlap: 'skip'`
 * drops a tick while the previous run is live (paused or running), one late tick after time jumps
 * several intervals, pause / resume / remove / trigger, arguments
 * checked; and the engine-side `Schedules` starts nothing twice for a tick handled twice.
 */
import 'reflect-metadata';
import { Test, type TestingModule } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import { success } from '../../lib/core/results/step-outcome';
import { Schedules, scheduledRunId } from '../../lib/core/engine/schedules';
import { ScheduleNotFoundError } from '../../lib/core/errors';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { ReactorTestingKit, ReactorTestingModule } from '../../lib/testing';
import { TestClock } from '../../lib/testing/test-clock';
import { MemoryScheduleStore } from '../../lib/storage/memory/memory-schedule.store';
import { InProcessScheduleTicker } from '../../lib/runtime/in-process-scheduler';
import { CapturingLogger } from '../nest/fixtures';

const START = Date.UTC(2026, 0, 1); // the TestClock's default start
const HOUR = 3_600_000;

@Reactor('sch-report', { schedule: { cron: '0 2 * * *', tz: 'Europe/Paris', input: { scope: 'all' } } })
class NightlyReport implements ReactorBlueprint<{ scope: string }> {
  build(r: ReactorBuilder<{ scope: string }>) {
    const scope = r.input('scope', { type: 'string' });
    return r.step('report', ({ scope: s }: { scope: string }) => success(`report of ${s}`), { scope });
  }
}

@Reactor('sch-bill')
class BillTenant implements ReactorBlueprint<{ tenant: string }> {
  build(r: ReactorBuilder<{ tenant: string }>) {
    const tenant = r.input('tenant', { type: 'string' });
    return r.step('bill', ({ tenant: t }: { tenant: string }) => success(`billed ${t}`), { tenant });
  }
}

/** Waits at an interrupt: a live run until the test answers it. */
@Reactor('sch-approve')
class ApproveBatch implements ReactorBlueprint<Record<string, never>> {
  build(r: ReactorBuilder<Record<string, never>>) {
    return r.interrupt('go');
  }
}

/** Its step runs until the test opens `gate`: a run that is `running` for as long as the test likes. */
const gate = { entered: 0, open: () => undefined as void, opened: Promise.resolve() };
function closeGate(): void {
  gate.entered = 0;
  gate.opened = new Promise<void>((resolve) => (gate.open = resolve));
}
@Reactor('sch-slow')
class SlowJob implements ReactorBlueprint<Record<string, never>> {
  build(r: ReactorBuilder<Record<string, never>>) {
    return r.step(
      'work',
      async () => {
        gate.entered++;
        await gate.opened;
        return success('done');
      },
      {},
    );
  }
}

/** Until `condition` holds, letting the event loop turn (no time passes on the TestClock). */
async function turnsUntil(condition: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; !(await condition()); i++) {
    if (i > 10_000) throw new Error('condition not met');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('schedules (embedded runtime, TestClock)', () => {
  let moduleRef: TestingModule;
  let kit: ReactorTestingKit;

  beforeEach(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [ReactorTestingModule.forRoot()],
      providers: [NightlyReport, BillTenant, ApproveBatch, SlowJob],
    })
      .setLogger(new CapturingLogger())
      .compile();
    await moduleRef.init();
    kit = moduleRef.get(ReactorTestingKit);
  });

  afterEach(async () => {
    await moduleRef.close();
  });

  const runIds = async (reactor: string) =>
    (await kit.client.list({ reactor, limit: 500 })).runs.map((run) => run.runId).sort();

  it('a declared schedule is listed under its reactor name and starts one run at each cron tick, in its time zone', async () => {
    const [view] = await kit.client.schedules.list();
    // 02:00 in Paris on 2026-01-01 is 01:00 UTC.
    const first = START + HOUR;
    expect(view).toMatchObject({
      id: 'sch-report',
      reactor: 'sch-report',
      cron: '0 2 * * *',
      tz: 'Europe/Paris',
      declared: true,
      paused: false,
      overlap: 'skip',
      nextTickAt: first,
    });
    expect(view.lastRun).toBeUndefined();
    await kit.advance(HOUR - 1);
    expect(await runIds('sch-report')).toEqual([]);
    await kit.advance(1);
    await kit.advance(24 * HOUR);
    expect(await runIds('sch-report')).toEqual([
      scheduledRunId('sch-report', first),
      scheduledRunId('sch-report', first + 24 * HOUR),
    ]);
    const run = await kit.client.get(scheduledRunId('sch-report', first));
    expect(run).toMatchObject({ status: 'completed', inputs: { scope: 'all' } });
    const [after] = await kit.client.schedules.list();
    expect(after.lastRun).toEqual({
      runId: scheduledRunId('sch-report', first + 24 * HOUR),
      at: first + 24 * HOUR,
      status: 'completed',
    });
    expect(after.nextTickAt).toBe(first + 48 * HOUR);
  });

  it('an upserted everyMs schedule ticks at once, then every interval, with its input', async () => {
    const view = await kit.client.schedules.upsert({
      id: 'billing:acme',
      reactor: BillTenant,
      everyMs: 1_000,
      input: { tenant: 'acme' },
    });
    expect(view).toMatchObject({ id: 'billing:acme', reactor: 'sch-bill', everyMs: 1_000, declared: false });
    await kit.advance(3_000);
    expect(await runIds('sch-bill')).toEqual(
      [0, 1_000, 2_000, 3_000].map((ms) => scheduledRunId('billing:acme', START + ms)).sort(),
    );
    const run = await kit.client.get(scheduledRunId('billing:acme', START + 2_000));
    expect(run).toMatchObject({ status: 'completed', inputs: { tenant: 'acme' }, value: 'billed acme' });
    expect(await kit.client.schedules.get('billing:acme')).toMatchObject({ nextTickAt: START + 4_000 });
  });

  it("overlap 'skip' drops a tick while the last run is live; 'allow' starts every tick", async () => {
    await kit.client.schedules.upsert({ id: 'approvals', reactor: 'sch-approve', everyMs: 1_000 });
    await kit.advance(2_000);
    const first = scheduledRunId('approvals', START);
    expect(await runIds('sch-approve')).toEqual([first]);
    expect(await kit.client.schedules.get('approvals')).toMatchObject({
      lastTick: { at: START + 2_000, skipped: 'overlap', runId: first },
      lastRun: { runId: first, at: START, status: 'paused' },
    });
    await kit.client.continue(first, 'go', 'ok');
    await kit.advance(1_000);
    expect(await runIds('sch-approve')).toEqual([first, scheduledRunId('approvals', START + 3_000)].sort());

    await kit.client.schedules.upsert({ id: 'approvals', reactor: 'sch-approve', everyMs: 1_000, overlap: 'allow' });
    const before = (await runIds('sch-approve')).length;
    await kit.advance(2_000);
    // Same timing: the next tick stays where it was (START + 4 s); both ticks start a run beside the live one.
    expect((await runIds('sch-approve')).length).toBe(before + 2);
  });

  it("overlap 'skip' drops a tick while the last run is running (a step in flight)", async () => {
    closeGate();
    try {
      await kit.client.schedules.upsert({ id: 'slow', reactor: SlowJob, everyMs: 1_000 });
      // The tick at upsert starts a run whose step does not finish until the gate opens.
      const first = scheduledRunId('slow', START);
      await turnsUntil(
        async () => gate.entered === 1 && (await kit.client.schedules.get('slow'))?.lastRun?.runId === first,
      );
      expect(await kit.client.get(first)).toMatchObject({ status: 'running' });
      // NOTE: the clock itself, not kit.advance (which waits for idle, and the run is not).
      kit.clock.advance(1_000);
      await turnsUntil(async () => (await kit.client.schedules.get('slow'))?.lastTick?.at === START + 1_000);
      expect(await kit.client.schedules.get('slow')).toMatchObject({
        lastTick: { at: START + 1_000, skipped: 'overlap', runId: first },
        lastRun: { runId: first, status: 'running' },
      });
      expect(await kit.client.schedules.trigger('slow')).toEqual({
        status: 'skipped',
        reason: 'overlap',
        runId: first,
      });
      expect(await runIds('sch-slow')).toEqual([first]);
    } finally {
      gate.open();
    }
    await kit.idle();
    expect(await kit.client.get(scheduledRunId('slow', START))).toMatchObject({ status: 'completed' });
    closeGate();
    gate.open();
    await kit.advance(1_000);
    expect(await runIds('sch-slow')).toEqual([scheduledRunId('slow', START), scheduledRunId('slow', START + 2_000)]);
  });

  it('after downtime (time jumps several intervals with no tick handled) one late tick runs, then ticks on the grid', async () => {
    await kit.client.schedules.upsert({ id: 'd', reactor: 'sch-bill', everyMs: 1_000, input: { tenant: 'd' } });
    await kit.idle();
    expect(await runIds('sch-bill')).toEqual([scheduledRunId('d', START)]);
    // Downtime: time moves 5.5 intervals in one jump (a process asleep, an event loop held), so the
    // timers only fire after it: the tick due at +1 s is late, those due at +2..+5 s were missed.
    kit.clock.advance(5_500);
    await kit.idle();
    expect(await runIds('sch-bill')).toEqual([scheduledRunId('d', START), scheduledRunId('d', START + 1_000)].sort());
    expect(await kit.client.schedules.get('d')).toMatchObject({ nextTickAt: START + 6_000 });
    await kit.advance(1_500);
    expect(await runIds('sch-bill')).toEqual(
      [0, 1_000, 6_000, 7_000].map((ms) => scheduledRunId('d', START + ms)).sort(),
    );
  });

  it('pause stops the ticks and keeps the schedule; resume ticks from the next due time without making up missed ticks', async () => {
    await kit.client.schedules.upsert({ id: 'b', reactor: 'sch-bill', everyMs: 1_000, input: { tenant: 'b' } });
    await kit.advance(1_000);
    expect(await runIds('sch-bill')).toHaveLength(2);
    const paused = await kit.client.schedules.pause('b');
    expect(paused).toMatchObject({ paused: true });
    expect(paused.nextTickAt).toBeUndefined();
    await kit.advance(10_000);
    expect(await runIds('sch-bill')).toHaveLength(2);
    const resumed = await kit.client.schedules.resume('b');
    expect(resumed).toMatchObject({ paused: false });
    await kit.advance(1_000);
    // A tick at resume (everyMs ticks at once), one a second later: none for the paused 10 s.
    expect(await runIds('sch-bill')).toEqual(
      [0, 1_000, 11_000, 12_000].map((ms) => scheduledRunId('b', START + ms)).sort(),
    );
  });

  it('trigger starts a run now (paused or not, under the overlap rule); remove deletes the schedule, not its runs', async () => {
    await kit.client.schedules.upsert({ id: 't', reactor: 'sch-bill', cron: '0 0 1 * *', input: { tenant: 't' } });
    await kit.client.schedules.pause('t');
    const started = await kit.client.schedules.trigger('t');
    expect(started).toMatchObject({ status: 'started', replayed: false });
    await kit.idle();
    expect(await kit.client.get((started as { runId: string }).runId)).toMatchObject({ status: 'completed' });

    await kit.client.schedules.upsert({ id: 'w', reactor: 'sch-approve', cron: '0 0 1 * *' });
    const live = await kit.client.schedules.trigger('w');
    await kit.idle();
    expect(await kit.client.schedules.trigger('w')).toEqual({
      status: 'skipped',
      reason: 'overlap',
      runId: (live as { runId: string }).runId,
    });

    expect(await kit.client.schedules.remove('t')).toBe(true);
    expect(await kit.client.schedules.remove('t')).toBe(false);
    expect(await kit.client.schedules.get('t')).toBeUndefined();
    expect(await runIds('sch-bill')).toHaveLength(1);
    await expect(kit.client.schedules.trigger('t')).rejects.toBeInstanceOf(ScheduleNotFoundError);
    await expect(kit.client.schedules.pause('t')).rejects.toMatchObject({ code: 'SCHEDULE_NOT_FOUND' });
  });

  it('checks its arguments, naming the option; a declared schedule is changed in its decorator only', async () => {
    const upsert = (options: Record<string, unknown>) =>
      kit.client.schedules.upsert({ id: 'x', reactor: 'sch-bill', ...options } as never);
    await expect(upsert({ cron: 'not a cron' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('options.cron'),
    });
    await expect(upsert({ cron: '* * * * *', everyMs: 1_000 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(upsert({})).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(upsert({ everyMs: 5 })).rejects.toMatchObject({ message: expect.stringContaining('options.everyMs') });
    await expect(upsert({ cron: '* * * * *', tz: 'Mars/Olympus' })).rejects.toMatchObject({
      message: expect.stringContaining('options.tz'),
    });
    await expect(upsert({ cron: '* * * * *', overlap: 'queue' })).rejects.toMatchObject({
      message: expect.stringContaining('options.overlap'),
    });
    await expect(upsert({ cron: '* * * * *', input: { at: new Date() } })).rejects.toMatchObject({
      message: expect.stringContaining('options.input'),
    });
    await expect(upsert({ cron: '* * * * *', reactor: 'nope' })).rejects.toMatchObject({ code: 'UNKNOWN_REACTOR' });
    await expect(upsert({ id: 'sch-report', cron: '* * * * *' })).rejects.toMatchObject({
      message: expect.stringContaining('@Reactor'),
    });
    await expect(kit.client.schedules.remove('sch-report')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect((await kit.client.schedules.list()).map((s) => s.id)).toEqual(['sch-report']);
  });
});

describe('Schedules (engine side)', () => {
  it('a tick handled twice (a duplicate delivery) starts one run; a tick of a removed or paused schedule starts none', async () => {
    const clock = new TestClock(START);
    const started = new Map<string, unknown>();
    const schedules = new Schedules({
      backend: { store: new MemoryScheduleStore(), ticker: new InProcessScheduleTicker(clock) },
      clock,
      logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
      reactorNames: () => ['r'],
      start: async (_reactor, input, runId) => {
        const replayed = started.has(runId);
        if (!replayed) started.set(runId, input);
        return { runId, replayed };
      },
      runStatus: async (runId) => (started.has(runId) ? 'completed' : undefined),
    });
    await schedules.upsert({ id: 's', reactor: 'r', cron: '*/5 * * * *', input: { n: 1 } });
    const tick = { scheduleId: 's', at: START + 300_000 };
    const [a, b] = await Promise.all([schedules.tick(tick), schedules.tick(tick)]);
    expect([a, b]).toEqual(
      expect.arrayContaining([
        { status: 'started', runId: scheduledRunId('s', tick.at), replayed: false },
        { status: 'started', runId: scheduledRunId('s', tick.at), replayed: true },
      ]),
    );
    expect([...started.keys()]).toEqual([scheduledRunId('s', tick.at)]);
    await schedules.pause('s');
    expect(await schedules.tick({ scheduleId: 's', at: START + 600_000 })).toEqual({
      status: 'skipped',
      reason: 'paused',
    });
    await schedules.remove('s');
    expect(await schedules.tick({ scheduleId: 's', at: START + 900_000 })).toEqual({
      status: 'skipped',
      reason: 'removed',
    });
    expect(started.size).toBe(1);
  });

  it('a run id names its schedule and tick, whatever the id holds', () => {
    expect(scheduledRunId('billing:acme/eu', 1767225600000)).toBe('billing%3Aacme%2Feu@1767225600000');
  });
});

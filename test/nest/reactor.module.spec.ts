import { Injectable, Module } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { ReactorEngine } from '../../lib/core';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { Reactor } from '../../lib/nest/reactor.decorator';
import {
  BackgroundOrderReactor,
  CallLog,
  CapturingLogger,
  ORDER_PROVIDERS,
  OrderReactor,
  ReserveStep,
} from './fixtures';

const order = { sku: 'sku-1', amount: 42, country: 'FR', card: '4242-4242' };

describe('ReactorModule (embedded runtime)', () => {
  let app: TestingModule;
  let client: ReactorClient;
  let log: CallLog;
  let logger: CapturingLogger;

  beforeEach(async () => {
    logger = new CapturingLogger();
    app = await Test.createTestingModule({
      imports: [ReactorModule.forRoot()],
      providers: [...ORDER_PROVIDERS, BackgroundOrderReactor],
    })
      .setLogger(logger)
      .compile();
    await app.init();
    client = app.get(ReactorClient);
    log = app.get(CallLog);
  });

  afterEach(async () => {
    await app.close();
  });

  it('runs a reactor whose class steps get their services by constructor injection', async () => {
    const outcome = await client.run(OrderReactor, order);

    expect(outcome.status).toBe('completed');
    if (outcome.status !== 'completed') return;
    expect(outcome.value).toBe('sh-FR');
    expect(outcome.results).toEqual({ reserve: 'res-sku-1', charge: 'ch-42', ship: 'sh-FR' });
    expect(log.calls).toEqual(['warehouse.reserve:sku-1', 'bank.charge:42', 'carrier.ship:FR']);
  });

  it('compensates the failing step, then undoes completed steps newest first', async () => {
    const outcome = await client.run(OrderReactor, { ...order, country: 'XX' });

    expect(outcome.status).toBe('failed');
    if (outcome.status !== 'failed') return;
    expect(outcome.failure.stepName).toBe('ship');
    expect(outcome.failure.errorMessage).toBe('carrier does not ship to XX');
    expect(outcome.failure.rollbackFailures).toEqual([]);
    expect(outcome.failure.inputs.card).toBe('[REDACTED]');
    expect(log.calls).toEqual([
      'warehouse.reserve:sku-1',
      'bank.charge:42',
      'carrier.ship:XX',
      'ship.compensate:XX:carrier does not ship to XX',
      'bank.refund:ch-42',
      'warehouse.release:res-sku-1',
    ]);
  });

  it('runs a reactor by name', async () => {
    const outcome = await client.run<string>('order', order);
    expect(outcome.status).toBe('completed');
  });

  it('get returns the run with redacted inputs', async () => {
    const { runId } = await client.run(OrderReactor, order);

    const view = await client.get(runId);

    expect(view?.status).toBe('completed');
    expect(view?.reactorName).toBe('order');
    expect(view?.inputs).toEqual({ sku: 'sku-1', amount: 42, country: 'FR', card: '[REDACTED]' });
    expect(view?.completed).toEqual(['reserve', 'charge', 'ship']);
    expect(JSON.stringify(view)).not.toContain('4242-4242');
    expect(await client.get('no-such-run')).toBeUndefined();
  });

  it('undo of a completed run undoes steps in reverse completion order and cancels the run', async () => {
    const { runId } = await client.run(OrderReactor, order);
    log.calls.length = 0;

    const undone = await client.undo(runId);

    expect(undone.status).toBe('cancelled');
    if (undone.status !== 'cancelled') return;
    expect(undone.rollbackFailures).toEqual([]);
    expect(log.calls).toEqual(['carrier.cancel:sh-FR', 'bank.refund:ch-42', 'warehouse.release:res-sku-1']);
    expect((await client.get(runId))?.status).toBe('cancelled');
  });

  it('hands a background reactor to the in-process worker; wait resolves to its outcome', async () => {
    const outcome = await client.run(BackgroundOrderReactor, { sku: 'bg' });

    expect(outcome.status).toBe('dispatched');
    const done = await client.wait<string>(outcome.runId, { timeoutMs: 5_000 });
    expect(done.status).toBe('completed');
    if (done.status === 'completed') expect(done.value).toBe('res-bg');
    expect(log.calls).toEqual(['warehouse.reserve:bg']);
  });

  it('start hands any reactor to the worker', async () => {
    const started = await client.start(OrderReactor, order);

    expect(started.status).toBe('dispatched');
    expect((await client.wait(started.runId, { timeoutMs: 5_000 })).status).toBe('completed');
  });

  it('resolves invalid input to a failed outcome naming the field', async () => {
    const outcome = await client.run(OrderReactor, { ...order, amount: 'lots' as unknown as number });

    expect(outcome.status).toBe('failed');
    if (outcome.status === 'failed')
      expect(outcome.failure.fieldErrors).toEqual({ amount: ['must be a finite number'] });
    expect(log.calls).toEqual([]);
  });

  it('refuses a reactor class that is not a provider, naming it and what to do', async () => {
    @Reactor('orphan')
    class OrphanReactor implements ReactorBlueprint<{ sku: string }> {
      build(r: ReactorBuilder<{ sku: string }>) {
        return r.step('reserve', ReserveStep, { sku: r.input('sku') });
      }
    }
    class NotAReactor {
      build(): void {}
    }

    await expect(client.run(OrphanReactor, { sku: 'x' })).rejects.toThrow(
      "Reactor class OrphanReactor (@Reactor('orphan')) is not registered: it is not a provider in any module of this application. Add it to a module's providers.",
    );
    await expect(client.run(NotAReactor, {} as never)).rejects.toThrow(
      "NotAReactor is not a reactor class; decorate it with @Reactor and add it to a module's providers.",
    );
    await expect(client.run('nope', {})).rejects.toThrow("Reactor 'nope' is not registered");
  });

  it('logs one warning at boot saying the embedded runtime is not durable', () => {
    const warnings = logger.messages('warn').filter((m) => m.includes('embedded runtime'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('not durable');
  });

  it('exposes the engine with every discovered reactor registered', () => {
    expect(app.get(ReactorEngine).reactorNames().sort()).toEqual(['background-order', 'order']);
  });
});

describe('ReactorModule boot order', () => {
  it('refuses client calls before the module discovered its reactors', async () => {
    const app = await Test.createTestingModule({ imports: [ReactorModule.forRoot()], providers: ORDER_PROVIDERS })
      .setLogger(new CapturingLogger())
      .compile();
    try {
      const client = app.get(ReactorClient);
      await expect(client.run(OrderReactor, order)).rejects.toThrow(
        'ReactorClient.run() was called before the ReactorModule discovered its reactors',
      );
    } finally {
      await app.close();
    }
  });

  it('is global by default: a feature module injects ReactorClient without importing the module', async () => {
    @Injectable()
    class Checkout {
      constructor(readonly client: ReactorClient) {}
    }
    @Module({ providers: [Checkout], exports: [Checkout] })
    class FeatureModule {}

    const app = await Test.createTestingModule({
      imports: [ReactorModule.forRoot(), FeatureModule],
      providers: ORDER_PROVIDERS,
    })
      .setLogger(new CapturingLogger())
      .compile();
    try {
      await app.init();
      const outcome = await app.get(Checkout).client.run(OrderReactor, order);
      expect(outcome.status).toBe('completed');
    } finally {
      await app.close();
    }
  });

  it('with global: false, ReactorClient is only injectable where the module is imported', async () => {
    @Injectable()
    class Checkout {
      constructor(readonly client: ReactorClient) {}
    }
    @Module({ providers: [Checkout] })
    class FeatureModule {}

    await expect(
      Test.createTestingModule({ imports: [ReactorModule.forRoot({ global: false }), FeatureModule] })
        .setLogger(new CapturingLogger())
        .compile(),
    ).rejects.toThrow(/Nest can't resolve dependencies of the Checkout/);
  });
});

import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { ConfigurationError, failure, type ReactorEvent } from '../../lib';
import { OnReactorEvent } from '../../lib/nest/on-reactor-event.decorator';
import { ReactorTestingKit, ReactorTestingModule } from '../../lib/testing';
import { reactorMatchers } from '../../lib/testing/jest';
import { CapturingLogger, ORDER_PROVIDERS, OrderReactor } from '../nest/fixtures';

expect.extend(reactorMatchers);

const order = { sku: 'sku-1', amount: 42, country: 'FR', card: '4242-4242' };

/** An async listener whose calls finish when the test says so. */
@Injectable()
class AuditLog {
  readonly written: string[] = [];
  private release!: () => void;
  readonly gate = new Promise<void>((resolve) => (this.release = resolve));

  @OnReactorEvent('reactor.complete')
  async write(event: ReactorEvent) {
    await this.gate;
    this.written.push(`${event.type}:${event.reactorName}`);
  }

  open(): void {
    this.release();
  }
}

/** Let the event loop turn `n` times (no timer: nothing waits for time). */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('ReactorTestingKit: listeners and step names', () => {
  let moduleRef: TestingModule | undefined;

  async function compile(): Promise<ReactorTestingKit> {
    moduleRef = await Test.createTestingModule({
      imports: [ReactorTestingModule.forRoot()],
      providers: [...ORDER_PROVIDERS, AuditLog],
    })
      .setLogger(new CapturingLogger())
      .compile();
    await moduleRef.init();
    return moduleRef.get(ReactorTestingKit);
  }

  afterEach(async () => {
    moduleRef?.get(AuditLog).open();
    await moduleRef?.close();
    moduleRef = undefined;
  });

  it('flushListeners() waits for the listener calls the run did not wait for', async () => {
    const kit = await compile();
    const audit = moduleRef!.get(AuditLog);
    expect(await kit.client.run(OrderReactor, order)).toMatchObject({ status: 'completed' });
    expect(audit.written).toEqual([]);

    let flushed = false;
    const flushing = kit.flushListeners().then(() => (flushed = true));
    // The call is still pending: flushing cannot have finished, however long the event loop turns.
    await turns(5);
    expect(flushed).toBe(false);
    audit.open();
    await flushing;
    expect(audit.written).toEqual(['reactor.complete:order']);
  });

  it('idle() waits for pending listener calls too', async () => {
    const kit = await compile();
    const audit = moduleRef!.get(AuditLog);
    await kit.client.run(OrderReactor, order);
    let idle = false;
    const idling = kit.idle().then(() => (idle = true));
    await turns(5);
    expect(idle).toBe(false);
    audit.open();
    await idling;
    expect(audit.written).toEqual(['reactor.complete:order']);
  });

  it('mockStep takes a @Step name, and refuses a misspelt one naming the closest names', async () => {
    const kit = await compile();
    kit.mockStep('charge-card', { run: () => failure('card declined', { retryable: false }) });
    expect(await kit.client.run(OrderReactor, order)).toMatchObject({
      status: 'failed',
      failure: { stepName: 'charge', message: expect.stringContaining('card declined') },
    });
    kit.restoreSteps();
    expect(await kit.client.run(OrderReactor, order)).toMatchObject({ status: 'completed' });

    expect(() => kit.mockStep('charge-crad', { run: () => failure('x') })).toThrow(ConfigurationError);
    expect(() => kit.mockStep('charge-crad', { run: () => failure('x') })).toThrow(
      "ReactorTestingKit.mockStep(): no @Step named 'charge-crad' in the testing module. Did you mean 'charge-card'? " +
        '@Step names: reserve-stock, charge-card, ship-parcel.',
    );
    expect(() => kit.mockStep('charge', { run: () => failure('x') })).toThrow(
      /no @Step named 'charge' in the testing module\. @Step names: .*not the step's name in a reactor/,
    );
  });

  it('toHaveRetried names the closest step of the run when the one asked for never ran', async () => {
    const kit = await compile();
    const outcome = await kit.client.run(OrderReactor, order);
    let message = '';
    try {
      expect(outcome).toHaveRetried('chrage', 1);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/retried 0 times \(it never ran; did you mean 'charge'\?\)/);
  });
});

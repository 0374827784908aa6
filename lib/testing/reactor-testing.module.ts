import { Module, type DynamicModule } from '@nestjs/common';
import { ConfigurationError, type ReactorMiddleware } from '../core';
import { messages, type ReactorModuleOptions } from '../config';
import { ReactorModule } from '../nest/reactor.module';
import { RecordingMiddleware } from './recording.middleware';
import { ReactorTestingKit } from './reactor-testing.kit';
import { TestClock } from './test-clock';

/**
 * Options of {@link ReactorTestingModule.forRoot}: those of `ReactorModule.forRoot` that make sense
 * on the embedded runtime, and the clock.
 */
export interface ReactorTestingModuleOptions extends Omit<ReactorModuleOptions, 'redis' | 'clock' | 'global'> {
  /** The clock the runtime, the engine and the kit share. @default new TestClock() (2026-01-01T00:00:00Z) */
  clock?: TestClock;
  /** More middleware, after the kit's recorder. */
  middleware?: ReactorMiddleware[];
}

const UNSUPPORTED = ['redis', 'global'] as const;

/**
 * `ReactorModule` for tests: the embedded runtime (in-memory storage, the in-process dispatcher),
 * a {@link TestClock} (retries never wait, delayed jobs wait until the test moves time) and a
 * recorder of every lifecycle event, with {@link ReactorTestingKit} to reach them.
 *
 * ```ts
 * const moduleRef = await Test.createTestingModule({
 *   imports: [ReactorTestingModule.forRoot()],
 *   providers: [CheckoutReactor, ReserveInventory, ChargePayment, InventoryService, PaymentsService],
 * })
 *   .overrideProvider(PaymentsService).useValue(fakePayments)     // plain Nest overrides work
 *   .compile();
 * await moduleRef.init();                                         // discovery runs here
 * const kit = moduleRef.get(ReactorTestingKit);
 * ```
 *
 * It is global like `ReactorModule` (the client, the kit, the clock and the recorder are injectable
 * anywhere). Close the module after the test (`moduleRef.close()`).
 */
@Module({})
export class ReactorTestingModule {
  /** The embedded `ReactorModule` with a test clock and an event recorder, and the kit. */
  static forRoot(options: ReactorTestingModuleOptions = {}): DynamicModule {
    for (const option of UNSUPPORTED) {
      if (option in options) throw new ConfigurationError(messages.testingOptionUnsupported(option), option);
    }
    const { clock = new TestClock(), middleware = [], ...rest } = options;
    if (!(clock instanceof TestClock))
      throw new ConfigurationError(messages.testingOptionUnsupported('clock'), 'clock');
    const recorder = new RecordingMiddleware();
    return {
      module: ReactorTestingModule,
      global: true,
      imports: [ReactorModule.forRoot({ ...rest, clock, middleware: [recorder, ...middleware] })],
      providers: [
        // NOTE: factories, not `useValue` (see ReactorModule.forRoot: Nest hashes a dynamic module's metadata).
        { provide: TestClock, useFactory: () => clock },
        { provide: RecordingMiddleware, useFactory: () => recorder },
        ReactorTestingKit,
      ],
      exports: [ReactorModule, ReactorTestingKit, TestClock, RecordingMiddleware],
    };
  }
}

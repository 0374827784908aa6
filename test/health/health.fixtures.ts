import { Controller, Get, type DynamicModule, type Provider, type Type } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule, type HealthCheckResult } from '@nestjs/terminus';
import { Test, type TestingModule } from '@nestjs/testing';
import type { ReactorModuleOptions } from '../../lib/config/reactor-module-options.interface';
import { ReactorHealthIndicator, ReactorHealthModule, type ReactorHealthOptions } from '../../lib/health';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { E2E_PROVIDERS } from '../e2e/e2e.fixtures';
import { CapturingLogger } from '../nest/fixtures';
import { redisUrl } from '../setup/redis';

/** The thresholds the test's controller passes to the indicator (set by each test). */
export class HealthThresholds {
  options: ReactorHealthOptions = {};
}

/** The controller of the README's "Health checks" section. */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly reactor: ReactorHealthIndicator,
    private readonly thresholds: HealthThresholds,
  ) {}

  @Get()
  @HealthCheck()
  check(): Promise<HealthCheckResult> {
    return this.health.check([() => this.reactor.isHealthy('reactor', this.thresholds.options)]);
  }
}

/** A terminus result, and the indicator's entry in it. */
export interface CheckedHealth {
  status: HealthCheckResult['status'];
  result: HealthCheckResult;
  reactor: Record<string, any>;
}

export interface HealthApp {
  app: TestingModule;
  client: ReactorClient;
  logger: CapturingLogger;
  /**
   * Run the controller's check: terminus's result when healthy, its 503 response body when not,
   * with the indicator's entry of its `details` as `reactor`.
   */
  check(options?: ReactorHealthOptions): Promise<CheckedHealth>;
}

/**
 * A Nest app with terminus, the health module and the ReactorModule (on the test Redis under
 * `prefix` unless `options.embedded`), initialized.
 */
export async function createHealthApp(
  prefix: string,
  options: Omit<ReactorModuleOptions, 'prefix'> & { embedded?: boolean } = {},
  extra: { imports?: Array<Type | DynamicModule>; providers?: Provider[] } = {},
): Promise<HealthApp> {
  const { embedded, ...moduleOptions } = options;
  const logger = new CapturingLogger();
  const app = await Test.createTestingModule({
    imports: [
      ...(extra.imports ?? []),
      TerminusModule,
      ReactorModule.forRoot(embedded ? moduleOptions : { redis: { url: redisUrl() }, prefix, ...moduleOptions }),
      ReactorHealthModule,
    ],
    controllers: [HealthController],
    providers: [...E2E_PROVIDERS, HealthThresholds, ...(extra.providers ?? [])],
  })
    .setLogger(logger)
    .compile();
  await app.init();
  const run = async (): Promise<HealthCheckResult> => {
    try {
      return await app.get(HealthController).check();
    } catch (error) {
      // Terminus answers an unhealthy check with a 503 whose body is the result.
      const response = (error as { getStatus?(): number; getResponse?(): unknown }).getResponse?.();
      if ((error as { getStatus?(): number }).getStatus?.() !== 503 || !response) throw error;
      return response as HealthCheckResult;
    }
  };
  const check = async (thresholds: ReactorHealthOptions = {}): Promise<CheckedHealth> => {
    app.get(HealthThresholds).options = thresholds;
    const result = await run();
    return { status: result.status, result, reactor: result.details.reactor ?? {} };
  };
  return { app, client: app.get(ReactorClient), logger, check };
}

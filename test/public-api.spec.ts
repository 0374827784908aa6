import * as api from '../lib';
import * as testing from '../lib/testing';
import * as health from '../lib/health';
import * as dashboard from '../lib/dashboard';
import * as metrics from '../lib/metrics';
import { defineReactor, success, type ReactorBuilder } from '../lib';
import { createTestEngine } from '../lib/testing';

describe('public API', () => {
  it('exports the documented names from the main entry point and nothing internal', () => {
    for (const name of [
      'ReactorModule',
      'ReactorClient',
      'Step',
      'Reactor',
      'defineReactor',
      'success',
      'failure',
      'halt',
      'skipped',
      'failStep',
      'ReactorEngine',
      'DefinitionError',
      'InputValidationError',
      'ConfigurationError',
      'InternalError',
      'REACTOR_TRACER_NAME',
      'ReactorTraceAttributes',
      'ReactorTraceEvents',
      'ReactorQueues',
      'StepAbortedError',
      'isStepAborted',
      'OnReactorEvent',
      'withDelivery',
      'InvalidArgumentError',
      'StorageUnavailableError',
      'ScheduleNotFoundError',
    ]) {
      expect(api).toHaveProperty(name);
    }
    for (const internal of [
      'RunExecution',
      'MiddlewareRunner',
      'InProcessJobDispatcher',
      'EmbeddedReactorRuntime',
      'MemoryReactorStorage',
      'RunScope',
      'stepKindOf',
      'DefinitionRegistry',
      'openTelemetryTracing',
      'NO_TRACING',
      'ExecutionAbort',
      'ExecutionStopped',
    ]) {
      expect(api).not.toHaveProperty(internal);
    }
    expect(Object.keys(testing).sort()).toEqual([
      'FakeClock',
      'MemoryCoordinationStore',
      'MemoryFlowStore',
      'MemoryInterruptStore',
      'MemoryLockManager',
      'MemoryMapStore',
      'MemoryReactorStorage',
      'MemoryRunEventBus',
      'ReactorTestingKit',
      'ReactorTestingModule',
      'RecordingMiddleware',
      'TestClock',
      'createMemoryAdapters',
      'createTestEngine',
      'reactorMatchers',
      'validateReactors',
    ]);
    expect(Object.keys(health).sort()).toEqual(['ReactorHealthIndicator', 'ReactorHealthModule']);
    expect(Object.keys(dashboard).sort()).toEqual(['DASHBOARD_ACTION_HEADER', 'ReactorDashboardModule']);
    expect(Object.keys(metrics).sort()).toEqual(['ReactorMetrics', 'ReactorMetricsController', 'ReactorMetricsModule']);
  });

  it('runs a reactor with the testing entry point, with retries that do not wait', async () => {
    const { engine, clock, recorder } = createTestEngine();
    let n = 0;
    const def = defineReactor('flaky', (r: ReactorBuilder<object>) =>
      r.step(
        'try',
        () => (++n < 3 ? api.failure('again') : success(n)),
        {},
        { retries: { maxAttempts: 3, baseDelayMs: 50 } },
      ),
    );
    const outcome = await engine.run(def, {});
    expect(outcome.status === 'completed' && outcome.value).toBe(3);
    expect(clock.sleeps).toEqual([50, 100]);
    expect(recorder.sequence(['step.retry'])).toEqual(['step.retry:try', 'step.retry:try']);
  });
});

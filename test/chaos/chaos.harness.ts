/**
 * Test-side helpers of the chaos tests: worker child processes, bounded polling, and apps in the
 * test process (producer-only by default).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { Test, type TestingModule } from '@nestjs/testing';
import type { Provider } from '@nestjs/common';
import { ReactorEngine } from '../../lib/core';
import type { ReactorModuleOptions } from '../../lib/config/reactor-module-options.interface';
import { REACTOR_RUNTIME } from '../../lib/config/reactor.constants';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { ReactorModule } from '../../lib/nest/reactor.module';
import type { RedisReactorRuntime } from '../../lib/runtime/redis.runtime';
import { CapturingLogger } from '../nest/fixtures';
import type Redis from 'ioredis';
import { cleanupPrefix, createTestRedis, onCluster, reactorRedisOption, redisUrl, uniquePrefix } from '../setup/redis';
import { quitAndWait } from '../e2e/e2e.fixtures';
import { ChaosChainReactor, ChaosFixturesModule, ChaosKeys, type ChaosConfig } from './chaos.fixtures';

const ROOT = resolve(__dirname, '..', '..');
const WORKER_APP = 'test/chaos/worker-app.ts';

/** Resolve once `condition()` holds, checking every `intervalMs`; throw after `timeoutMs`. */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  options: { timeoutMs: number; intervalMs?: number; what?: string | (() => string) },
): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) {
      const what = typeof options.what === 'function' ? options.what() : (options.what ?? 'condition');
      throw new Error(`waitFor: ${what} not met within ${options.timeoutMs} ms`);
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 25));
  }
}

const live = new Set<WorkerProcess>();

// A Jest worker that exits (or is torn down) never leaves a child behind.
process.once('exit', () => {
  for (const worker of live) worker.child.kill('SIGKILL');
});

/** A `worker-app.ts` child process, with its output captured. */
export class WorkerProcess {
  private out = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (this.out += chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (this.out += chunk));
    this.exited = new Promise((resolveExit) => {
      child.once('exit', (code, signal) => {
        live.delete(this);
        resolveExit({ code, signal });
      });
    });
  }

  /**
   * Start a worker on `prefix` and wait until it is consuming (it prints `ready`).
   * `env` adds the misbehaviour switches and module options (see worker-app.ts); `app` is another
   * worker script (a path from the repository's root).
   */
  static async start(
    name: string,
    prefix: string,
    env: Record<string, string> = {},
    app: string = WORKER_APP,
  ): Promise<WorkerProcess> {
    const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', app], {
      cwd: ROOT,
      env: {
        ...process.env,
        // In the cluster run the child reads REDIS_CLUSTER_NODES (inherited) instead.
        ...(onCluster() ? {} : { REDIS_URL: redisUrl() }),
        CHAOS_PREFIX: prefix,
        WORKER_ID: name,
        NO_COLOR: '1',
        TS_NODE_PROJECT: resolve(ROOT, 'tsconfig.json'),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const worker = new WorkerProcess(name, child);
    live.add(worker);
    let exitedEarly = false;
    void worker.exited.then(() => (exitedEarly = true));
    await waitFor(() => exitedEarly || /^ready$/m.test(worker.out), {
      timeoutMs: 60_000, // a worker transpiles the library at start: slow on a loaded 2-core machine
      what: () => `worker ${name} ready (output so far:\n${worker.output})`,
    });
    if (exitedEarly) throw new Error(`worker ${name} exited before it was ready:\n${worker.output}`);
    return worker;
  }

  /** Everything the process printed so far. */
  get output(): string {
    return this.out;
  }

  /** Whether the process is still running. */
  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Wait until the output matches `pattern`. */
  async waitForOutput(pattern: RegExp, timeoutMs: number): Promise<void> {
    await waitFor(() => pattern.test(this.out), {
      timeoutMs,
      what: () => `output of worker ${this.name} matching ${pattern} (output:\n${this.out})`,
    });
  }

  /** Send `signal` and wait until the process is gone. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.alive) this.child.kill(signal);
    await this.exited;
  }
}

/**
 * Stop every worker still running: SIGTERM (graceful), then SIGKILL after `graceMs`. Call it in
 * `afterEach`/`afterAll`, so a failing test never leaves a child behind.
 */
export async function stopAllWorkers(graceMs = 3_000): Promise<void> {
  await Promise.all(
    [...live].map(async (worker) => {
      if (!worker.alive) return worker.exited;
      worker.child.kill('SIGTERM');
      const timer = setTimeout(() => worker.child.kill('SIGKILL'), graceMs);
      await worker.exited;
      clearTimeout(timer);
    }),
  );
}

/** An app in the test process with the chaos fixtures, its client, engine and Redis runtime. */
export interface ChaosApp {
  app: TestingModule;
  client: ReactorClient;
  engine: ReactorEngine;
  runtime: RedisReactorRuntime;
  logger: CapturingLogger;
  keys: ChaosKeys;
}

/**
 * A Nest app in the test process on `prefix` with the chaos fixtures: producer-only
 * (`workers: false`) and without a scheduled sweeper unless `options` say otherwise. In the
 * cluster run it is on a Cluster connection that `app.close()` closes after the app.
 */
export async function createChaosApp(
  prefix: string,
  options: Omit<ReactorModuleOptions, 'prefix' | 'redis'> = {},
  extra: { config?: Partial<ChaosConfig>; providers?: Provider[] } = {},
): Promise<ChaosApp> {
  const logger = new CapturingLogger();
  const connection = reactorRedisOption();
  let app: TestingModule;
  try {
    app = await Test.createTestingModule({
      imports: [
        ReactorModule.forRoot({
          redis: connection.redis,
          prefix,
          workers: false,
          sweeper: { enabled: false },
          ...options,
        }),
        ChaosFixturesModule.forRoot({ redisUrl: onCluster() ? undefined : redisUrl(), prefix, ...extra.config }),
      ],
      providers: extra.providers ?? [],
    })
      .setLogger(logger)
      .compile();
    // In the cluster run the Cluster connection is the app's: closed after it.
    const close = app.close.bind(app);
    app.close = async () => {
      try {
        await close();
      } finally {
        await connection.close();
      }
    };
    await app.init();
  } catch (error) {
    await connection.close();
    throw error;
  }
  return {
    app,
    client: app.get(ReactorClient),
    engine: app.get(ReactorEngine),
    runtime: app.get<RedisReactorRuntime>(REACTOR_RUNTIME),
    logger,
    keys: new ChaosKeys(prefix),
  };
}

/** What {@link useChaosProducer} hands a spec: read its members inside hooks and tests. */
export interface ChaosProducer {
  readonly prefix: string;
  /** The producer app (set in `beforeAll`). */
  readonly producer: ChaosApp;
  /** A plain connection for the spec's own reads (set in `beforeAll`). */
  readonly redis: Redis;
}

/**
 * The lifecycle most chaos specs share: a key prefix of their own, a producer app
 * ({@link createChaosApp} with `options` and `extra`) and a Redis connection made before the tests; every worker
 * process stopped after each test; after the file, the workers, the app, the prefix's keys and
 * the connection gone.
 */
export function useChaosProducer(
  name: string,
  options: Omit<ReactorModuleOptions, 'prefix' | 'redis'> = {},
  extra: Parameters<typeof createChaosApp>[2] = {},
): ChaosProducer {
  const prefix = uniquePrefix(name);
  let redis: Redis | undefined;
  let producer: ChaosApp | undefined;

  beforeAll(async () => {
    redis = createTestRedis();
    producer = await createChaosApp(prefix, options, extra);
  });

  afterEach(async () => {
    await stopAllWorkers();
  });

  afterAll(async () => {
    await stopAllWorkers();
    await producer?.app.close();
    if (redis) {
      await cleanupPrefix(redis, prefix);
      await quitAndWait(redis);
    }
  });

  return {
    prefix,
    get producer(): ChaosApp {
      if (!producer) throw new Error(`chaos producer '${name}' is read before beforeAll made it`);
      return producer;
    },
    get redis(): Redis {
      if (!redis) throw new Error(`chaos Redis connection '${name}' is read before beforeAll made it`);
      return redis;
    },
  };
}

/**
 * Start a chain run (seed `'seed'`) from the producer, check it was dispatched, and wait until
 * `worker` is inside its step s3. Returns the run's id.
 */
export async function startChainUntilInsideS3(chaos: ChaosProducer, worker: WorkerProcess): Promise<string> {
  const { client, keys } = chaos.producer;
  const started = await client.start(ChaosChainReactor, { seed: 'seed' });
  expect(started.status).toBe('dispatched');
  const runId = started.runId;
  await waitFor(async () => (await chaos.redis.exists(keys.inside(runId, 's3'))) === 1, {
    timeoutMs: 15_000,
    what: () => `worker ${worker.name} inside s3 (output:\n${worker.output})`,
  });
  return runId;
}

/**
 * Fixtures of the lock-stall chaos test (`lock-stall.spec.ts`), shared by the test process and the
 * worker child process (`lock-stall.worker.ts`): one reactor under a lock with a short TTL, whose
 * step can block its process's event loop inside the locked section, and a downstream store that
 * keeps the highest fencing token it has seen and refuses writes under a lower one.
 */
import { Inject, Injectable, type OnModuleDestroy, type Provider } from '@nestjs/common';
import type Redis from 'ioredis';
import { existsSync } from 'node:fs';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext, StepHandler } from '../../lib/core/definition/step';
import { success, type StepOutcome } from '../../lib/core/results/step-outcome';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { Step } from '../../lib/nest/step.decorator';
import { createTestRedis } from '../setup/redis';

/** The lock's TTL: shorter than the stall, which is shorter than the run lease. */
export const STALL_LOCK_TTL_MS = 1_000;
/** The lock's key. */
export const STALL_LOCK_KEY = 'stall-lock';
/** The longest a step blocks (its file never appearing): below any lease the test gives the worker. */
const BLOCK_LIMIT_MS = 10_000;

/** Injection token of the {@link StallConfig}. */
export const STALL_CONFIG = 'STALL_CONFIG';

/** Where the fixtures write, and the file a blocking step waits for. */
export interface StallConfig {
  prefix: string;
  /** A step with `block: true` blocks its event loop until this file exists. */
  blockFile?: string;
}

/** The keys of the test (one hash tag, so that the downstream script's keys share a slot). */
export class StallKeys {
  readonly base: string;
  constructor(prefix: string) {
    this.base = `${prefix}{stall}:`;
  }
  /** Set by a run's step once it is inside the locked section (before it blocks). */
  inside(runId: string): string {
    return `${this.base}inside:${runId}`;
  }
  /** Steps inside the locked section now, across processes (INCR / DECR). */
  inFlight(): string {
    return `${this.base}in-flight`;
  }
  /** The most ever inside at once. */
  maxInFlight(): string {
    return `${this.base}max-in-flight`;
  }
  /** The downstream store: the highest fence it accepted. */
  highestFence(): string {
    return `${this.base}downstream:fence`;
  }
  /** The downstream store: the writes it accepted (run ids, in order). */
  accepted(): string {
    return `${this.base}downstream:accepted`;
  }
  /** The writes it refused as stale (run ids). */
  refused(): string {
    return `${this.base}downstream:refused`;
  }
  /** Runs whose step was compensated. */
  compensated(): string {
    return `${this.base}compensated`;
  }
}

const ENTER_LUA = `
local now = redis.call('INCR', KEYS[1])
if now > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], now) end
return now`;

/** A fenced write: accepted when its fence is at least the highest seen, refused otherwise. */
const FENCED_WRITE_LUA = `
local highest = tonumber(redis.call('GET', KEYS[1]) or '0')
local fence = tonumber(ARGV[1])
if fence < highest then
  redis.call('RPUSH', KEYS[3], ARGV[2])
  return 0
end
redis.call('SET', KEYS[1], fence)
redis.call('RPUSH', KEYS[2], ARGV[2])
return 1`;

/** Block this thread (no timers, no I/O) until `done()` holds, for at most {@link BLOCK_LIMIT_MS}. */
function blockEventLoopUntil(done: () => boolean): void {
  const cell = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + BLOCK_LIMIT_MS;
  while (!done() && Date.now() < deadline) Atomics.wait(cell, 0, 0, 5);
}

/** The test's Redis connection in a process (`createTestRedis`: REDIS_URL, or the cluster run's nodes). */
@Injectable()
export class StallProbe implements OnModuleDestroy {
  readonly redis: Redis;
  readonly keys: StallKeys;
  constructor(@Inject(STALL_CONFIG) readonly config: StallConfig) {
    // The test Redis (REDIS_URL, or the cluster of the cluster run).
    this.redis = createTestRedis({ connectionName: 'lock-stall-probe' });
    this.keys = new StallKeys(config.prefix);
  }
  async onModuleDestroy(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

type GuardedArgs = { label: string; block: boolean };

/**
 * The locked section: counts itself inside, blocks the event loop when asked (a stalled process),
 * then writes downstream under its fence, and leaves. A careless step: it reports success even
 * when the downstream store refused its write (the engine's own check must catch it).
 */
@Step('stall-guarded')
export class GuardedStep implements StepHandler<GuardedArgs, string> {
  constructor(private readonly probe: StallProbe) {}

  async run({ label, block }: GuardedArgs, ctx: StepContext): Promise<StepOutcome<string>> {
    const { redis, keys, config } = this.probe;
    const fence = ctx.fence();
    await redis.eval(ENTER_LUA, 2, keys.inFlight(), keys.maxInFlight());
    await redis.set(keys.inside(ctx.runId), String(fence));
    if (block && config.blockFile) {
      const file = config.blockFile;
      blockEventLoopUntil(() => existsSync(file));
    }
    await redis.eval(FENCED_WRITE_LUA, 3, keys.highestFence(), keys.accepted(), keys.refused(), fence, ctx.runId);
    await redis.decr(keys.inFlight());
    return success(`${label} written`);
  }

  async compensate(_error: unknown, _args: GuardedArgs, ctx: StepContext): Promise<void> {
    await this.probe.redis.rpush(this.probe.keys.compensated(), ctx.runId);
  }
}

/**
 * One step under the lock {@link STALL_LOCK_KEY} (TTL {@link STALL_LOCK_TTL_MS}). A caller waits
 * up to 10 s for the lock; `start` hands the run to a worker.
 */
@Reactor('stall-locked', { lock: { key: () => STALL_LOCK_KEY, ttlMs: STALL_LOCK_TTL_MS, waitMs: 10_000 } })
export class StallLockedReactor implements ReactorBlueprint<GuardedArgs> {
  build(r: ReactorBuilder<GuardedArgs>) {
    return r.step('guarded', GuardedStep, {
      label: r.input('label', { type: 'string' }),
      block: r.input('block', { type: 'boolean' }),
    });
  }
}

/** The providers of the fixtures, with their config. */
export function stallProviders(config: StallConfig): Provider[] {
  return [{ provide: STALL_CONFIG, useValue: config }, StallProbe, GuardedStep, StallLockedReactor];
}

import type { LoggerService } from '@nestjs/common';
import { Queue } from 'bullmq';
import Redis from 'ioredis';
import { ConfigurationError, type JobHandler, type JobRouting, type ScheduleBackend } from '../core';
import { type ResolvedReactorModuleOptions, type ReactorRuntime, messages, type ReactorWorkerHost } from '../config';
import { RedisKeys } from '../storage/redis/redis.keys';
import { RedisLockManager } from '../storage/redis/redis-lock.manager';
import { RedisMapStore } from '../storage/redis/redis-map.store';
import { RedisInterruptStore } from '../storage/redis/redis-interrupt.store';
import { RedisCoordinationStore } from '../storage/redis/redis-coordination.store';
import { RedisFlowStore } from '../storage/redis/redis-flow.store';
import { RedisRunEventBus } from '../storage/redis/redis-run-events';
import { RedisReactorStorage } from '../storage/redis/redis-reactor.storage';
import { longestRetentionMs } from '../storage/run-state.codec';
import type { RedisConnection } from '../storage/redis/redis-scripts';
import { BullMqJobDispatcher } from '../queue/bullmq-job.dispatcher';
import { BullMqScheduleTicker, SCHEDULE_QUEUE_NAME } from '../queue/bullmq-scheduler';
import { RedisScheduleStore } from '../storage/redis/redis-schedule.store';
import { bullMqPrefix, REACTOR_QUEUE_NAME } from '../queue/queue.constants';
import { bullMqQueueOptions, checkedRedisConnection, reactorJobOptions } from '../queue/reactor-queue.imports';
import { ReactorQueues } from '../queue/reactor-queues';
import { describeRedisTarget, RedisConnectionLog } from './redis-connection.log';

/**
 * The Redis runtime: {@link RedisReactorStorage} and {@link RedisLockManager} on one ioredis
 * connection, and a {@link BullMqJobDispatcher} on the module's BullMQ queues ({@link queues}: the
 * default one, and those of `@Reactor({ queue })`, created by {@link routeJobs} after discovery).
 * Its worker host is the `RunProcessor` (a `@nestjs/bullmq` processor), which attaches itself when
 * it is constructed and also builds the named queues' workers at start.
 *
 * Connections:
 * - `redis: { url }`: the runtime creates the storage connection and closes it on shutdown;
 *   BullMQ gets the URL and creates (and closes) its own queue and worker connections.
 * - `redis: { connection }`: storage uses the connection as is, and so does BullMQ (its worker
 *   duplicates it for blocking reads and closes the duplicate). Nobody closes the connection: it
 *   is the application's.
 *
 * Shutdown ({@link stopWorkers}, then {@link close}): the worker stops taking jobs and drains for
 * up to `shutdownGraceMs`, then is closed anyway; then the queues close; then the connection the
 * runtime created. Each step is idempotent and runs in its own try/catch.
 */
export class RedisReactorRuntime implements ReactorRuntime {
  readonly kind = 'redis' as const;
  readonly storage: RedisReactorStorage;
  readonly locks: RedisLockManager;
  readonly maps: RedisMapStore;
  readonly interrupts: RedisInterruptStore;
  readonly coordination: RedisCoordinationStore;
  readonly flow: RedisFlowStore;
  readonly dispatcher: BullMqJobDispatcher;
  /** Schedules: definitions in a Redis hash, ticks from BullMQ job schedulers. */
  readonly schedules: ScheduleBackend;
  /** Live run events: a Stream per run, and pub/sub wake-ups on a subscriber connection made when first needed. */
  readonly runEvents: RedisRunEventBus;
  /** The module's BullMQ queues: the default one and the named ones (for Bull Board, metrics). */
  readonly queues: ReactorQueues;
  /** The key builder of the storage and lock manager. */
  readonly keys: RedisKeys;
  /** The connection storage and locks use (created from the URL, or the application's). */
  readonly redis: RedisConnection;
  /** Whether {@link redis} was created here (and so is closed here). */
  readonly ownsConnection: boolean;

  private host?: ReactorWorkerHost;
  private started = false;
  private stopping?: Promise<void>;
  private closing?: Promise<void>;
  private lastClientError?: string;
  /** Connection errors of every connection of the module, logged once per outage. */
  private readonly connectionLog: RedisConnectionLog;
  private readonly onConnected = () => this.connectionLog.connected();

  constructor(
    private readonly options: ResolvedReactorModuleOptions,
    private readonly queue: Queue,
    private readonly logger: LoggerService,
  ) {
    const redis = options.redis;
    if (!redis) throw new ConfigurationError('RedisReactorRuntime needs the redis option.', 'redis');
    this.connectionLog = new RedisConnectionLog(logger, describeRedisTarget(redis));
    if ('url' in redis) {
      // NOTE: no auto-pipelining: measured slower at every worker concurrency (design decision 56).
      const client = new Redis(redis.url, { connectionName: 'nest-reactor' });
      // NOTE: ioredis re-emits the same error on every reconnect attempt, and so does every BullMQ
      // connection: the connection log logs each outage once (DD-redis-1).
      client.on('error', (error: Error) => {
        this.lastClientError = error.message;
        this.connectionLog.report('storage client', error);
      });
      client.on('ready', () => (this.lastClientError = undefined));
      this.redis = client;
      this.ownsConnection = true;
    } else {
      this.redis = checkedRedisConnection(redis.connection);
      this.ownsConnection = false;
    }
    this.redis.on('ready', this.onConnected);
    this.keys = new RedisKeys({ prefix: options.prefix, shards: options.shards });
    this.storage = new RedisReactorStorage(this.redis, {
      keys: this.keys,
      contextTtlMs: options.contextTtlMs,
      retention: options.retention,
      maxContextBytes: options.maxContextBytes,
      clock: options.clock,
      inputCipher: options.inputCipher,
    });
    this.locks = new RedisLockManager(this.redis, { keys: this.keys });
    this.maps = new RedisMapStore(this.redis, {
      keys: this.keys,
      // A map's records are kept as long as its run can be (an undo of a finished run reads them).
      contextTtlMs: longestRetentionMs(this.storage.retention),
      inputCipher: options.inputCipher,
    });
    this.interrupts = new RedisInterruptStore(this.redis, { keys: this.keys });
    this.coordination = new RedisCoordinationStore(this.redis, { keys: this.keys });
    this.flow = new RedisFlowStore(this.redis, { keys: this.keys });
    this.runEvents = new RedisRunEventBus(this.redis, { keys: this.keys, retentionMs: options.contextTtlMs });
    this.queues = new ReactorQueues(queue, (name) => {
      // The default queue's settings (an application's shared BullMQ configuration included), with the queue's prefix.
      const named = new Queue(name, { ...queue.opts, ...bullMqQueueOptions(options, name) });
      named.on('error', (error: Error) => this.connectionLog.report('BullMQ queue', error));
      return named;
    });
    this.dispatcher = new BullMqJobDispatcher(this.queues, {
      jobRetryCount: options.jobRetryCount,
      jobOptions: reactorJobOptions(queue.opts.defaultJobOptions),
    });
    queue.on('error', (error: Error) => this.connectionLog.report('BullMQ queue', error));
    this.schedules = {
      store: new RedisScheduleStore(this.redis, this.keys),
      ticker: new BullMqScheduleTicker({
        queueOptions: () => ({ ...queue.opts, ...bullMqQueueOptions(options, SCHEDULE_QUEUE_NAME) }),
        lockDurationMs: Math.min(30_000, Math.max(1_000, options.leaseTtlMs)),
        onError: (error) => this.connectionLog.report('BullMQ queue', error),
      }),
    };
    logger.log(
      messages.redisRuntimeStarted(options.prefix, REACTOR_QUEUE_NAME, bullMqPrefix(options.prefix), options.workers),
    );
  }

  /**
   * PING Redis, bounded by `connectTimeoutMs` (a coded error that says what to do when it does not
   * answer), then check the deployment: a single-node connection to a Redis Cluster node is
   * refused (keys of other slots would fail with `MOVED`), and so is a `shards` count other than
   * the one the deployment under this prefix was made with (recorded at its first boot).
   */
  async ready(): Promise<void> {
    await this.reachable();
    try {
      await this.checkDeployment();
    } catch (error) {
      await this.close().catch(() => undefined);
      throw error;
    }
  }

  private async checkDeployment(): Promise<void> {
    // NOTE: a Redis that refuses INFO (some managed services rename it) is not checked.
    const info = await this.redis.info('cluster').catch(() => '');
    if (/^cluster_enabled:1\b/m.test(info) && (this.redis as { isCluster?: boolean }).isCluster !== true) {
      const option = this.ownsConnection ? 'redis.url' : 'redis.connection';
      throw new ConfigurationError(messages.redisIsClusterNode(option), option);
    }
    await this.checkEvictionPolicy();
    const key = this.keys.shardsKey();
    await this.redis.set(key, String(this.keys.shards), 'NX');
    const stored = await this.redis.get(key);
    if (stored !== null && stored !== String(this.keys.shards)) {
      throw new ConfigurationError(messages.shardsChanged(this.keys.prefix, stored, this.keys.shards), 'shards');
    }
  }

  private async reachable(): Promise<void> {
    const timeoutMs = this.options.connectTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
    try {
      const answer = await Promise.race([this.redis.ping().catch((error: unknown) => error), timedOut]);
      if (answer === 'PONG') return;
      // The bootstrap fails: let go of what this runtime opened, so the process can exit (Nest does
      // not run the shutdown hooks of an application whose bootstrap failed).
      await this.close().catch(() => undefined);
      throw new ConfigurationError(
        messages.redisUnreachable(
          timeoutMs,
          answer === 'timeout' ? this.lastClientError : answer,
          this.connectionLog.target,
          this.ownsConnection ? 'redis.url' : 'redis.connection',
        ),
        'redis',
      );
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Read `maxmemory-policy` (`INFO memory`; on a cluster, of every master): the first policy found
   * that is not `noeviction` and where, else `noeviction`. Rejects when Redis refuses `INFO` or its
   * reply does not say (some managed services).
   */
  async evictionPolicy(): Promise<{ policy: string; where: string }> {
    const cluster = this.redis as unknown as { isCluster?: boolean; nodes?(role: 'master'): Redis[] };
    const nodes =
      cluster.isCluster === true && cluster.nodes ? cluster.nodes('master') : [this.redis as unknown as Redis];
    const policies = await Promise.all(
      nodes.map(async (node) => {
        const policy = /^maxmemory_policy:(\S+)/m.exec(await node.info('memory'))?.[1];
        if (!policy) throw new Error('INFO memory has no maxmemory_policy field');
        const where = nodes.length > 1 ? ` (master ${node.options.host}:${node.options.port})` : '';
        return { policy, where };
      }),
    );
    return policies.find(({ policy }) => policy !== 'noeviction') ?? { policy: 'noeviction', where: '' };
  }

  /**
   * A policy other than `noeviction` is a warning, or with `redis.requireNoEviction` a boot failure;
   * a Redis that does not tell is a debug line (or that failure).
   */
  private async checkEvictionPolicy(): Promise<void> {
    const required = this.options.redis?.requireNoEviction === true;
    let found: { policy: string; where: string };
    try {
      found = await this.evictionPolicy();
    } catch (error) {
      if (required) {
        throw new ConfigurationError(messages.evictionPolicyUnknownRequired(error), 'redis.requireNoEviction');
      }
      this.logger.debug?.(messages.evictionPolicyUnchecked(error));
      return;
    }
    if (found.policy === 'noeviction') return;
    const message = messages.evictionPolicy(found.policy, found.where, required);
    if (required) throw new ConfigurationError(message, 'redis.requireNoEviction');
    this.logger.warn(message);
  }

  /** An `error` event of one of the module's BullMQ workers (the `RunProcessor` reports them here). */
  reportWorkerError(error: unknown): void {
    this.connectionLog.report('BullMQ worker', error);
  }

  /** Called by the `RunProcessor` when Nest constructs it. */
  attachWorkerHost(host: ReactorWorkerHost): void {
    this.host = host;
  }

  /** Create the named queues of the routing and send each reactor's jobs to its queue. */
  routeJobs(routing: JobRouting): void {
    if (this.closing) return;
    this.queues.route(routing);
  }

  /** Start the BullMQ workers, the default queue's and the named queues' (unless `workers: false`). */
  startWorkers(handler: JobHandler): void {
    if (!this.options.workers || this.started || this.stopping) return;
    if (!this.host) throw new ConfigurationError(messages.workerNotRegistered());
    this.started = true;
    this.host.start(handler, this.queues.namedQueues());
  }

  /** Stop taking jobs; wait up to `shutdownGraceMs` for the jobs in hand, then close the worker. */
  stopWorkers(): Promise<void> {
    this.stopping ??= (async () => {
      try {
        await this.host?.stop(this.options.shutdownGraceMs);
      } catch (error) {
        this.logger.warn(messages.cleanupFailed('close the BullMQ worker', error));
      }
    })();
    return this.stopping;
  }

  /** Stop the workers, close the queues, then close the connection this runtime created. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.stopWorkers();
      await this.queues.closeNamed((name, error) =>
        this.logger.warn(messages.cleanupFailed(`close the BullMQ queue '${name}'`, error)),
      );
      try {
        // Like the storage connection, let the queue's connection finish its handshake first.
        await Promise.race([this.queue.waitUntilReady().catch(() => undefined), delay(1_000)]);
        await this.queue.close();
      } catch (error) {
        this.logger.warn(messages.cleanupFailed('close the BullMQ queue', error));
      }
      this.redis.off('ready', this.onConnected);
      await this.runEvents.close().catch(() => undefined);
      if (!this.ownsConnection) return;
      try {
        await closeConnection(this.redis);
      } catch (error) {
        this.logger.warn(messages.cleanupFailed('quit the Redis connection', error));
      }
    })();
    return this.closing;
  }
}

/**
 * Close a connection this runtime created: `QUIT` when it is ready (replies to commands already
 * sent still arrive), else disconnect; then wait (briefly) until its socket is gone, so that a
 * closed application leaves nothing open behind it.
 */
async function closeConnection(redis: RedisConnection): Promise<void> {
  if (redis.status === 'end') return;
  // NOTE: disconnecting during the handshake makes ioredis fail its ready check and arm a 2 s
  // timer on a socket already gone, which keeps the process alive; let a handshake finish first.
  if (['connecting', 'connect'].includes(redis.status)) await settled(redis, ['ready', 'end', 'error'], 1_000);
  const ended = new Promise<void>((resolve) => {
    redis.once('end', () => resolve());
    setTimeout(resolve, 2_000).unref();
  });
  if (redis.status === 'ready') {
    await redis.quit().catch(() => redis.disconnect());
  } else {
    // NOTE: ioredis answers QUIT on a connection that is not up by disconnecting; say so directly.
    redis.disconnect();
  }
  await ended;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Resolve on the first of `events`, or after `ms`. */
function settled(redis: RedisConnection, events: string[], ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      for (const event of events) redis.off(event, done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    for (const event of events) redis.once(event, done);
  });
}

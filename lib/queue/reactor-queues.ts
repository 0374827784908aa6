import type { Queue } from 'bullmq';
import type { JobRoute, JobRouting } from '../core';

const NO_ROUTING: JobRouting = { routes: new Map(), queues: new Map() };

/**
 * The BullMQ queues of the module (Redis runtime): the default queue `nest-reactor` (registered
 * with `@nestjs/bullmq`, so also injectable with `@InjectQueue(REACTOR_QUEUE_NAME)`), and one
 * queue per name given to `@Reactor(name, { queue })`, created at boot (the set of reactors is known
 * only after discovery) with the same connection and prefix. Inject it to hand every queue to Bull
 * Board or a metrics exporter, from `onApplicationBootstrap` on:
 *
 * ```ts
 * @Injectable()
 * export class QueueBoard implements OnApplicationBootstrap {
 *   constructor(private readonly queues: ReactorQueues, @InjectBullBoard() private readonly board: BullBoardInstance) {}
 *   onApplicationBootstrap() {
 *     for (const queue of this.queues.all()) this.board.addQueue(new BullMQAdapter(queue));
 *   }
 * }
 * ```
 *
 * On the embedded runtime there is no queue: {@link all} is empty and {@link get} undefined.
 */
export class ReactorQueues {
  private routing: JobRouting = NO_ROUTING;
  private readonly named = new Map<string, Queue>();
  private closing?: Promise<void>;

  /**
   * @param defaultQueue the module's queue (none on the embedded runtime)
   * @param createQueue builds a named queue with the module's connection and prefix
   */
  constructor(
    private readonly defaultQueue?: Queue,
    private readonly createQueue?: (name: string) => Queue,
  ) {}

  /**
   * Take the routing resolved at boot and create the named queues it lists. Called once, after
   * discovery; jobs dispatched before go to the default queue (which any worker handles alike).
   */
  route(routing: JobRouting): void {
    if (!this.createQueue || this.closing) return;
    this.routing = routing;
    for (const name of routing.queues.keys()) {
      if (!this.named.has(name)) this.named.set(name, this.createQueue(name));
    }
  }

  /** The queue named `name`, or the default queue without a name; undefined when there is none. */
  get(name?: string): Queue | undefined {
    return name === undefined ? this.defaultQueue : this.named.get(name);
  }

  /** Every queue: the default one first, then the named ones. */
  all(): Queue[] {
    return [...(this.defaultQueue ? [this.defaultQueue] : []), ...this.named.values()];
  }

  /** Names of the queues of `@Reactor({ queue })`, with the worker concurrency each declared. */
  namedQueues(): Array<{ name: string; concurrency?: number }> {
    return [...this.routing.queues].map(([name, { concurrency }]) => ({ name, concurrency }));
  }

  /** Where the jobs of `reactorName` go: its queue (else the default one) and their priority. */
  routeOf(reactorName: string): { queue: Queue | undefined; priority?: number } {
    const route: JobRoute | undefined = this.routing.routes.get(reactorName);
    const queue = route?.queue !== undefined ? (this.named.get(route.queue) ?? this.defaultQueue) : this.defaultQueue;
    return { queue, priority: route?.priority };
  }

  /**
   * Close the named queues (created here); the default queue is `@nestjs/bullmq`'s and the runtime
   * closes it. Idempotent; each close is waited for, and one failing does not skip the others.
   */
  closeNamed(onError: (name: string, error: unknown) => void): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all(
        [...this.named].map(async ([name, queue]) => {
          try {
            // Let a connection mid-handshake finish first (closing then leaves timers behind).
            await Promise.race([queue.waitUntilReady().catch(() => undefined), delay(1_000)]);
            await queue.close();
          } catch (error) {
            onError(name, error);
          }
        }),
      );
    })();
    return this.closing;
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

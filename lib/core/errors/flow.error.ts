import { ReactorError } from './reactor.error';

/**
 * A start of a reactor whose `concurrency` queues runs per key was refused: the key's queue holds
 * `maxQueued` runs already. Nothing was stored. Thrown to the caller of `run`/`start` (retryable:
 * the queue drains as runs finish); raise `concurrency.maxQueued`, or start fewer runs per key.
 */
export class FlowQueueFullError extends ReactorError {
  constructor(
    readonly reactorName: string,
    /** The concurrency key whose queue is full. */
    readonly key: string,
    /** How many runs the key's queue holds. */
    readonly queued: number,
  ) {
    super(
      'FLOW_QUEUE_FULL',
      `Reactor '${reactorName}': the concurrency queue of key '${key}' is full (${queued} runs wait); ` +
        `nothing was stored. Start it again once runs of the key finish, or raise concurrency.maxQueued.`,
      { retryable: true },
    );
  }

  override toJSON() {
    return { ...super.toJSON(), key: this.key, queued: this.queued };
  }
}

import type { ReactorDefinition } from '../definition/definition';
import { CorruptRecordError, DefinitionChangedError } from '../errors/run-state.error';
import { runLeaseKey } from '../model/keys';
import { isTerminal } from '../model/run-state';
import type { ResumeJob } from '../ports/job-dispatcher.port';
import type { ClaimResult, ReactorStorage } from '../ports/reactor-storage.port';
import type { Clock } from '../ports/clock.port';
import { toBrokenReason } from './broken-reason';
import type { Dispatch } from './dispatch';
import type { Executions } from './executions';
import type { LeaseKeeper } from './lease-keeper';
import type { DefinitionRegistry } from './registry';
import type { Waiters } from './waiters';

/** Resume jobs: a worker takes the run's lease, loads it, and executes it from its last checkpoint. */
export class RunJobs {
  constructor(
    private readonly storage: ReactorStorage,
    private readonly clock: Clock,
    private readonly leaseTtlMs: number,
    private readonly registry: DefinitionRegistry,
    private readonly dispatch: Dispatch,
    private readonly leases: LeaseKeeper,
    private readonly executions: Executions,
    private readonly waiters: Waiters,
  ) {}

  /**
   * Deliver one resume job. A run executing elsewhere is snoozed; a missing run is a no-op; a
   * record that cannot be used marks the run failed once and returns normally (no retry storm).
   */
  async handle(job: ResumeJob): Promise<void> {
    let def: ReactorDefinition;
    try {
      def = this.registry.get(job.reactorName);
    } catch (error) {
      await this.storage.markBroken(job.runId, job.reactorName, toBrokenReason(error));
      this.waiters.notify(job.runId);
      return;
    }
    const lease = this.leases.newLease(runLeaseKey(job.runId));
    let claim: ClaimResult;
    try {
      claim = await this.storage.acquireAndLoad(job.runId, lease, this.leaseTtlMs);
    } catch (error) {
      if (!(error instanceof CorruptRecordError)) throw error;
      await this.storage.markBroken(job.runId, def.name, toBrokenReason(error));
      await this.leases.releaseQuietly(lease);
      this.waiters.notify(job.runId);
      return;
    }
    if (!claim.acquired) {
      // Executing elsewhere: come back later, touching nothing. Uncapped: the holder is alive.
      await this.dispatch.snooze(job);
      return;
    }
    const state = claim.state;
    if (!state || isTerminal(state.status) || state.status === 'paused') {
      await this.leases.releaseQuietly(lease);
      return;
    }
    if (state.definitionHash !== def.hash) {
      await this.storage.markBroken(
        job.runId,
        def.name,
        toBrokenReason(new DefinitionChangedError(job.runId, def.name)),
      );
      await this.leases.releaseQuietly(lease);
      this.waiters.notify(job.runId);
      return;
    }
    const due = state.retryAt ? Math.max(...Object.values(state.retryAt)) - this.clock.now() : 0;
    if (due > 0) {
      // Delivered before a scheduled retry is due (a sweeper or a duplicate): re-enqueue for then.
      await this.leases.releaseQuietly(lease);
      await this.dispatch.resume(job.runId, def.name, due);
      return;
    }
    await this.executions.execute(def, state, lease, 'worker', true);
  }
}

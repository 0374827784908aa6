import { RunNotFoundError, WaitTimeoutError } from '../errors/run-state.error';
import { isTerminal, type RunState } from '../model/run-state';
import type { Clock } from '../ports/clock.port';
import type { ReactorStorage } from '../ports/reactor-storage.port';
import { ENGINE_DEFAULTS } from './engine-options';

/** Callers waiting for runs to finish: woken at once by runs finishing in this process, else polling. */
export class Waiters {
  private readonly waiting = new Map<string, Set<() => void>>();
  /**
   * Whether a paused run has an answer waiting to be applied (a resume deferred to a worker): such
   * a run is not settled yet, so `wait` right after `continue` does not return the stale pause.
   */
  pendingResume?: (state: RunState) => Promise<boolean>;

  constructor(
    private readonly storage: ReactorStorage,
    private readonly clock: Clock,
  ) {}

  /**
   * Load the run until it is terminal (or paused; `settled` says otherwise), up to `timeoutMs` on
   * the engine's clock; wake at once when {@link notify} is called for it, else poll every `pollMs`.
   */
  async until(
    runId: string,
    options: { timeoutMs?: number; pollMs?: number; settled?: (state: RunState) => boolean } = {},
  ): Promise<RunState> {
    const settled = options.settled ?? ((state: RunState) => isTerminal(state.status) || state.status === 'paused');
    const pending = async (state: RunState): Promise<boolean> =>
      state.status === 'paused' && options.settled === undefined && ((await this.pendingResume?.(state)) ?? false);
    const timeoutMs = options.timeoutMs ?? ENGINE_DEFAULTS.waitTimeoutMs;
    const pollMs = options.pollMs ?? ENGINE_DEFAULTS.waitPollMs;
    const deadline = this.clock.now() + timeoutMs;
    for (;;) {
      const state = await this.storage.load(runId);
      if (!state) throw new RunNotFoundError(runId);
      if (settled(state) && !(await pending(state))) return state;
      const left = deadline - this.clock.now();
      if (left <= 0) throw new WaitTimeoutError(runId, timeoutMs);
      await this.sleepOrWake(runId, Math.min(pollMs, left));
    }
  }

  /** Wake the callers waiting for run `runId`. */
  notify(runId: string): void {
    const set = this.waiting.get(runId);
    if (!set) return;
    this.waiting.delete(runId);
    for (const wake of set) wake();
  }

  private async sleepOrWake(runId: string, ms: number): Promise<void> {
    let set = this.waiting.get(runId);
    if (!set) this.waiting.set(runId, (set = new Set()));
    let wake!: () => void;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    set.add(wake);
    await Promise.race([this.clock.sleep(ms), woken]);
    set.delete(wake);
    // NOTE: a test clock's sleep resolves at once; let timers due now (in-process jobs) run before
    // the next poll, so a waiter on a fake clock never starves the work it waits for.
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
}

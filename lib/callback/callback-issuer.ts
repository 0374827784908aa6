import {
  InvalidArgumentError,
  NotPausedError,
  UnknownInterruptError,
  type InterruptCallback,
  type InterruptSpec,
  type PausedOutcome,
  type PendingInterrupt,
  type ReactorDefinition,
  type RunOutcome,
} from '../core';
import type { ReactorCallbackIssuer } from '../nest/reactor.client';
import type { CallbackTokens } from './callback-tokens';

/** What a definition says of an interrupt path: its spec, or that there is no such interrupt. */
type Found = { spec: InterruptSpec } | undefined;

/**
 * Hands out callback tokens for the client: for each interrupt a paused run waits at that declares
 * `token`, the token of that pause (run, path, `pausedAt`, `pausedAt + expiresInMs`) and its URL.
 * Computed on demand from the run's interrupt record: nothing is stored per token.
 */
export class CallbackIssuer implements ReactorCallbackIssuer {
  /**
   * @param urlPrefix what a token is appended to for its URL (`https://api.example.com/reactor/callbacks/`),
   *   when the module has a `baseUrl`
   */
  constructor(
    private readonly tokens: CallbackTokens,
    private readonly urlPrefix?: string,
  ) {}

  decorate(outcome: PausedOutcome, definitionOf: (name: string) => ReactorDefinition): PausedOutcome {
    let root: ReactorDefinition;
    try {
      root = definitionOf(outcome.reactorName);
    } catch {
      return outcome; // a reactor this process does not register: nothing to say of its interrupts
    }
    let changed = false;
    const waitingFor = outcome.waitingFor.map((pending) => {
      const found = interruptAt(root, pending.path, definitionOf);
      if (!found?.spec.token) return pending;
      changed = true;
      return { ...pending, callback: this.callback(outcome.runId, pending, found.spec.token.expiresInMs) };
    });
    return changed ? { ...outcome, waitingFor } : outcome;
  }

  callbackOf(outcome: RunOutcome, path: string, definitionOf: (name: string) => ReactorDefinition): InterruptCallback {
    const root = definitionOf(outcome.reactorName);
    const found = interruptAt(root, path, definitionOf);
    if (!found) throw new UnknownInterruptError(root.name, path, interruptPaths(root, definitionOf));
    if (!found.spec.token) {
      throw new InvalidArgumentError(
        'callbackToken',
        'step',
        `an interrupt declared with a token (r.interrupt('${path.split('.').at(-1)}', { token: { expiresInMs } }))`,
        path,
      );
    }
    const pending = outcome.status === 'paused' ? outcome.waitingFor.find((p) => p.path === path) : undefined;
    if (!pending) {
      throw new NotPausedError(
        outcome.runId,
        path,
        outcome.status,
        outcome.status === 'paused' ? 'it does not wait at this interrupt' : undefined,
      );
    }
    return this.callback(outcome.runId, pending, found.spec.token.expiresInMs);
  }

  private callback(runId: string, pending: PendingInterrupt, expiresInMs: number): InterruptCallback {
    const expiresAt = pending.pausedAt + expiresInMs;
    const token = this.tokens.sign({ runId, path: pending.path, pausedAt: pending.pausedAt, expiresAt });
    return { token, expiresAt, ...(this.urlPrefix !== undefined ? { url: this.urlPrefix + token } : {}) };
  }
}

/** The interrupt at `path` (`approve`, `child.approve`) of `root`, through its composed children. */
function interruptAt(root: ReactorDefinition, path: string, definitionOf: (name: string) => ReactorDefinition): Found {
  const segments = path.split('.');
  let def = root;
  for (let i = 0; i < segments.length; i++) {
    const step = def.stepsByName.get(segments[i]);
    const last = i === segments.length - 1;
    if (last) return step?.handler.kind === 'interrupt' ? { spec: step.handler.interrupt } : undefined;
    if (step?.handler.kind !== 'compose') return undefined;
    try {
      def = definitionOf(step.handler.reactorName);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** Every interrupt path of `def`, its composed children's included (for the error message). */
function interruptPaths(
  def: ReactorDefinition,
  definitionOf: (name: string) => ReactorDefinition,
  prefix = '',
  seen = new Set<string>(),
): string[] {
  if (seen.has(def.name)) return [];
  seen.add(def.name);
  const out: string[] = [];
  for (const step of def.steps) {
    if (step.handler.kind === 'interrupt') out.push(prefix + step.name);
    if (step.handler.kind !== 'compose') continue;
    let child: ReactorDefinition;
    try {
      child = definitionOf(step.handler.reactorName);
    } catch {
      continue;
    }
    out.push(...interruptPaths(child, definitionOf, `${prefix}${step.name}.`, seen));
  }
  return out;
}

import { randomUUID } from 'node:crypto';
import { RUN_STATE_SCHEMA_VERSION, type RunState } from '../../lib/core/model/run-state';

/** Fixed epoch for test states (2023-11-14T22:13:20Z). */
export const T0 = 1_700_000_000_000;

/** A new unique run id. */
export function newRunId(): string {
  return `run-${randomUUID()}`;
}

/** A complete, realistic {@link RunState} (mid-run checkout) with every required field set. */
export function makeRunState(overrides: Partial<RunState> = {}): RunState {
  const at = overrides.updatedAt ?? T0;
  return {
    schemaVersion: RUN_STATE_SCHEMA_VERSION,
    runId: newRunId(),
    reactorName: 'checkout',
    definitionHash: 'def-hash-1',
    status: 'running',
    inputs: { order: { id: 'o-1', total: 42.5, lines: [{ sku: 'A', qty: 2 }] } },
    results: { reserve: { reservationId: 'r-1' } },
    completed: ['reserve'],
    undoStack: [{ step: 'reserve', args: { order: { id: 'o-1' } }, result: { reservationId: 'r-1' } }],
    attempts: { reserve: 1 },
    trace: [{ type: 'run', step: 'reserve', at, attempt: 1, arguments: { order: '[REDACTED]' } }],
    children: {},
    createdAt: at,
    updatedAt: at,
    ...overrides,
  };
}

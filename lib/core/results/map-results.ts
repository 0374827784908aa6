import type { RunFailure } from '../model/failure';

/** One element's outcome, with its index. */
export type ElementOutcome<T> =
  | { index: number; status: 'completed'; value: T }
  | { index: number; status: 'failed'; failure: RunFailure }
  | { index: number; status: 'halted'; reason: string; details?: unknown }
  | { index: number; status: 'skipped' };

/**
 * The results of a map, read lazily. Inline maps hand `collect` an in-memory one; fan-out maps a
 * {@link ResultEnumerator} that reads records from storage in pages. Both give the same answers.
 */
export interface MapResults<T> extends AsyncIterable<ElementOutcome<T>> {
  /** Number of elements. */
  readonly count: number;
  /** Outcome of element `index` (negative counts from the end); undefined out of range. */
  at(index: number): Promise<ElementOutcome<T> | undefined>;
  /** Values of completed elements, in index order. */
  successes(): AsyncIterable<T>;
  /** Failed elements, in index order. */
  failures(): AsyncIterable<{ index: number; failure: RunFailure }>;
  /** Every completed value, in index order, loaded at once (small maps). */
  values(): Promise<T[]>;
}

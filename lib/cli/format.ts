/** Human output of the CLI: tables and a run's summary. `--json` prints the values themselves instead. */
import type { RunOutcome, RunView } from '../core';

/** Columns padded to their widest cell; the header row first. Empty rows: `none`. */
export function table(header: string[], rows: string[][]): string {
  if (rows.length === 0) return '(none)';
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** An epoch time as ISO 8601, or `-`. */
export function time(ms: number | undefined): string {
  return ms === undefined || !Number.isFinite(ms) ? '-' : new Date(ms).toISOString();
}

/** A value on one line (JSON), cut to `max` characters. */
export function inline(value: unknown, max = 200): string {
  const text = value === undefined ? '-' : typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A run's outcome in one line: `<runId> <status>` and what it ended with. */
export function outcomeLine(outcome: RunOutcome): string {
  const head = `run ${outcome.runId}: ${outcome.status}`;
  switch (outcome.status) {
    case 'completed':
      return `${head}, value ${inline(outcome.value)}`;
    case 'failed':
      return `${head} at ${outcome.failure.stepName || '-'}: ${outcome.failure.code} ${outcome.failure.errorMessage}`;
    case 'cancelled': {
      const failures = outcome.rollbackFailures ?? [];
      return `${head} (${outcome.reason})${failures.length ? `, ${failures.length} undo(s) failed` : ''}`;
    }
    case 'paused':
      return `${head} at ${outcome.waitingFor.map((w) => w.path).join(', ')}`;
    case 'halted':
      return `${head} at ${outcome.stepName}: ${outcome.reason}`;
    default:
      return head;
  }
}

/** `show`: a run's header, its steps and how it ended. */
export function runSummary(view: RunView): string {
  const fields: Array<[string, string]> = [
    ['run', view.runId],
    ['reactor', view.reactorName],
    ['status', view.status],
    ['created', time(view.createdAt)],
    ['updated', time(view.updatedAt)],
  ];
  if (view.finishedAt !== undefined) fields.push(['finished', time(view.finishedAt)]);
  if (view.retriedFrom !== undefined)
    fields.push(['retried from', `${view.retriedFrom} (retry ${view.retryCount ?? 1})`]);
  fields.push(['inputs', inline(view.inputs)]);
  if (view.outcome.status === 'completed') fields.push(['value', inline(view.value)]);
  if (view.failure) {
    const f = view.failure;
    fields.push(['failure', `${f.code} at ${f.stepName || '-'}: ${f.errorMessage}`]);
    for (const r of f.rollbackFailures ?? []) fields.push(['undo failed', `${r.step}: ${r.message}`]);
  }
  if (view.halt) fields.push(['halted', `at ${view.halt.step}: ${view.halt.reason}`]);
  if (view.cancellation) {
    fields.push(['cancelled', view.cancellation.reason]);
    for (const r of view.cancellation.rollbackFailures) fields.push(['undo failed', `${r.step}: ${r.message}`]);
  }
  if (view.outcome.status === 'paused') {
    for (const w of view.outcome.waitingFor) {
      const details = [
        w.correlationId ? `correlation id ${w.correlationId}` : '',
        w.timeoutAt ? `times out ${time(w.timeoutAt)}` : '',
      ]
        .filter(Boolean)
        .join(', ');
      fields.push(['waiting for', `${w.path}${details ? ` (${details})` : ''}`]);
    }
  }
  if (view.sleeping) fields.push(['sleeping', `${view.sleeping.step} until ${time(view.sleeping.wakeAt)}`]);
  const width = Math.max(...fields.map(([k]) => k.length));
  const head = fields.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n');
  const steps = stepRows(view);
  return `${head}\n\nsteps\n${table(['STEP', 'STATUS', 'ATTEMPTS', 'RESULT'], steps)}`;
}

/** The steps a run reached: completed ones in completion order, then those attempted and not completed. */
function stepRows(view: RunView): string[][] {
  const rows: string[][] = [];
  const done = new Set(view.completed);
  for (const step of view.completed) {
    rows.push([step, 'completed', String(view.attempts[step] ?? 1), inline(view.results[step], 80)]);
  }
  for (const [step, attempts] of Object.entries(view.attempts)) {
    if (done.has(step)) continue;
    const failed = view.failure?.stepName === step;
    rows.push([step, failed ? 'failed' : 'attempted', String(attempts), '-']);
  }
  for (const step of Object.keys(view.interrupts)) {
    if (!done.has(step) && !(step in view.attempts)) rows.push([step, 'waiting', '0', '-']);
  }
  return rows;
}

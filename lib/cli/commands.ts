/** The commands of `npx nest-reactor`, each through the booted app's `ReactorClient`. */
import { readFileSync } from 'node:fs';
import {
  getReactorMetadata,
  ReactorError,
  RunNotFoundError,
  type ContinueOptions,
  type RunOutcome,
  type RunStatus,
  type RunSummary,
} from '../core';
import { UsageError, type CliArgs, type CommandName } from './args';
import { outcomeLine, runSummary, table, time } from './format';
import type { LoadedApp } from './load-app';

/** What a command printed (`text` for people, `json` for `--json`) and its exit code. */
export interface CommandResult {
  exitCode: 0 | 1;
  json: unknown;
  text: string;
}

const STATUSES: readonly RunStatus[] = [
  'pending',
  'running',
  'paused',
  'rolling_back',
  'completed',
  'failed',
  'halted',
  'cancelled',
];

/** Run `command` against the booted app. Errors of the client propagate (the caller prints their code). */
export async function runCommand(command: CommandName, args: CliArgs, loaded: LoadedApp): Promise<CommandResult> {
  switch (command) {
    case 'list':
      return list(args, loaded);
    case 'show':
      return show(args, loaded);
    case 'retry':
      return retry(args, loaded);
    case 'cancel':
      return cancel(args, loaded);
    case 'undo':
      return undo(args, loaded);
    case 'continue':
      return answer(args, loaded);
    case 'check':
      return check(args, loaded);
  }
}

async function list(args: CliArgs, { client, engine }: LoadedApp): Promise<CommandResult> {
  if (args.status !== undefined && !STATUSES.includes(args.status as RunStatus)) {
    throw new UsageError(`--status must be one of ${STATUSES.join(', ')} (got '${args.status}').`);
  }
  const limit = args.limit ?? 50;
  const reactors = args.reactors.length ? args.reactors : engine.reactorNames().sort();
  if (args.cursor !== undefined && reactors.length !== 1) {
    throw new UsageError('--cursor continues the listing of one reactor: name it with --reactor.');
  }
  const query = { status: args.status as RunStatus | undefined, since: args.since, limit };
  let runs: RunSummary[] = [];
  let cursor: string | undefined;
  for (const reactor of reactors) {
    const page = await client.list({ ...query, reactor, cursor: args.cursor });
    runs.push(...page.runs);
    if (reactors.length === 1) cursor = page.cursor;
  }
  if (reactors.length > 1) {
    runs = runs.sort((a, b) => b.createdAt - a.createdAt || (a.runId < b.runId ? 1 : -1)).slice(0, limit);
  }
  const rows = runs.map((r) => [r.runId, r.reactorName, r.status, time(r.createdAt)]);
  const more = cursor ? `\nnext page: --reactor ${reactors[0]} --cursor ${cursor}` : '';
  return {
    exitCode: 0,
    json: { runs, ...(cursor ? { cursor } : {}) },
    text: `${table(['RUN ID', 'REACTOR', 'STATUS', 'CREATED'], rows)}${more}`,
  };
}

async function show(args: CliArgs, { client }: LoadedApp): Promise<CommandResult> {
  const view = await client.get(args.args.runId);
  if (!view) throw new RunNotFoundError(args.args.runId);
  return { exitCode: 0, json: view, text: runSummary(view) };
}

async function retry(args: CliArgs, { client }: LoadedApp): Promise<CommandResult> {
  const started = await client.retry(args.args.runId, args.new ? { new: true } : {});
  const note = started.replayed ? ' (a retry of it had started already: that run)' : '';
  const head = `retry of ${args.args.runId}: ${outcomeLine(started)}${note}`;
  if (!args.wait) return { exitCode: 0, json: started, text: head };
  const outcome = await client.wait(started.runId, waitOptions(args));
  return { exitCode: 0, json: outcome, text: `${head}\n${outcomeLine(outcome)}` };
}

async function cancel(args: CliArgs, { client }: LoadedApp): Promise<CommandResult> {
  const now = await client.cancel(args.args.runId, args.reason ?? 'cancelled from the CLI');
  if (!args.wait) return { exitCode: 0, json: now, text: outcomeLine(now) };
  const outcome = await client.wait(args.args.runId, waitOptions(args));
  return rollbackResult(outcome);
}

async function undo(args: CliArgs, { client }: LoadedApp): Promise<CommandResult> {
  const outcome = await client.undo(args.args.runId, {
    ...(args.noWait ? { wait: false } : {}),
    ...(args.timeoutMs !== undefined ? { timeoutMs: args.timeoutMs } : {}),
  });
  return rollbackResult(outcome);
}

/** A rollback's outcome: exit 1 when an undo or compensation did not complete (listed). */
function rollbackResult(outcome: RunOutcome): CommandResult {
  const failures = outcome.status === 'cancelled' ? outcome.rollbackFailures : [];
  const lines = failures.map((f) => `  ${f.kind} of ${f.step} did not complete (${f.reason}): ${f.message}`);
  return { exitCode: failures.length ? 1 : 0, json: outcome, text: [outcomeLine(outcome), ...lines].join('\n') };
}

async function answer(args: CliArgs, { client }: LoadedApp): Promise<CommandResult> {
  const { runId, step } = args.args;
  const payload = readPayload(args);
  const options: ContinueOptions = {
    // A worker of the app carries the run on, not this short-lived process (--inline: here).
    execute: args.inline ? 'inline' : 'background',
    // An operator answers a run that waits there; an early answer kept for later is the API's job.
    ifNotReached: 'refuse',
    ...(args.wait ? { wait: true } : {}),
    ...(args.timeoutMs !== undefined ? { timeoutMs: args.timeoutMs } : {}),
  };
  const result = await client.continue(runId, step, payload, options);
  const what: Record<string, string> = {
    applied: 'applied here',
    deferred: 'accepted: a worker carries the run on',
    queued: 'kept until the run reaches it',
  };
  const lines = [`${step} of ${runId}: ${what[result.accepted] ?? result.accepted}`];
  if (result.outcome) lines.push(outcomeLine(result.outcome));
  return { exitCode: 0, json: result, text: lines.join('\n') };
}

/** The payload of `continue`: `--payload <json>`, `--payload-file <file>` (`-`: stdin), or none (`null`). */
function readPayload(args: CliArgs): unknown {
  let text: string;
  let from: string;
  if (args.payload !== undefined) {
    text = args.payload;
    from = '--payload';
  } else if (args.payloadFile !== undefined) {
    from = args.payloadFile === '-' ? 'stdin' : args.payloadFile;
    try {
      text = readFileSync(args.payloadFile === '-' ? 0 : args.payloadFile, 'utf8');
    } catch (error) {
      throw new UsageError(`--payload-file: cannot read ${from}: ${(error as Error).message}`);
    }
  } else {
    return null;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new UsageError(`${from} is not JSON: ${(error as Error).message}`);
  }
}

async function check(args: CliArgs, { client, engine, registry }: LoadedApp): Promise<CommandResult> {
  const versions = new Map<string, string[]>();
  for (const reactorClass of registry.reactorClasses()) {
    const metadata = getReactorMetadata(reactorClass);
    if (!metadata) continue;
    const list = versions.get(metadata.name) ?? [];
    list.push(String(metadata.version ?? '1'));
    versions.set(metadata.name, list);
  }
  const definitions = engine
    .reactorNames()
    .sort()
    .map((name) => {
      const current = engine.definition(name);
      return {
        reactor: name,
        version: current.version,
        versions: (versions.get(name) ?? [current.version]).sort(byVersion),
        steps: current.steps.length,
        hash: current.hash,
      };
    });
  const runs = await client.runsOnOtherDefinitions(args.limit);
  const ok = runs.length === 0;
  const text = [
    `definitions (${definitions.length})`,
    table(
      ['REACTOR', 'VERSION', 'VERSIONS', 'STEPS', 'HASH'],
      definitions.map((d) => [d.reactor, d.version, d.versions.join(','), String(d.steps), d.hash.slice(0, 12)]),
    ),
    '',
    `live runs no definition here can carry on (${runs.length})`,
    table(
      ['RUN ID', 'REACTOR', 'VERSION', 'STATUS', 'REGISTERED VERSIONS'],
      runs.map((r) => [r.runId, r.reactorName, r.version, r.status, r.registeredVersions.join(',') || 'none']),
    ),
    '',
    ok
      ? 'ok: every live run can go on under these definitions'
      : `not ok: ${runs.length} live run(s) cannot go on under these definitions: keep their versions registered (@Reactor(name, { version })) or let them finish first`,
  ].join('\n');
  return { exitCode: ok ? 0 : 1, json: { ok, definitions, runsOnOtherDefinitions: runs }, text };
}

function byVersion(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}

function waitOptions(args: CliArgs): { timeoutMs?: number } {
  return args.timeoutMs !== undefined ? { timeoutMs: args.timeoutMs } : {};
}

/** An error as printed: `{ code, message, ... }` (a ReactorError's own JSON: fieldErrors, attempts, ...). */
export function errorJson(error: unknown): Record<string, unknown> {
  if (error instanceof UsageError) return { code: 'USAGE', message: error.message };
  const code = (error as { code?: unknown })?.code;
  // A ReactorError, of this copy of the package or of the app's (so by its shape, not instanceof).
  const toJSON = (error as { toJSON?: unknown })?.toJSON;
  if (error instanceof ReactorError || (typeof code === 'string' && typeof toJSON === 'function')) {
    return { ...(toJSON as () => Record<string, unknown>).call(error) };
  }
  return {
    code: typeof code === 'string' ? code : 'ERROR',
    message: error instanceof Error ? error.message : String(error),
  };
}

/** An error for people: `error CODE: message`, then its field errors, one a line. */
export function errorText(error: unknown): string {
  const json = errorJson(error);
  const lines = [`error ${String(json.code)}: ${String(json.message)}`];
  const fieldErrors = json.fieldErrors as Record<string, string[]> | undefined;
  for (const [field, problems] of Object.entries(fieldErrors ?? {})) lines.push(`  ${field}: ${problems.join('; ')}`);
  return lines.join('\n');
}

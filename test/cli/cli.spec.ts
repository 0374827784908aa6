/**
 * `npx nest-reactor` on Redis: the CLI (lib/cli, compiled with the fixture app by tsc as the
 * package's build compiles it) runs as a child process against test/cli/fixtures/app.module.ts
 * under a prefix of its own. This process boots the same app with workers to make the runs (one
 * completed, one failed, three paused at an interrupt); the CLI boots it as a client and lists,
 * shows, retries, cancels, undoes, answers and checks them, in tables and with --json, and exits
 * 0 (done), 1 (refused, naming the error's code) or 2 (usage).
 */
import { execFile, execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { CLIENT_ONLY_PROCESS, resolveReactorModuleOptions } from '../../lib/nest/reactor-module.options';
import { cleanupPrefix, createTestRedis, redisUrl, uniquePrefix } from '../setup/redis';

const root = join(__dirname, '..', '..');
const prefix = uniquePrefix('cli');
const work = mkdtempSync(join(tmpdir(), 'nest-reactor-cli-'));
const out = join(work, 'out');
const log = join(work, 'undo.log');
const redis = createTestRedis();

// The fixture resolves its module options when it is loaded: the environment comes first.
process.env.CLI_TEST_PREFIX = prefix;
process.env.CLI_TEST_LOG = log;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const fixture = require('./fixtures/app.module') as typeof import('./fixtures/app.module');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The CLI, as a child process of its own, from the compiled output's folder. */
function cli(args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(out, 'lib', 'cli', 'main.js'), ...args],
      {
        cwd: out,
        timeout: 60_000,
        env: {
          ...process.env,
          NODE_PATH: join(root, 'node_modules'),
          REDIS_URL: redisUrl(),
          CLI_TEST_PREFIX: prefix,
          CLI_TEST_LOG: log,
          NEST_REACTOR_APP: undefined,
          NEST_REACTOR_MODULE: undefined,
          ...env,
        },
      },
      (error, stdout, stderr) =>
        resolve({ code: error ? ((error as { code?: number }).code ?? null) : 0, stdout, stderr }),
    );
  });
}

const APP = ['--app', 'test/cli/fixtures/app.module.js'];
const json = <T = Record<string, any>>(run: Run): T => JSON.parse(run.stdout) as T;

let app: INestApplicationContext;
let client: ReactorClient;
const runs: Record<'completed' | 'failed' | 'approval' | 'cancel' | 'legacy', string> = {} as never;

beforeAll(async () => {
  // The package's build compiles lib/ with tsc (tools/build.mjs); so is the CLI here, with the fixture.
  writeFileSync(
    join(work, 'tsconfig.json'),
    JSON.stringify({
      extends: join(root, 'tsconfig.json'),
      compilerOptions: {
        outDir: out,
        rootDir: root,
        types: ['node'],
        typeRoots: [join(root, 'node_modules', '@types')],
        declaration: false,
        sourceMap: false,
      },
      files: [join(root, 'lib', 'cli', 'main.ts'), join(root, 'test', 'cli', 'fixtures', 'app.module.ts')],
      include: [],
    }),
  );
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', join(work, 'tsconfig.json')], {
    stdio: 'pipe',
  });
  expect(existsSync(join(out, 'lib', 'cli', 'main.js'))).toBe(true);
  cpSync(join(root, 'lib', 'scripts'), join(out, 'lib', 'scripts'), { recursive: true }); // as tools/build.mjs does

  app = await NestFactory.createApplicationContext(fixture.AppModule, { logger: false });
  client = app.get(ReactorClient);
  const completed = await client.run(fixture.OrdersReactor, { orderId: 'o-1', card: '4242-secret' });
  const failed = await client.run(fixture.OrdersReactor, { orderId: 'o-2', card: '4242-secret', fail: true });
  const approval = await client.run(fixture.ApprovalReactor, { orderId: 'a-1' });
  const cancel = await client.run(fixture.ApprovalReactor, { orderId: 'a-2' });
  const legacy = await client.run(fixture.LegacyReactorV1, { orderId: 'l-1' });
  expect([completed.status, failed.status, approval.status, cancel.status, legacy.status]).toEqual([
    'completed',
    'failed',
    'paused',
    'paused',
    'paused',
  ]);
  Object.assign(runs, {
    completed: completed.runId,
    failed: failed.runId,
    approval: approval.runId,
    cancel: cancel.runId,
    legacy: legacy.runId,
  });
}, 120_000);

afterAll(async () => {
  await app?.close();
  await cleanupPrefix(redis, prefix);
  await redis.quit();
  rmSync(work, { recursive: true, force: true });
});

describe('usage (exit 2)', () => {
  it.each([
    ['no command', []],
    ['an unknown command', ['frobnicate', ...APP]],
    ['a missing run id', ['show', ...APP]],
    ['an option of another command', ['show', 'r-1', '--reason', 'x', ...APP]],
    ['an unknown option', ['list', '--bogus', ...APP]],
    ['a bad --limit', ['list', '--limit', 'ten', ...APP]],
    ['a bad --status', ['list', '--status', 'done', ...APP]],
    ['no --app', ['list']],
    ['an --app that is not there', ['list', '--app', 'nope.js']],
    ['a --module the file does not export', ['list', ...APP, '--module', 'NopeModule']],
    ['an app on the embedded runtime', ['list', ...APP, '--module', 'EmbeddedModule']],
    ['a payload that is not JSON', ['continue', 'r-1', 'approve', '--payload', '{nope', ...APP]],
  ])('%s', async (_what, args) => {
    const run = await cli(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/(^|\n)error USAGE: /); // after the app's own warnings, if any
    expect(run.stderr).toContain('nest-reactor --help');
    expect(run.stdout).toBe('');
  });

  it('--json prints a usage error as JSON on stdout; --help prints the usage and exits 0', async () => {
    const run = await cli(['list', '--json']);
    expect(run.code).toBe(2);
    expect(json(run)).toEqual({ error: { code: 'USAGE', message: expect.stringContaining('--app') } });
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: nest-reactor <command>');
    for (const command of ['list', 'show', 'retry', 'cancel', 'undo', 'continue', 'check'])
      expect(help.stdout).toContain(`\n  ${command}`);
  });
});

describe('list and show', () => {
  it("lists a reactor's runs newest first, as a table and as JSON; every reactor's without --reactor", async () => {
    const one = await cli(['list', '--reactor', 'cli-orders', '--json', ...APP]);
    expect(one.code).toBe(0);
    expect(json(one).runs.map((r: { runId: string }) => r.runId)).toEqual([runs.failed, runs.completed]);

    const all = await cli(['list', ...APP]);
    expect(all.code).toBe(0);
    const [header, ...lines] = all.stdout.trim().split('\n');
    expect(header.split(/\s{2,}/)).toEqual(['RUN ID', 'REACTOR', 'STATUS', 'CREATED']);
    expect(lines).toHaveLength(5);
    expect(lines[0]).toMatch(new RegExp(`^${runs.legacy}\\s+cli-legacy\\s+paused\\s+\\d{4}-`));

    const failed = await cli(['list', '--status', 'failed', '--since', '1h', '--json', ...APP]);
    expect(json(failed).runs).toEqual([expect.objectContaining({ runId: runs.failed, status: 'failed' })]);

    const paged = await cli(['list', '--reactor', 'cli-approval', '--limit', '1', '--json', ...APP]);
    const { runs: page, cursor } = json(paged);
    expect(page).toHaveLength(1);
    const next = await cli(['list', '--reactor', 'cli-approval', '--cursor', cursor, '--json', ...APP]);
    expect([...page, ...json(next).runs].map((r: { runId: string }) => r.runId)).toEqual([runs.cancel, runs.approval]);
  });

  it('shows a run as client.get does, the redacted input redacted', async () => {
    const asJson = await cli(['show', runs.completed, '--json', ...APP]);
    expect(asJson.code).toBe(0);
    const view = json(asJson);
    expect(view).toEqual(await client.get(runs.completed));
    expect(view.inputs).toEqual({ orderId: 'o-1', card: '[REDACTED]', fail: false });

    const text = await cli(['show', runs.failed, ...APP]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^run\s+/);
    expect(text.stdout).toMatch(/status\s+failed/);
    expect(text.stdout).toMatch(/failure\s+STEP_FAILED at charge: card declined/);
    expect(text.stdout).toMatch(/\nreserve\s+completed\s+1\s+R-o-2\ncharge\s+failed\s+1\s+-\n/);
    expect(text.stdout).not.toContain('4242-secret');
    expect(asJson.stdout).not.toContain('4242-secret');
  });

  it('an unknown run: exit 1 with RUN_NOT_FOUND, on stderr or as JSON', async () => {
    const text = await cli(['show', 'no-such-run', ...APP]);
    expect(text.code).toBe(1);
    expect(text.stderr).toMatch(/^error RUN_NOT_FOUND: Run 'no-such-run' was not found/);
    const asJson = await cli(['show', 'no-such-run', '--json', ...APP]);
    expect(asJson.code).toBe(1);
    expect(json(asJson).error).toEqual(expect.objectContaining({ code: 'RUN_NOT_FOUND' }));
  });
});

describe('operations', () => {
  it('retry: a failed run starts again as a new run linked to it (a worker of the app runs it); a completed one is refused', async () => {
    const refused = await cli(['retry', runs.completed, ...APP]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error INVALID_RUN_STATE: /);

    const retried = await cli(['retry', runs.failed, '--wait', '--timeout', '20s', '--json', ...APP]);
    expect(retried.code).toBe(0);
    const outcome = json(retried);
    expect(outcome.runId).not.toBe(runs.failed);
    expect(outcome.status).toBe('failed'); // the same inputs fail the same way
    expect((await client.get(outcome.runId))?.retriedFrom).toBe(runs.failed);

    const again = await cli(['retry', runs.failed, ...APP]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`retry of ${runs.failed}: run ${outcome.runId}`);
    expect(again.stdout).toContain('had started already');
  });

  it("undo: a finished run's steps are undone newest first, by the CLI's process; a second undo is refused", async () => {
    rmSync(log, { force: true });
    const undone = await cli(['undo', runs.completed, ...APP]);
    expect(undone.code).toBe(0);
    expect(undone.stdout.trim()).toBe(`run ${runs.completed}: cancelled (undo)`);
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    expect(lines.map((l) => l.split(' pid=')[0])).toEqual(['undo C-o-1', 'undo R-o-1']);
    for (const line of lines) expect(line).not.toContain(`pid=${process.pid}`);
    expect((await client.get(runs.completed))?.status).toBe('cancelled');

    const again = await cli(['undo', runs.completed, '--json', ...APP]);
    expect(again.code).toBe(1);
    expect(json(again).error.code).toBe('INVALID_RUN_STATE');
  });

  it("continue: the payload is checked against the interrupt's contract here, a worker of the app carries the run on", async () => {
    const invalid = await cli(['continue', runs.approval, 'approve', '--payload', '{"approved":"yes"}', ...APP]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/^error PAYLOAD_INVALID: /);
    expect(invalid.stderr).toMatch(/\n {2}approved: /);
    expect((await client.get(runs.approval))?.status).toBe('paused');

    const wrongStep = await cli(['continue', runs.approval, 'nope', '--json', ...APP]);
    expect(wrongStep.code).toBe(1);
    expect(json(wrongStep).error.code).toMatch(/^(INTERRUPT_NOT_FOUND|RUN_NOT_PAUSED)$/);

    const payload = join(work, 'payload.json');
    writeFileSync(payload, '{"approved":true}');
    const answered = await cli([
      'continue',
      runs.approval,
      'approve',
      '--payload-file',
      payload,
      '--wait',
      '--json',
      ...APP,
    ]);
    expect(answered.code).toBe(0);
    expect(json(answered)).toEqual(
      expect.objectContaining({
        accepted: 'deferred',
        reason: 'background',
        outcome: expect.objectContaining({ status: 'completed', value: 'shipped a-1' }),
      }),
    );

    const twice = await cli(['continue', runs.approval, 'approve', '--payload', '{"approved":true}', ...APP]);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toMatch(/^error (RUN_NOT_PAUSED|ALREADY_RESUMED|INVALID_RUN_STATE): /);
  });

  it("cancel: a paused run is cancelled with the reason, its completed steps undone; a finished run's cancel is refused", async () => {
    rmSync(log, { force: true });
    const cancelled = await cli([
      'cancel',
      runs.cancel,
      '--reason',
      'ops: duplicate order',
      '--wait',
      '--json',
      ...APP,
    ]);
    expect(cancelled.code).toBe(0);
    expect(json(cancelled)).toEqual(
      expect.objectContaining({ status: 'cancelled', reason: 'ops: duplicate order', rollbackFailures: [] }),
    );
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    expect(lines).toEqual([expect.stringMatching(/^undo R-a-2 pid=\d+$/)]);
    expect(lines[0]).not.toContain(`pid=${process.pid}`); // nobody held it: the CLI undid it

    const again = await cli(['cancel', runs.cancel, ...APP]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^error INVALID_RUN_STATE: /);
  });
});

describe('check, before a deploy', () => {
  it('the build in production: its definitions, and every live run can go on (exit 0)', async () => {
    const run = await cli(['check', ...APP]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^definitions \(3\)\nREACTOR\s+VERSION\s+VERSIONS\s+STEPS\s+HASH\n/);
    expect(run.stdout).toMatch(/\ncli-legacy\s+1\s+1\s+3\s+[0-9a-f]{12}\n/);
    expect(run.stdout).toContain('live runs no definition here can carry on (0)\n(none)');
    expect(run.stdout.trim().split('\n').pop()).toBe('ok: every live run can go on under these definitions');
  });

  it('the next build, with cli-legacy at version 2 only: the paused v1 run is listed (exit 1)', async () => {
    const run = await cli(['check', ...APP, '--module', 'NextBuildModule', '--json']);
    expect(run.code).toBe(1);
    const report = json(run);
    expect(report.ok).toBe(false);
    expect(report.definitions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ reactor: 'cli-legacy', version: '2', versions: ['2'], steps: 1 }),
      ]),
    );
    expect(report.runsOnOtherDefinitions).toEqual([
      { runId: runs.legacy, reactorName: 'cli-legacy', version: '1', status: 'paused', registeredVersions: ['2'] },
    ]);

    const text = await cli(['check', ...APP, '--module', 'NextBuildModule']);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(new RegExp(`\\n${runs.legacy}\\s+cli-legacy\\s+1\\s+paused\\s+2\\n`));
    expect(text.stdout).toContain('not ok: 1 live run(s) cannot go on');
  });
});

describe('the bin', () => {
  it('is the compiled lib/cli/main.ts, a node script', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { bin?: Record<string, string> };
    expect(pkg.bin).toEqual({ 'nest-reactor': 'dist/lib/cli/main.js' });
    expect(readFileSync(join(root, 'lib', 'cli', 'main.ts'), 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    expect(readFileSync(join(out, 'lib', 'cli', 'main.js'), 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
  });

  it("boots the app as a client: the CLI's switch turns workers and the sweeper off, whatever the options say", () => {
    const global = globalThis as Record<symbol, unknown>;
    global[CLIENT_ONLY_PROCESS] = true;
    try {
      const options = resolveReactorModuleOptions({ workers: true, sweeper: { enabled: true, intervalMs: 60_000 } });
      expect(options.workers).toBe(false);
      expect(options.sweeper).toEqual({ enabled: false, intervalMs: 60_000 });
      expect(() => resolveReactorModuleOptions({ workers: 'yes' as never })).toThrow(/workers/);
    } finally {
      delete global[CLIENT_ONLY_PROCESS];
    }
    expect(resolveReactorModuleOptions({}).workers).toBe(true);
  });
});

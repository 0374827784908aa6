import { execFile } from 'node:child_process';
import { Logger } from '@nestjs/common';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ConfigurationError, DefinitionError } from '../../lib';
import { validateReactors } from '../../lib/testing';
import { AppModule as SampleAppModule } from '../../sample/app.module';
import { CapturingLogger } from '../nest/fixtures';
import {
  AsyncOptionsAppModule,
  ChildReactor,
  FeatureAppModule,
  GoodAppModule,
  Ledger,
  MissingChildAppModule,
  MissingDependencyAppModule,
  MissingStepAppModule,
  NoReactorModuleAppModule,
  NotifyStep,
  ParentReactor,
  RecordStep,
  RedisAppModule,
  RegisteredRateLimitAppModule,
  TypoAppModule,
  UnregisteredRateLimitAppModule,
} from './fixtures/validate-reactors.fixtures';

describe('validateReactors', () => {
  it('passes on the sample application and reports what it checked', async () => {
    await expect(validateReactors(SampleAppModule)).resolves.toEqual({
      reactors: [
        'checkout',
        'credit-approval',
        'invoice',
        'nightly-stock-report',
        'receipt',
        'reindex-user',
        'restock-import',
        'restock-line',
        'tenant-export',
      ],
      steps: [
        'add-stock',
        'charge-payment',
        'create-shipment',
        'issue-credit',
        'reserve-inventory',
        'screen-fraud',
        'send-receipt',
        'settle-invoice',
        'snapshot-stock',
        'write-export',
      ],
      optionsChecked: true,
    });
  });

  it('finds reactors in the root module and in imported feature modules', async () => {
    await expect(validateReactors(GoodAppModule)).resolves.toMatchObject({ reactors: ['vr-child', 'vr-parent'] });
    await expect(validateReactors(FeatureAppModule)).resolves.toMatchObject({ reactors: ['vr-child', 'vr-parent'] });
  });

  it("fails with the boot's error, naming the reactor and step", async () => {
    const error = await validateReactors(TypoAppModule).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(DefinitionError);
    expect(error).toMatchObject({ reactorName: 'vr-typo' });
    expect((error as Error).message).toMatch(/recrod/);
    expect((error as Error).message).toMatch(/did you mean 'record'/i);
  });

  it('fails on a composed reactor that is not registered', async () => {
    await expect(validateReactors(MissingChildAppModule)).rejects.toThrow(/vr-child|ChildReactor/);
  });

  it('fails on a step class that is not a provider', async () => {
    await expect(validateReactors(MissingStepAppModule)).rejects.toThrow(/RecordStep/);
  });

  it('fails when Nest cannot resolve a dependency, as the boot would', async () => {
    await expect(validateReactors(MissingDependencyAppModule)).rejects.toThrow(
      /could not resolve the module graph.*Ledger/s,
    );
  });

  it('fails on a module that does not import ReactorModule (its reactors would never be registered)', async () => {
    await expect(validateReactors(NoReactorModuleAppModule)).rejects.toThrow(/does not import ReactorModule/);
  });

  it('checks rate limit names against forRoot options, and accepts any under forRootAsync', async () => {
    await expect(validateReactors(UnregisteredRateLimitAppModule)).rejects.toThrow(ConfigurationError);
    await expect(validateReactors(UnregisteredRateLimitAppModule)).rejects.toThrow(/rate limit 'crm'/);
    await expect(validateReactors(RegisteredRateLimitAppModule)).resolves.toMatchObject({ optionsChecked: true });
    await expect(validateReactors(AsyncOptionsAppModule)).resolves.toMatchObject({
      reactors: ['vr-limited'],
      optionsChecked: false,
    });
  });

  it('never connects: a Redis application is checked with no Redis at its URL', async () => {
    await expect(validateReactors(RedisAppModule)).resolves.toMatchObject({ reactors: ['vr-child', 'vr-parent'] });
  });

  it('takes a list of providers, read as a module of them', async () => {
    await expect(
      validateReactors([Ledger, RecordStep, NotifyStep, ChildReactor, ParentReactor]),
    ).resolves.toMatchObject({ reactors: ['vr-child', 'vr-parent'], optionsChecked: false });
    await expect(validateReactors([Ledger, NotifyStep, ChildReactor, ParentReactor])).rejects.toThrow(/RecordStep/);
  });

  it("leaves Nest's global logger as it was (the check itself logs nothing)", async () => {
    const logging = Logger as unknown as { staticInstanceRef?: unknown };
    const before = logging.staticInstanceRef;
    const mine = new CapturingLogger();
    Logger.overrideLogger(mine);
    try {
      await validateReactors(GoodAppModule);
      await validateReactors(TypoAppModule).catch(() => undefined);
      await validateReactors(MissingDependencyAppModule).catch(() => undefined);
      expect(logging.staticInstanceRef).toBe(mine);
      expect(mine.entries).toEqual([]);
    } finally {
      logging.staticInstanceRef = before;
    }
  });

  it('refuses a check that found nothing, and a target that is no module', async () => {
    await expect(validateReactors([Ledger])).rejects.toThrow(/found no @Reactor provider/);
    await expect(validateReactors('AppModule' as never)).rejects.toThrow(TypeError);
  });

  // The README's one-line test, run by jest itself on a valid and a broken application.
  it('the documented one-liner passes on a good application and fails on a broken one', async () => {
    const root = join(__dirname, '..', '..');
    const config = {
      rootDir: root,
      roots: ['<rootDir>/test/testing/fixtures'],
      testMatch: ['**/one-liner-*.case.ts'],
      testEnvironment: 'node',
      transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: { isolatedModules: true } }] },
      setupFiles: ['reflect-metadata'],
    };
    const result = await promisify(execFile)(
      process.execPath,
      [require.resolve('jest/bin/jest'), '--config', JSON.stringify(config), '--json', '--runInBand'],
      { cwd: root, maxBuffer: 16 * 1024 * 1024 },
    ).then(
      (r) => r,
      (e: { stdout: string; stderr: string }) => e,
    );
    const report = JSON.parse(result.stdout) as {
      testResults: Array<{ name: string; assertionResults: Array<{ status: string; failureMessages: string[] }> }>;
    };
    const byFile = Object.fromEntries(
      report.testResults.map((r) => [r.name.replace(/.*one-liner-(\w+)\.case\.ts$/, '$1'), r.assertionResults[0]]),
    );
    expect(byFile.good?.status).toBe('passed');
    expect(byFile.broken?.status).toBe('failed');
    expect(byFile.broken?.failureMessages.join('\n')).toMatch(/vr-typo.*recrod/s);
  }, 120_000);
});

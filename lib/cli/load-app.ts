/** Loading the application the CLI operates through, and booting it as a client (no workers, no sweeper). */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { INestApplicationContext, LoggerService, LogLevel, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ReactorClient } from '../nest/reactor.client';
import { ReactorRegistry } from '../nest/reactor.registry';
import { CLIENT_ONLY_PROCESS } from '../nest/reactor-module.options';
import { ReactorEngine } from '../core';
import { REACTOR_RUNTIME, type ReactorRuntime } from '../config';
import { UsageError } from './args';

/** The booted application and what the commands use of it. */
export interface LoadedApp {
  app: INestApplicationContext;
  client: ReactorClient;
  engine: ReactorEngine;
  registry: ReactorRegistry;
}

/** Nest's module metadata keys: a class carrying one of them is a `@Module`. */
const MODULE_KEYS = ['imports', 'providers', 'controllers', 'exports'];

/**
 * Load `file` (resolved from `cwd`) and pick its module: the export named `moduleName`, else
 * `AppModule`, else `default`, else its only `@Module` class. @throws UsageError
 */
export async function loadAppModule(file: string, moduleName: string | undefined, cwd: string): Promise<Type> {
  const path = resolve(cwd, file);
  if (!existsSync(path)) throw new UsageError(`--app: no file at ${path}.`);
  const exports = await importFile(path);
  const candidates = Object.entries(exports).filter(([, value]) => typeof value === 'function');
  const named = (name: string) => candidates.find(([key]) => key === name)?.[1] as Type | undefined;
  if (moduleName !== undefined) {
    const found = named(moduleName);
    if (!found) throw new UsageError(`--module: ${path} exports no '${moduleName}' (it exports ${names(candidates)}).`);
    return found;
  }
  const modules = candidates.filter(([, value]) =>
    MODULE_KEYS.some((key) => Reflect.getMetadata(key, value as object) !== undefined),
  );
  const chosen = named('AppModule') ?? named('default') ?? (modules.length === 1 ? (modules[0][1] as Type) : undefined);
  if (!chosen) {
    throw new UsageError(
      `${path} exports no AppModule, no default and ${modules.length ? 'several modules' : 'no module'} (${names(candidates)}): name it with --module <export>.`,
    );
  }
  return chosen;
}

function names(entries: Array<[string, unknown]>): string {
  return entries.length ? entries.map(([key]) => key).join(', ') : 'nothing callable';
}

/** `require` the file; an ES module that `require` cannot load (top-level await, older Node) is imported. */
async function importFile(path: string): Promise<Record<string, unknown>> {
  try {
    return createRequire(path)(path) as Record<string, unknown>;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code !== 'ERR_REQUIRE_ESM' && code !== 'ERR_REQUIRE_ASYNC_MODULE') throw error;
    // NOTE: a Function, so tsc (CommonJS output) keeps the dynamic import instead of making it a require.
    const load = new Function('url', 'return import(url)') as (url: string) => Promise<Record<string, unknown>>;
    return load(pathToFileURL(path).href);
  }
}

/**
 * Boot `module` as a Nest application context with every `ReactorModule` of the process made a
 * client (no workers, no sweeper: see `CLIENT_ONLY_PROCESS`). The app's log lines go to stderr:
 * errors and warnings, or every level with `verbose`. A module whose reactors run on the embedded
 * runtime (in this process's memory) has nothing the CLI could reach: refused (UsageError).
 */
export async function bootApp(module: Type, verbose: boolean): Promise<LoadedApp> {
  const app = await NestFactory.createApplicationContext(module, {
    logger: stderrLogger(
      verbose ? ['log', 'error', 'warn', 'debug', 'verbose', 'fatal'] : ['error', 'warn', 'fatal'],
      verbose,
    ),
    abortOnError: false,
  });
  try {
    let client: ReactorClient;
    try {
      client = app.get(ReactorClient, { strict: false });
    } catch {
      throw new UsageError(
        `${module.name} does not import ReactorModule, or imports another copy of nest-reactor than this CLI's: run the CLI the app installs (npx nest-reactor from the app's folder).`,
      );
    }
    const runtime = app.get<string | symbol, ReactorRuntime>(REACTOR_RUNTIME, { strict: false });
    if (runtime.kind === 'embedded') {
      throw new UsageError(
        `${module.name} runs ReactorModule on the embedded runtime (its runs live in one process's memory): the CLI operates on Redis. Boot a module configured with redis (ReactorModule.forRoot({ redis, prefix })).`,
      );
    }
    return {
      app,
      client,
      engine: app.get(ReactorEngine, { strict: false }),
      registry: app.get(ReactorRegistry, { strict: false }),
    };
  } catch (error) {
    await app.close().catch(() => undefined);
    throw error;
  }
}

/** Mark this process client-only: set before the app's file is loaded (`forRoot` resolves its options then). */
export function markClientOnly(): void {
  (globalThis as Record<symbol, unknown>)[CLIENT_ONLY_PROCESS] = true;
}

/**
 * A Nest logger writing the given levels to stderr, so stdout holds only the command's output. A
 * boot that fails is printed once, by the CLI, with its code: Nest's own report of it (context
 * `ExceptionHandler`, with the stack) only with `verbose`.
 */
function stderrLogger(levels: LogLevel[], verbose: boolean): LoggerService {
  const write =
    (level: LogLevel) =>
    (message: unknown, ...rest: unknown[]): void => {
      if (!levels.includes(level)) return;
      const name = rest.length && typeof rest[rest.length - 1] === 'string' ? String(rest.pop()) : undefined;
      if (name === 'ExceptionHandler' && !verbose) return;
      const context = name ? `[${name}] ` : '';
      const text = message instanceof Error ? (message.stack ?? message.message) : String(message);
      const extra = rest.filter((r) => r !== undefined).map(String);
      process.stderr.write(`${level} ${context}${[text, ...extra].join(' ')}\n`);
    };
  return {
    log: write('log'),
    error: write('error'),
    warn: write('warn'),
    debug: write('debug'),
    verbose: write('verbose'),
    fatal: write('fatal'),
  };
}

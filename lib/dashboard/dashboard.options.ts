import type { CanActivate, ModuleMetadata, Type } from '@nestjs/common';
import { ConfigurationError } from '../core';
import { messages } from '../config';

/** Options of `ReactorDashboardModule.forRoot`. */
export interface ReactorDashboardOptions {
  /**
   * Where the dashboard is mounted, relative to the app (and to its global prefix, if any): the page
   * at `/<path>/`, the JSON API under `/<path>/api`. @default 'reactor'
   */
  path?: string;
  /**
   * The guard every route of the dashboard goes through (the page, its assets, the JSON API and
   * every action): your auth guard, as a `CanActivate` class (built by Nest, with its
   * dependencies from {@link imports}) or instance. Required unless `NODE_ENV` is `development`.
   */
  guard?: CanActivate | Type<CanActivate>;
  /** Modules the guard's dependencies come from (and `ReactorModule`, when it is not global). */
  imports?: ModuleMetadata['imports'];
  /** How often the page polls a run and the runs table while it is open. @default 1500 */
  pollIntervalMs?: number;
  /**
   * The counts by status read at most this many runs of each reactor (newest first) and say
   * `capped` beyond; narrow them with a time range. @default 10000
   */
  countLimit?: number;
}

/** The options with their defaults. @internal */
export interface ResolvedDashboardOptions {
  path: string;
  guard?: CanActivate | Type<CanActivate>;
  imports: NonNullable<ModuleMetadata['imports']>;
  pollIntervalMs: number;
  countLimit: number;
}

/** Injection token of the resolved options. @internal */
export const DASHBOARD_OPTIONS = Symbol('nest-reactor:dashboard-options');

const PATH = /^[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*$/;

function isGuard(value: unknown): value is CanActivate | Type<CanActivate> {
  if (typeof value === 'function') return typeof (value.prototype as Partial<CanActivate>)?.canActivate === 'function';
  return typeof value === 'object' && value !== null && typeof (value as CanActivate).canActivate === 'function';
}

/**
 * Check and default the options. Without a guard it refuses (a `ConfigurationError`) unless
 * `nodeEnv` is `development`.
 * @internal
 */
export function resolveDashboardOptions(
  options: ReactorDashboardOptions = {},
  nodeEnv: string | undefined = process.env.NODE_ENV,
): ResolvedDashboardOptions {
  if (typeof options !== 'object' || options === null)
    throw new ConfigurationError(messages.dashboardOptionInvalid('options', 'an object', options));
  const path = (options.path ?? 'reactor').replace(/^\/+|\/+$/g, '');
  if (!PATH.test(path))
    throw new ConfigurationError(
      messages.dashboardOptionInvalid('path', "a URL path such as 'reactor' or 'admin/reactor'", options.path),
      'path',
    );
  if (options.guard === undefined) {
    if (nodeEnv !== 'development') throw new ConfigurationError(messages.dashboardWithoutGuard(nodeEnv), 'guard');
  } else if (!isGuard(options.guard)) {
    throw new ConfigurationError(
      messages.dashboardOptionInvalid('guard', 'a CanActivate class or instance', options.guard),
      'guard',
    );
  }
  const pollIntervalMs = options.pollIntervalMs ?? 1500;
  if (!Number.isInteger(pollIntervalMs) || pollIntervalMs < 100)
    throw new ConfigurationError(
      messages.dashboardOptionInvalid('pollIntervalMs', 'an integer >= 100', options.pollIntervalMs),
      'pollIntervalMs',
    );
  const countLimit = options.countLimit ?? 10_000;
  if (!Number.isInteger(countLimit) || countLimit < 1)
    throw new ConfigurationError(
      messages.dashboardOptionInvalid('countLimit', 'an integer >= 1', options.countLimit),
      'countLimit',
    );
  return { path, guard: options.guard, imports: options.imports ?? [], pollIntervalMs, countLimit };
}

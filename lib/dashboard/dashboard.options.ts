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
  /**
   * The counts of one filter are read at most once per this many ms (at most 60000: counts are
   * never reused for longer than a minute), and shared by every request in between (concurrent
   * requests wait for the same reading); when a reading is costly they are reused for 20 times as
   * long as it took (at most a minute). Each answer says `refreshAfterMs`, and the page asks no
   * sooner. @default 2000
   */
  countsCacheMs?: number;
  /**
   * The origin (or origins) browsers reach the dashboard at, such as `'https://ops.example.com'`
   * (scheme, host and port; no path): an action whose `Origin` is not one of them is refused. Set it
   * when a proxy in front of the app changes the scheme or the host (TLS terminated at the proxy).
   * Unset, an action's `Origin` is compared with the request's own origin: the connection's scheme
   * and the `Host` header. Not with `trustProxy`.
   */
  publicOrigin?: string | readonly string[];
  /**
   * Take the request's own scheme and host from `X-Forwarded-Proto` and `X-Forwarded-Host` (the last
   * value of each, when a proxy appended to a list) for the origin check of actions. Only when every
   * request reaches the app through a proxy that sets both (so a client cannot choose them): a page
   * on another site that may send headers (an app granting CORS) could otherwise pass its own origin
   * off as the app's. Prefer `publicOrigin`. @default false
   */
  trustProxy?: boolean;
}

/** The options with their defaults. @internal */
export interface ResolvedDashboardOptions {
  path: string;
  guard?: CanActivate | Type<CanActivate>;
  imports: NonNullable<ModuleMetadata['imports']>;
  pollIntervalMs: number;
  countLimit: number;
  countsCacheMs: number;
  /** The `publicOrigin`s, serialized (`https://host[:port]`); empty when unset. */
  publicOrigins: string[];
  trustProxy: boolean;
}

/** Injection token of the resolved options. @internal */
export const DASHBOARD_OPTIONS = Symbol('nest-reactor:dashboard-options');

/** Segments of unreserved characters separated by single slashes; a segment of dots only is refused below. */
const PATH = /^[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*$/;
const PATH_EXPECTED =
  "a plain URL path such as 'reactor' or 'admin/reactor' (segments of letters, digits, '-', '.', '_' and '~' " +
  "separated by single slashes, no '.' or '..' segment, no '//')";

/** The path without one leading and one trailing slash, if it is a plain path; otherwise undefined. */
function plainPath(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const path = value.replace(/^\//, '').replace(/\/$/, '');
  if (!PATH.test(path)) return undefined;
  if (path.split('/').some((segment) => /^\.+$/.test(segment))) return undefined;
  return path;
}

const ORIGIN_EXPECTED =
  "an origin such as 'https://ops.example.com' (http or https, a host, a port; no path), or a list of them";

/** A configured origin, serialized; undefined if it is not exactly `http(s)://host[:port]` (an optional trailing `/`). */
function publicOrigin(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.username !== '' || url.password !== '' || url.pathname !== '/' || url.search !== '' || url.hash !== '')
    return undefined;
  if (!/^https?:\/\/[^/?#@]+\/?$/i.test(value)) return undefined;
  return url.origin;
}

/** A bad dashboard option: the message says what it must be, `option` names it. */
function invalid(option: string, expected: string, value: unknown): ConfigurationError {
  return new ConfigurationError(messages.dashboardOptionInvalid(option, expected, value), option);
}

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
  const path = plainPath(options.path ?? 'reactor');
  if (path === undefined) throw invalid('path', PATH_EXPECTED, options.path);
  if (options.guard === undefined) {
    if (nodeEnv !== 'development') throw new ConfigurationError(messages.dashboardWithoutGuard(nodeEnv), 'guard');
  } else if (!isGuard(options.guard)) {
    throw invalid('guard', 'a CanActivate class or instance', options.guard);
  }
  const pollIntervalMs = options.pollIntervalMs ?? 1500;
  if (!Number.isInteger(pollIntervalMs) || pollIntervalMs < 100)
    throw invalid('pollIntervalMs', 'an integer >= 100', options.pollIntervalMs);
  const countLimit = options.countLimit ?? 10_000;
  if (!Number.isInteger(countLimit) || countLimit < 1)
    throw invalid('countLimit', 'an integer >= 1', options.countLimit);
  const countsCacheMs = options.countsCacheMs ?? 2000;
  if (!Number.isInteger(countsCacheMs) || countsCacheMs < 0 || countsCacheMs > 60_000)
    throw invalid('countsCacheMs', 'an integer from 0 to 60000', options.countsCacheMs);
  const trustProxy = options.trustProxy ?? false;
  if (typeof trustProxy !== 'boolean') throw invalid('trustProxy', 'a boolean', options.trustProxy);
  let publicOrigins: string[] = [];
  if (options.publicOrigin !== undefined) {
    const list: readonly unknown[] = Array.isArray(options.publicOrigin)
      ? options.publicOrigin
      : [options.publicOrigin];
    const origins = list.map(publicOrigin);
    if (origins.length === 0 || origins.includes(undefined))
      throw invalid('publicOrigin', ORIGIN_EXPECTED, options.publicOrigin);
    publicOrigins = origins as string[];
    if (trustProxy)
      throw invalid(
        'trustProxy',
        "false when 'publicOrigin' is set (the configured origin is the one actions are compared with)",
        options.trustProxy,
      );
  }
  return {
    path,
    guard: options.guard,
    imports: options.imports ?? [],
    pollIntervalMs,
    countLimit,
    countsCacheMs,
    publicOrigins,
    trustProxy,
  };
}

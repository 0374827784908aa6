import type { ModuleMetadata } from '@nestjs/common';
import { register as globalRegistry, type Registry, type RegistryContentType } from 'prom-client';
import { ConfigurationError } from '../core';

/** A prom-client registry, of either exposition format. */
export type MetricsRegistry = Registry<RegistryContentType>;

/** Options of `ReactorMetricsModule.forRoot`. */
export interface ReactorMetricsOptions {
  /**
   * The prom-client registry the metrics are registered on: the one your `/metrics` route serves
   * (`@willsoto/nestjs-prometheus`'s is prom-client's global `register` unless you gave it another).
   * @default prom-client's global `register`
   */
  registry?: MetricsRegistry;
  /** Prefix of every metric name (`''` for none). @default 'reactor_' */
  prefix?: string;
  /**
   * Serve the registry at `GET /<path>` (Prometheus's text format, or OpenMetrics for an
   * OpenMetrics registry) with a controller of this module. Leave it off when the app already has a
   * `/metrics` route (`@willsoto/nestjs-prometheus`'s, or its own). @default false
   */
  controller?: boolean;
  /** Where the controller is mounted, relative to the app (and its global prefix). @default 'metrics' */
  path?: string;
  /**
   * Buckets of `reactor_step_duration_seconds`, in seconds, increasing.
   * @default [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]
   */
  buckets?: readonly number[];
  /**
   * How long a scrape waits for the BullMQ queues to report their counts; the queue gauges are left
   * out of a scrape that they did not answer in time. @default 1000
   */
  queueTimeoutMs?: number;
  /** Modules to import: `ReactorModule`, when it is not global. */
  imports?: ModuleMetadata['imports'];
}

/** The options with their defaults. @internal */
export interface ResolvedMetricsOptions {
  registry: MetricsRegistry;
  prefix: string;
  controller: boolean;
  path: string;
  buckets: number[];
  queueTimeoutMs: number;
  imports: NonNullable<ModuleMetadata['imports']>;
}

/** Injection token of the resolved options. @internal */
export const METRICS_OPTIONS = Symbol('nest-reactor:metrics-options');

/** The default buckets of the step duration histogram (seconds): from 5 ms to 5 min. */
export const STEP_DURATION_BUCKETS: readonly number[] = Object.freeze([
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300,
]);

const KNOWN = ['registry', 'prefix', 'controller', 'path', 'buckets', 'queueTimeoutMs', 'imports'];
/** A metric name prefix: what Prometheus accepts at the start of a name (or nothing). */
const PREFIX = /^([a-zA-Z_:][a-zA-Z0-9_:]*)?$/;
/** Segments of unreserved characters separated by single slashes. */
const PATH = /^[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*$/;

function invalid(option: string, expected: string, value: unknown): ConfigurationError {
  const got =
    typeof value === 'string'
      ? JSON.stringify(value)
      : value === null
        ? 'null'
        : Array.isArray(value)
          ? 'array'
          : typeof value;
  return new ConfigurationError(`ReactorMetricsModule's option '${option}' must be ${expected} (got ${got}).`, option);
}

function isRegistry(value: unknown): value is MetricsRegistry {
  const candidate = value as Partial<MetricsRegistry> | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.registerMetric === 'function' &&
    typeof candidate.metrics === 'function' &&
    typeof candidate.getSingleMetric === 'function'
  );
}

/** Check the options and fill in the defaults; a `ConfigurationError` names the option at fault. @internal */
export function resolveMetricsOptions(options: ReactorMetricsOptions = {}): ResolvedMetricsOptions {
  if (typeof options !== 'object' || options === null) throw invalid('options', 'an object', options);
  for (const key of Object.keys(options)) {
    if (!KNOWN.includes(key)) {
      throw new ConfigurationError(`ReactorMetricsModule has no option '${key}' (known: ${KNOWN.join(', ')}).`, key);
    }
  }
  const { registry = globalRegistry, prefix = 'reactor_', controller = false, path = 'metrics' } = options;
  if (!isRegistry(registry)) throw invalid('registry', 'a prom-client Registry', registry);
  if (typeof prefix !== 'string' || !PREFIX.test(prefix)) {
    throw invalid(
      'prefix',
      "a metric name prefix such as 'reactor_' (letters, digits, '_' and ':', not starting with a digit)",
      prefix,
    );
  }
  if (typeof controller !== 'boolean') throw invalid('controller', 'true or false', controller);
  const cleanPath = typeof path === 'string' ? path.replace(/^\/+|\/+$/g, '') : path;
  if (
    typeof cleanPath !== 'string' ||
    !PATH.test(cleanPath) ||
    cleanPath.split('/').some((s) => s === '.' || s === '..')
  ) {
    throw invalid('path', "a plain URL path such as 'metrics' or 'internal/metrics'", path);
  }
  const buckets = options.buckets ?? STEP_DURATION_BUCKETS;
  if (
    !Array.isArray(buckets) ||
    buckets.length === 0 ||
    !buckets.every((b, i) => typeof b === 'number' && Number.isFinite(b) && b > 0 && (i === 0 || b > buckets[i - 1]))
  ) {
    throw invalid('buckets', 'a non-empty list of increasing positive numbers of seconds', options.buckets);
  }
  const queueTimeoutMs = options.queueTimeoutMs ?? 1_000;
  if (typeof queueTimeoutMs !== 'number' || !Number.isFinite(queueTimeoutMs) || queueTimeoutMs <= 0) {
    throw invalid('queueTimeoutMs', 'a positive number of milliseconds', options.queueTimeoutMs);
  }
  const imports = options.imports ?? [];
  if (!Array.isArray(imports)) throw invalid('imports', 'a list of modules', imports);
  return { registry, prefix, controller, path: cleanPath, buckets: [...buckets], queueTimeoutMs, imports };
}

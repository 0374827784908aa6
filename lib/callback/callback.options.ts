import type { ModuleMetadata } from '@nestjs/common';
import { ConfigurationError } from '../core';
import { callbackSecrets } from './callback-tokens';

/** Options of `ReactorCallbackModule.forRoot`. */
export interface ReactorCallbackOptions {
  /**
   * The secret that signs callback tokens (at least 32 characters; a random one, from the
   * environment or a secret manager), or a list of them: the first signs, any verifies. To rotate,
   * put the new secret first and drop the old one once the tokens it signed have expired.
   * Required: the module refuses to boot without it.
   */
  secret: string | readonly string[];
  /**
   * Where the callback route is mounted, relative to the app (and to its global prefix, if any):
   * `POST /<path>/<token>`. @default 'reactor/callbacks'
   */
  path?: string;
  /**
   * The public URL of the app (`https://api.example.com`, with the global prefix if there is one:
   * `https://api.example.com/api`): each callback then carries its full `url`,
   * `<baseUrl>/<path>/<token>`. Without it a callback has `token` and `expiresAt` only.
   */
  baseUrl?: string;
  /**
   * Where an accepted answer goes on: `background` in a worker (the route answers 202 at once; a
   * webhook sender does not wait for the run), or `inline` in the request, as `client.continue`
   * does by default. @default 'background'
   */
  execute?: 'inline' | 'background';
  /** Modules to import: `ReactorModule`, when it is not global. */
  imports?: ModuleMetadata['imports'];
}

/** The options with their defaults. @internal */
export interface ResolvedCallbackOptions {
  secrets: string[];
  path: string;
  /** `<baseUrl>/<path>/`, what a token is appended to for its URL; undefined without `baseUrl`. */
  urlPrefix?: string;
  execute: 'inline' | 'background';
  imports: NonNullable<ModuleMetadata['imports']>;
}

/** Injection token of the resolved options. @internal */
export const CALLBACK_OPTIONS = Symbol('nest-reactor:callback-options');

const KNOWN = ['secret', 'path', 'baseUrl', 'execute', 'imports'];
/** Segments of unreserved characters separated by single slashes. */
const PATH = /^[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*$/;
const PATH_EXPECTED =
  "a plain URL path such as 'reactor/callbacks' or 'hooks' (segments of letters, digits, '-', '.', '_' and '~' " +
  "separated by single slashes, no '.' or '..' segment)";
const BASE_URL_EXPECTED =
  "an http(s) URL such as 'https://api.example.com' or 'https://example.com/api' (no query, fragment or credentials)";

function invalid(option: string, expected: string, value: unknown): ConfigurationError {
  const got = typeof value === 'string' ? JSON.stringify(value) : value === null ? 'null' : typeof value;
  return new ConfigurationError(`ReactorCallbackModule's option '${option}' must be ${expected} (got ${got}).`, option);
}

/** Check and default the options; a `ConfigurationError` naming the option for a bad one. @internal */
export function resolveCallbackOptions(options: ReactorCallbackOptions): ResolvedCallbackOptions {
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    throw new ConfigurationError(
      "ReactorCallbackModule.forRoot needs its options: { secret, path?, baseUrl?, execute?, imports? } (at least 'secret').",
      'secret',
    );
  const unknown = Object.keys(options).find((key) => !KNOWN.includes(key));
  if (unknown !== undefined)
    throw new ConfigurationError(
      `ReactorCallbackModule has no option '${unknown}'. It takes ${KNOWN.join(', ')}.`,
      unknown,
    );
  const secrets = callbackSecrets(options.secret);
  const rawPath = options.path ?? 'reactor/callbacks';
  const path = typeof rawPath === 'string' ? rawPath.replace(/^\//, '').replace(/\/$/, '') : undefined;
  if (path === undefined || !PATH.test(path) || path.split('/').some((segment) => /^\.+$/.test(segment)))
    throw invalid('path', PATH_EXPECTED, options.path);
  const execute = options.execute ?? 'background';
  if (execute !== 'inline' && execute !== 'background')
    throw invalid('execute', "'inline' or 'background'", options.execute);
  let urlPrefix: string | undefined;
  if (options.baseUrl !== undefined) {
    const base = baseUrlOf(options.baseUrl);
    if (base === undefined) throw invalid('baseUrl', BASE_URL_EXPECTED, options.baseUrl);
    urlPrefix = `${base}/${path}/`;
  }
  return { secrets, path, ...(urlPrefix !== undefined ? { urlPrefix } : {}), execute, imports: options.imports ?? [] };
}

/** `baseUrl` without its trailing slash, if it is a plain http(s) URL; else undefined. */
function baseUrlOf(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') return undefined;
  if (/[?#]/.test(value)) return undefined;
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}

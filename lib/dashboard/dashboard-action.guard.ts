import { ForbiddenException, Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { DASHBOARD_OPTIONS, type ResolvedDashboardOptions } from './dashboard.options';

/** The header every dashboard action must carry (the page sends it). */
export const DASHBOARD_ACTION_HEADER = 'x-reactor-dashboard';

interface SocketLike {
  encrypted?: boolean;
}

/** An Express request, or a Fastify request (`raw` is Node's message). */
interface RequestLike {
  headers: Record<string, string | string[] | undefined>;
  socket?: SocketLike;
  raw?: { socket?: SocketLike };
}

/** A header's value; a repeated header (an array) counts as absent-and-invalid: `null`. */
function header(request: RequestLike, name: string): string | undefined | null {
  const value = request.headers[name];
  if (Array.isArray(value)) return value.length === 1 ? value[0] : null;
  return value;
}

/** The last value of a comma-separated forwarding header (the one the proxy next to the app set). */
function lastValue(value: string | undefined | null): string | undefined {
  if (typeof value !== 'string') return undefined;
  const parts = value.split(',');
  const last = parts[parts.length - 1].trim();
  return last === '' ? undefined : last;
}

/** `host[:port]`, a DNS name, an IPv4 or a bracketed IPv6 address: nothing that could hold a path or userinfo. */
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/** The serialized origin of `scheme://host` (default port dropped, lowercased), or undefined if it is not one. */
export function originOf(scheme: string, host: string | undefined | null): string | undefined {
  if (typeof host !== 'string' || !HOST.test(host)) return undefined;
  if (scheme !== 'http' && scheme !== 'https') return undefined;
  try {
    return new URL(`${scheme}://${host}`).origin;
  } catch {
    return undefined;
  }
}

/** The serialized origin a browser's `Origin` header names, or undefined (`null`, opaque, or not a URL). */
function parseOrigin(value: string): string | undefined {
  try {
    const origin = new URL(value).origin;
    return origin === 'null' ? undefined : origin;
  } catch {
    return undefined;
  }
}

/**
 * The origins this request may come from: the configured `publicOrigin`s; or the request's own
 * origin, its scheme from the connection (TLS or not) and its host from the `Host` header (which a
 * browser sets and a page cannot change), or, with `trustProxy`, from `X-Forwarded-Proto` and
 * `X-Forwarded-Host` as the proxy in front of the app set them.
 */
function ownOrigins(request: RequestLike, options: ResolvedDashboardOptions): string[] {
  if (options.publicOrigins.length > 0) return options.publicOrigins;
  const socket = request.raw?.socket ?? request.socket;
  let scheme = socket?.encrypted === true ? 'https' : 'http';
  let host = header(request, 'host') ?? header(request, ':authority');
  if (options.trustProxy) {
    const proto = lastValue(header(request, 'x-forwarded-proto'));
    if (proto !== undefined) scheme = proto.toLowerCase();
    const forwardedHost = lastValue(header(request, 'x-forwarded-host'));
    if (forwardedHost !== undefined) host = forwardedHost;
  }
  const origin = originOf(scheme, host);
  return origin === undefined ? [] : [origin];
}

const OTHER_ORIGIN = 'Dashboard actions are accepted from its own origin only.';

/**
 * Cross-site request forgery check of the dashboard's actions (POST), after the app's guard: the
 * request must carry `x-reactor-dashboard: 1` and a JSON body (a form or an `<img>` on another site
 * can send neither without a CORS preflight), a browser's `Sec-Fetch-Site`, when sent, must be
 * `same-origin`, and a browser's `Origin`, when sent, must be this dashboard's origin: scheme, host
 * and port, compared with the request's own (the connection and the `Host` header) or the
 * configured `publicOrigin`, never with a forwarding header unless `trustProxy` is set. An app
 * granting CORS with credentials lets another site send the header and the JSON body: the origin
 * check is what refuses it then.
 */
@Injectable()
export class DashboardActionGuard implements CanActivate {
  constructor(@Inject(DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<RequestLike>();
    if (header(request, DASHBOARD_ACTION_HEADER) !== '1')
      throw new ForbiddenException(`Dashboard actions need the header '${DASHBOARD_ACTION_HEADER}: 1'.`);
    const type = header(request, 'content-type');
    if (typeof type !== 'string' || !/^application\/json\s*(?:;|$)/i.test(type))
      throw new ForbiddenException('Dashboard actions take a JSON body (content-type: application/json).');
    const site = header(request, 'sec-fetch-site');
    if (site !== undefined && site !== 'same-origin') throw new ForbiddenException(OTHER_ORIGIN);
    const origin = header(request, 'origin');
    if (origin === undefined) return true; // not a browser's cross-origin request (browsers send Origin on every POST)
    const from = origin === null ? undefined : parseOrigin(origin);
    if (from === undefined || !ownOrigins(request, this.options).includes(from))
      throw new ForbiddenException(OTHER_ORIGIN);
    return true;
  }
}

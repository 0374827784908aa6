import { ForbiddenException, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';

/** The header every dashboard action must carry (the page sends it). */
export const DASHBOARD_ACTION_HEADER = 'x-reactor-dashboard';

interface RequestLike {
  headers: Record<string, string | string[] | undefined>;
}

function header(request: RequestLike, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Cross-site request forgery check of the dashboard's actions (POST), after the app's guard: the
 * request must carry `x-reactor-dashboard: 1` and a JSON body (a form or an `<img>` on another site
 * can send neither without a CORS preflight, which the app does not grant), and a browser's
 * `Origin`, when sent, must be this host's.
 */
@Injectable()
export class DashboardActionGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<RequestLike>();
    if (header(request, DASHBOARD_ACTION_HEADER) !== '1')
      throw new ForbiddenException(`Dashboard actions need the header '${DASHBOARD_ACTION_HEADER}: 1'.`);
    const type = header(request, 'content-type') ?? '';
    if (!/^application\/json\b/i.test(type))
      throw new ForbiddenException('Dashboard actions take a JSON body (content-type: application/json).');
    const origin = header(request, 'origin');
    const host = header(request, 'x-forwarded-host') ?? header(request, 'host');
    if (origin !== undefined && origin !== 'null') {
      let originHost: string | undefined;
      try {
        originHost = new URL(origin).host;
      } catch {
        originHost = undefined;
      }
      if (originHost !== host) throw new ForbiddenException('Dashboard actions are accepted from its own origin only.');
    } else if (origin === 'null') {
      throw new ForbiddenException('Dashboard actions are accepted from its own origin only.');
    }
    return true;
  }
}

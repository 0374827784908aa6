import {
  BadRequestException,
  Body,
  ConflictException,
  Get,
  Header,
  Headers,
  HttpCode,
  HttpException,
  Inject,
  NotFoundException,
  Param,
  Post,
  Query,
  Req,
  Sse,
  UnprocessableEntityException,
  UseGuards,
} from '@nestjs/common';
import { catchError, throwError, type Observable } from 'rxjs';
import {
  InvalidArgumentError,
  InputValidationError,
  RunNotFoundError,
  PayloadValidationError,
  ReactorError,
  type ContinueResult,
  type ElementRecord,
  type RunOutcome,
  type RunStatus,
} from '../core';
import type { RetryManyQuery, RetryManyResult } from '../core/engine/run-control';
import { ReactorClient } from '../nest';
import { runEventsSse, type RunEventMessage } from '../live/run-events.sse';
import { DashboardActionGuard } from './dashboard-action.guard';
import { DASHBOARD_CSP, DashboardAssets } from './dashboard-assets';
import type { DashboardReactor } from './dashboard-dag';
import { dashboardSchedules, type DashboardSchedule } from './dashboard-schedules';
import {
  DashboardService,
  RUN_STATUSES,
  type DashboardCounts,
  type DashboardFlowQueues,
  type DashboardMapElements,
  type DashboardRun,
  type DashboardRunList,
  type DashboardRunQuery,
} from './dashboard.service';

/** What an action answers: the run it concerns (a retry's new run) and its outcome's status. */
export interface DashboardActionResult {
  runId: string;
  status: RunOutcome['status'];
  /** `continue`: whether the payload was applied here, deferred to a worker, or queued. */
  resume?: ContinueResult['accepted'];
}

/** What `api/runs/bulk` did to each run. */
export interface DashboardBulkResult {
  action: 'retry' | 'cancel';
  results: Array<{
    runId: string;
    ok: boolean;
    /** `retry`: the new (or reopened) run. */
    newRunId?: string;
    status?: RunOutcome['status'];
    code?: string;
    message?: string;
  }>;
}

interface RequestLike {
  originalUrl?: string;
  url?: string;
}

const NOT_FOUND = new Set(['RUN_NOT_FOUND', 'UNKNOWN_REACTOR', 'INTERRUPT_NOT_FOUND', 'INVALID_RUN_ID']);
const CONFLICT = new Set(['INVALID_RUN_STATE', 'ALREADY_RESUMED', 'RUN_NOT_PAUSED', 'INTERRUPT_TIMED_OUT']);

/** A ReactorError as an HTTP error with its code; anything else is rethrown (a 500). */
function toHttp(error: unknown): never {
  if (error instanceof HttpException) throw error;
  if (!(error instanceof ReactorError)) throw error;
  const body: Record<string, unknown> = { statusCode: 0, code: error.code, message: error.message };
  if (error instanceof InputValidationError) body.fieldErrors = error.fieldErrors;
  if (error instanceof PayloadValidationError) body.attemptsLeft = error.attemptsLeft;
  if (NOT_FOUND.has(error.code)) throw new NotFoundException({ ...body, statusCode: 404 });
  if (CONFLICT.has(error.code)) throw new ConflictException({ ...body, statusCode: 409 });
  if (error.code === 'PAYLOAD_INVALID') throw new UnprocessableEntityException({ ...body, statusCode: 422 });
  if (error.code === 'CONFIGURATION_INVALID') throw new BadRequestException({ ...body, statusCode: 400 });
  throw error;
}

async function http<T>(work: () => Promise<T> | T): Promise<T> {
  try {
    return await work();
  } catch (error) {
    return toHttp(error);
  }
}

function time(name: string, value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms)) throw new BadRequestException(`'${name}' must be ms since the epoch or an ISO date.`);
  return ms;
}

function runQuery(raw: Record<string, string | undefined>): DashboardRunQuery {
  const status = raw.status || undefined;
  if (status !== undefined && !RUN_STATUSES.includes(status as RunStatus))
    throw new BadRequestException(`'status' must be one of ${RUN_STATUSES.join(', ')}.`);
  const limit = raw.limit ? Number(raw.limit) : undefined;
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 500))
    throw new BadRequestException("'limit' must be an integer from 1 to 500.");
  if (raw.cursor !== undefined && !/^\d+:/.test(raw.cursor))
    throw new BadRequestException("'cursor' is not one this API returned.");
  // Search (issue 25): a tag `key=value`, a run id, a correlation id.
  if (raw.tag && !/^[a-z0-9_.-]{1,64}=[^]{0,256}$/i.test(raw.tag))
    throw new BadRequestException("'tag' must be key=value (a key of 1 to 64 letters, digits, '_', '.', '-').");
  for (const name of ['runId', 'correlationId'] as const)
    if (raw[name] !== undefined && raw[name]!.length > 512)
      throw new BadRequestException(`'${name}' must be at most 512 characters.`);
  return {
    ...(raw.tag ? { tag: raw.tag } : {}),
    ...(raw.runId ? { runId: raw.runId } : {}),
    ...(raw.correlationId ? { correlationId: raw.correlationId } : {}),
    reactor: raw.reactor || undefined,
    status: status as RunStatus | undefined,
    since: time('since', raw.since),
    until: time('until', raw.until),
    cursor: raw.cursor || undefined,
    limit,
  };
}

/** An optional integer query parameter from `min` to `max`. */
function integer(name: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < min || n > max)
    throw new BadRequestException(`'${name}' must be an integer from ${min} to ${max}.`);
  return n;
}

/** `error` as the HTTP error {@link toHttp} throws for it (or itself). */
function httpError(error: unknown): unknown {
  if (error instanceof InvalidArgumentError)
    return new BadRequestException({ statusCode: 400, code: error.code, message: error.message });
  try {
    return toHttp(error);
  } catch (thrown) {
    return thrown;
  }
}

function outcomeResult(outcome: RunOutcome): DashboardActionResult {
  return { runId: outcome.runId, status: outcome.status };
}

/**
 * The dashboard's routes: the page and its two files, the JSON API (`api/...`, GET only reads) and
 * the actions (POST with a JSON body and the `x-reactor-dashboard: 1` header). Mounted at the
 * configured path by `ReactorDashboardModule.forRoot`, which adds the app's guard to the class.
 */
export class DashboardController {
  constructor(
    private readonly dashboard: DashboardService,
    private readonly client: ReactorClient,
    @Inject(DashboardAssets) private readonly assets: DashboardAssets,
  ) {}

  @Get()
  @Header('content-type', 'text/html; charset=utf-8')
  @Header('content-security-policy', DASHBOARD_CSP)
  @Header('x-content-type-options', 'nosniff')
  @Header('referrer-policy', 'same-origin')
  @Header('cache-control', 'no-store')
  page(@Req() request: RequestLike): string {
    // One leading slash: `//host/...` would make the base another origin (CSP base-uri refuses it too).
    const path = (request.originalUrl ?? request.url ?? '/').split('?')[0].replace(/^\/+/, '/');
    return this.assets.page(path.endsWith('/') ? path : `${path}/`);
  }

  @Get('assets/app.js')
  @Header('content-type', 'text/javascript; charset=utf-8')
  @Header('x-content-type-options', 'nosniff')
  @Header('cache-control', 'no-cache')
  script(): string {
    return this.assets.file('app.js');
  }

  @Get('assets/app.css')
  @Header('content-type', 'text/css; charset=utf-8')
  @Header('x-content-type-options', 'nosniff')
  @Header('cache-control', 'no-cache')
  style(): string {
    return this.assets.file('app.css');
  }

  /** The page's settings: the poll interval and the statuses. */
  @Get('api/settings')
  settings(): ReturnType<DashboardService['settings']> {
    return this.dashboard.settings();
  }

  /** Every registered reactor with its DAG (each step's kind and dependencies). */
  @Get('api/reactors')
  reactors(): Promise<{ reactors: DashboardReactor[] }> {
    return http(() => ({ reactors: this.dashboard.reactors() }));
  }

  /** Runs, newest first: `reactor`, `status`, `since`, `until` (ms or ISO), `limit`, `cursor`. */
  @Get('api/runs')
  runs(@Query() query: Record<string, string | undefined>): Promise<DashboardRunList> {
    return http(() => this.dashboard.list(runQuery(query)));
  }

  /** Counts by status: `reactor`, `since`, `until`. */
  @Get('api/counts')
  counts(@Query() query: Record<string, string | undefined>): Promise<DashboardCounts> {
    return http(() => this.dashboard.counts(runQuery(query)));
  }

  /** Every schedule (`client.schedules`) with its next tick and its last run. */
  @Get('api/schedules')
  schedules(): Promise<{ schedules: DashboardSchedule[] }> {
    return http(async () => dashboardSchedules(await this.client.schedules.list()));
  }

  /**
   * The concurrency queues of a reactor that declares `concurrency: { key?, limit }`: per key, the
   * runs holding a slot (with since when), how many wait and the first `peek` waiting (default 10,
   * at most 100); at most `limit` keys (default 100, at most 1000). `{ reactorName, keys: [] }`
   * without `limit` for a reactor without concurrency; 404 for an unknown reactor.
   */
  @Get('api/flow/:reactor')
  flow(
    @Param('reactor') reactor: string,
    @Query('limit') limit?: string,
    @Query('peek') peek?: string,
  ): Promise<DashboardFlowQueues> {
    const options = { limit: integer('limit', limit, 1, 1000), peek: integer('peek', peek, 0, 100) };
    return http(() => this.dashboard.flowQueues(reactor, options));
  }

  /** A run in full. */
  @Get('api/runs/:runId')
  run(@Param('runId') runId: string): Promise<DashboardRun> {
    return http(() => this.dashboard.run(runId));
  }

  /**
   * A run's events as Server-Sent Events (the run's page follows the run with it): what its log
   * keeps after `Last-Event-ID` (or `?after=`), then live; ends after `run.finished`. 404 for an
   * unknown run, 400 for a cursor that is not one. Each message's `id` is the event's cursor and
   * its `data` the event (JSON, its `type` inside).
   */
  @Sse('api/runs/:runId/events')
  async events(
    @Param('runId') runId: string,
    @Headers('last-event-id') lastEventId?: string,
    @Query('after') after?: string,
  ): Promise<Observable<RunEventMessage>> {
    try {
      // Answered before the stream starts: an unknown run is a 404, not an error event.
      if (!(await this.client.get(runId))) throw new RunNotFoundError(runId);
      return runEventsSse(this.client, runId, lastEventId || after || undefined).pipe(
        catchError((error: unknown) => throwError(() => httpError(error))),
      );
    } catch (error) {
      throw httpError(error);
    }
  }

  /** A map step's failed (and halted) elements, 500 records at a time from `from`; `status=all` for every one. */
  @Get('api/runs/:runId/maps/:step/elements')
  elements(
    @Param('runId') runId: string,
    @Param('step') step: string,
    @Query('from') from?: string,
    @Query('status') status?: string,
  ): Promise<DashboardMapElements> {
    const start = from ? Number(from) : 0;
    if (!Number.isInteger(start) || start < 0) throw new BadRequestException("'from' must be an integer >= 0.");
    const statuses: Array<ElementRecord['status']> =
      status === 'all' ? ['completed', 'failed', 'halted', 'skipped'] : ['failed', 'halted'];
    return http(() => this.dashboard.mapElements(runId, step, start, statuses));
  }

  /** Retry a failed run: as a new run (rolled back), or from its failed step (its job died). */
  @Post('api/runs/:runId/retry')
  @HttpCode(200)
  @UseGuards(DashboardActionGuard)
  retry(@Param('runId') runId: string): Promise<DashboardActionResult> {
    return http(async () => outcomeResult(await this.client.retry(runId)));
  }

  /** Undo a finished run (its fan-out maps' elements are undone by workers: poll the run). */
  @Post('api/runs/:runId/undo')
  @HttpCode(200)
  @UseGuards(DashboardActionGuard)
  undo(@Param('runId') runId: string): Promise<DashboardActionResult> {
    return http(async () => outcomeResult(await this.client.undo(runId, { wait: false })));
  }

  /** Cancel a live run; body `{ reason? }`. */
  @Post('api/runs/:runId/cancel')
  @HttpCode(200)
  @UseGuards(DashboardActionGuard)
  cancel(@Param('runId') runId: string, @Body() body: { reason?: unknown } = {}): Promise<DashboardActionResult> {
    const reason = body?.reason;
    if (reason !== undefined && (typeof reason !== 'string' || reason.length > 500))
      throw new BadRequestException("'reason' must be a string of at most 500 characters.");
    return http(async () => outcomeResult(await this.client.cancel(runId, reason || 'cancelled from the dashboard')));
  }

  /**
   * Retry or cancel many runs at once; body `{ action: 'retry' | 'cancel', runIds (1 to 100),
   * reason? }`. Each run is acted on in turn as its own route would; a refusal is reported in its
   * entry (`ok: false`, `code`, `message`), never failing the others.
   */
  @Post('api/runs/bulk')
  @HttpCode(200)
  @UseGuards(DashboardActionGuard)
  bulk(@Body() body: { action?: unknown; runIds?: unknown; reason?: unknown } = {}): Promise<DashboardBulkResult> {
    const { action, runIds, reason } = body ?? {};
    if (action !== 'retry' && action !== 'cancel')
      throw new BadRequestException("'action' must be 'retry' or 'cancel'.");
    if (
      !Array.isArray(runIds) ||
      runIds.length === 0 ||
      runIds.length > 100 ||
      !runIds.every((id) => typeof id === 'string' && id.length > 0 && id.length <= 512)
    )
      throw new BadRequestException("'runIds' must be 1 to 100 run ids.");
    if (reason !== undefined && (typeof reason !== 'string' || reason.length > 500))
      throw new BadRequestException("'reason' must be a string of at most 500 characters.");
    return http(async () => {
      const results: DashboardBulkResult['results'] = [];
      for (const runId of [...new Set(runIds as string[])]) {
        try {
          const outcome =
            action === 'retry'
              ? await this.client.retry(runId)
              : await this.client.cancel(runId, (reason as string | undefined) || 'cancelled from the dashboard');
          results.push({
            runId,
            ok: true,
            newRunId: action === 'retry' ? outcome.runId : undefined,
            status: outcome.status,
          });
        } catch (error) {
          const code = error instanceof ReactorError ? error.code : 'ERROR';
          results.push({ runId, ok: false, code, message: error instanceof Error ? error.message : String(error) });
        }
      }
      return { action, results };
    });
  }

  /**
   * `client.retryMany`: body `{ reactor, status? ('failed'), since?, until? (ms), limit? (1 to
   * 1000, default 100), dryRun? }`. A dry run lists the runs it would retry.
   */
  @Post('api/runs/retry-many')
  @HttpCode(200)
  @UseGuards(DashboardActionGuard)
  async retryMany(
    @Body()
    body: {
      reactor?: unknown;
      status?: unknown;
      since?: unknown;
      until?: unknown;
      limit?: unknown;
      dryRun?: unknown;
    } = {},
  ): Promise<RetryManyResult> {
    if (typeof body?.reactor !== 'string' || body.reactor.length === 0)
      throw new BadRequestException("'reactor' (a reactor name) is required.");
    const query = body as RetryManyQuery;
    try {
      return await this.client.retryMany({
        reactor: query.reactor,
        status: query.status,
        since: query.since,
        until: query.until,
        limit: query.limit,
        dryRun: query.dryRun,
      });
    } catch (error) {
      throw httpError(error);
    }
  }

  /**
   * Answer an interrupt; body `{ step, payload }` (`step` a path such as `child.approve`). The
   * payload is validated as the interrupt declares: an invalid one answers 422 with `fieldErrors`
   * and `attemptsLeft`.
   */
  @Post('api/runs/:runId/continue')
  @HttpCode(200)
  @UseGuards(DashboardActionGuard)
  continue(
    @Param('runId') runId: string,
    @Body() body: { step?: unknown; payload?: unknown } = {},
  ): Promise<DashboardActionResult> {
    if (typeof body?.step !== 'string' || body.step.length === 0)
      throw new BadRequestException("'step' (the interrupt's path) is required.");
    const step = body.step;
    return http(async () => {
      const result = await this.client.continue(runId, step, body.payload);
      const status = result.accepted === 'applied' ? result.outcome.status : 'dispatched';
      return { runId, status, resume: result.accepted };
    });
  }
}

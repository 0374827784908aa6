import {
  Injectable,
  UnauthorizedException,
  type CanActivate,
  type ExecutionContext,
  type Provider,
} from '@nestjs/common';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { createHash } from 'node:crypto';
import { Test } from '@nestjs/testing';
import type { INestApplication } from '@nestjs/common';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { Step } from '../../lib/nest/step.decorator';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { StepHandler } from '../../lib/core/definition/step';
import { failure, success } from '../../lib/core/results/step-outcome';
import { ReactorDashboardModule } from '../../lib/dashboard';
import type { ReactorDashboardOptions } from '../../lib/dashboard';
import type { ReactorModuleOptions } from '../../lib/config';
import puppeteer, { type Browser, type Page, type Viewport } from 'puppeteer-core';
import { findChromium } from '../support/chromium';

/** The token the test guard wants, as `authorization: Bearer <token>`. */
export const TOKEN = 'dashboard-test-token-7f3a';
/** A redacted input value: it must never reach the dashboard. */
export const CARD = '4242-4242-4242-4242';

/** The app's guard: a bearer token. */
@Injectable()
export class TokenGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
    if (request.headers.authorization !== `Bearer ${TOKEN}`) throw new UnauthorizedException();
    return true;
  }
}

/** Switches the tests flip: how many charges fail before one succeeds. */
@Injectable()
export class Switches {
  failCharges = 0;
  readonly released: string[] = [];
}

@Step('dash-reserve')
export class ReserveStep implements StepHandler<{ orderId: string }, string> {
  constructor(private readonly switches: Switches) {}
  run({ orderId }: { orderId: string }) {
    return success(`hold-${orderId}`);
  }
  undo(hold: string) {
    this.switches.released.push(hold);
  }
}

@Step('dash-charge')
export class ChargeStep implements StepHandler<{ orderId: string; card: string }, string> {
  constructor(private readonly switches: Switches) {}
  run({ orderId }: { orderId: string; card: string }) {
    if (this.switches.failCharges > 0) {
      this.switches.failCharges--;
      return failure(new Error(`card declined for ${orderId}`), { retryable: false });
    }
    return success(`ch-${orderId}`);
  }
}

/** reserve -> charge -> ship; the card is a redacted input. */
@Reactor('dash-checkout')
export class CheckoutReactor implements ReactorBlueprint<{ orderId: string; card: string }> {
  build(r: ReactorBuilder<{ orderId: string; card: string }>) {
    const orderId = r.input('orderId', { type: 'string' });
    const card = r.input('card', { type: 'string', redact: true });
    const hold = r.step('reserve', ReserveStep, { orderId });
    const charge = r.step('charge', ChargeStep, { orderId, card }, { waitFor: [hold] });
    return r.step('ship', ({ charge }: { charge: string }) => success(`sh-${charge}`), { charge });
  }
}

/** Waits for a decision at interrupt `approve`, then issues. */
@Reactor('dash-approval')
export class ApprovalReactor implements ReactorBlueprint<{ requestId: string }> {
  build(r: ReactorBuilder<{ requestId: string }>) {
    const requestId = r.input('requestId', { type: 'string' });
    const decision = r.interrupt<{ approved: boolean; approver: string }, { requestId: string }>('approve', {
      args: { requestId },
      payload: { approved: { type: 'boolean' }, approver: { type: 'string', minLength: 1 } },
      maxAttempts: 3,
    });
    return r.step('issue', ({ decision }: { decision: { approved: boolean } }) => success(decision.approved), {
      decision,
    });
  }
}

@Reactor('dash-import-line')
export class ImportLineReactor implements ReactorBlueprint<{ item: string }> {
  build(r: ReactorBuilder<{ item: string }>) {
    return r.step(
      'load',
      ({ item }: { item: string }) =>
        item.startsWith('bad') ? failure(new Error(`cannot load '${item}'`), { retryable: false }) : success(item),
      { item: r.input('item', { type: 'string' }) },
    );
  }
}

/** A fan-out map over items (not atomic: every element runs; `bad*` items fail). */
@Reactor('dash-import')
export class ImportReactor implements ReactorBlueprint<{ items: string[] }> {
  build(r: ReactorBuilder<{ items: string[] }>) {
    return r.map('lines', {
      source: r.input('items', { type: 'array' }),
      element: ImportLineReactor,
      inputs: (item) => ({ item }),
      atomic: false,
      fanOut: { batchSize: 2 },
    });
  }
}

/** The same map, inline (its element records live in the run's results). */
@Reactor('dash-inline-import')
export class InlineImportReactor implements ReactorBlueprint<{ items: string[] }> {
  build(r: ReactorBuilder<{ items: string[] }>) {
    return r.map('lines', {
      source: r.input('items', { type: 'array' }),
      element: ImportLineReactor,
      inputs: (item) => ({ item }),
      atomic: false,
    });
  }
}

@Reactor('dash-child')
export class ChildReactor implements ReactorBlueprint<{ n: number }> {
  build(r: ReactorBuilder<{ n: number }>) {
    const a = r.step('double', ({ n }: { n: number }) => success(n * 2), { n: r.input('n', { type: 'number' }) });
    return r.step('inc', ({ a }: { a: number }) => success(a + 1), { a });
  }
}

/** Composes {@link ChildReactor}. */
@Reactor('dash-parent')
export class ParentReactor implements ReactorBlueprint<{ n: number }> {
  build(r: ReactorBuilder<{ n: number }>) {
    const n = r.input('n', { type: 'number' });
    const child = r.compose('child', ChildReactor, { n });
    return r.step('report', ({ child }: { child: number }) => success(`got ${child}`), { child });
  }
}

/** Composes {@link ApprovalReactor}: its interrupt is `approval.approve` from this run. */
@Reactor('dash-approval-parent')
export class ApprovalParentReactor implements ReactorBlueprint<{ requestId: string }> {
  build(r: ReactorBuilder<{ requestId: string }>) {
    return r.compose('approval', ApprovalReactor, { requestId: r.input('requestId', { type: 'string' }) });
  }
}

/** Holds step `hold` of {@link GatedReactor} until the test opens it. */
@Injectable()
export class Gate {
  private opened!: () => void;
  private readonly gate = new Promise<void>((resolve) => (this.opened = resolve));
  entered = false;
  open(): void {
    this.opened();
  }
  async pass(): Promise<void> {
    this.entered = true;
    await this.gate;
  }
}

@Step('dash-hold')
export class HoldStep implements StepHandler<Record<string, never>, string> {
  constructor(private readonly gate: Gate) {}
  async run() {
    await this.gate.pass();
    return success('released');
  }
}

/** first -> hold (waits for the {@link Gate}) -> last: a run that moves while the page watches. */
@Reactor('dash-gated')
export class GatedReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    const first = r.step('first', () => success(1), {});
    const hold = r.step('hold', HoldStep, {}, { waitFor: [first] });
    return r.step('last', () => success(2), {}, { waitFor: [hold] });
  }
}

export const DASHBOARD_PROVIDERS = [
  Gate,
  HoldStep,
  GatedReactor,
  Switches,
  ReserveStep,
  ChargeStep,
  CheckoutReactor,
  ApprovalReactor,
  ApprovalParentReactor,
  ImportLineReactor,
  ImportReactor,
  InlineImportReactor,
  ChildReactor,
  ParentReactor,
];

// ---- Values derived from a redacted input (issue 26) ----------------------------------------------

/** What a key function makes of the card without quoting it: as secret as the card. */
export const FINGERPRINT = createHash('sha256').update(CARD).digest('hex').slice(0, 24);

export type CardInput = { orderId: string; card: string };

/** Once a day per card: the period's key quotes the card, so a second run's halt details would show it. */
@Reactor('dash-secret-period', { period: { key: (i) => `card:${String(i.card)}`, every: 'day' } })
export class SecretPeriodReactor implements ReactorBlueprint<CardInput> {
  build(r: ReactorBuilder<CardInput>) {
    r.input('card', { type: 'string', redact: true });
    return r.step('charge', ({ orderId }: { orderId: string }) => success(orderId), {
      orderId: r.input('orderId', { type: 'string' }),
    });
  }
}

/** Once a day per card fingerprint: the key holds no card, but a key function read it. */
@Reactor('dash-secret-fingerprint', {
  period: { key: (i) => `fp:${createHash('sha256').update(String(i.card)).digest('hex').slice(0, 24)}`, every: 'day' },
})
export class SecretFingerprintReactor implements ReactorBlueprint<CardInput> {
  build(r: ReactorBuilder<CardInput>) {
    r.input('card', { type: 'string', redact: true });
    return r.step('charge', ({ orderId }: { orderId: string }) => success(orderId), {
      orderId: r.input('orderId', { type: 'string' }),
    });
  }
}

/** Waits at `confirm` under a correlation id quoting the card, and at `verify` under its fingerprint. */
@Reactor('dash-secret-approval')
export class SecretApprovalReactor implements ReactorBlueprint<CardInput> {
  build(r: ReactorBuilder<CardInput>) {
    const card = r.input('card', { type: 'string', redact: true });
    const orderId = r.input('orderId', { type: 'string' });
    const confirm = r.interrupt<boolean, { card: string; orderId: string }>('confirm', {
      args: { card, orderId },
      correlationId: ({ args }) => `confirm:${args.orderId}:${args.card}`,
    });
    const verify = r.interrupt<boolean, Record<string, never>>('verify', {
      correlationId: ({ inputs }) => `verify:${createHash('sha256').update(String(inputs.card)).digest('hex')}`,
      waitFor: [confirm],
    });
    return r.step('done', () => success(true), {}, { waitFor: [verify] });
  }
}

/** Its step fails with a message quoting the card. */
@Reactor('dash-secret-decline')
export class SecretDeclineReactor implements ReactorBlueprint<CardInput> {
  build(r: ReactorBuilder<CardInput>) {
    return r.step(
      'charge',
      ({ card }: { card: string }) => failure(new Error(`card ${card} declined`), { retryable: false }),
      { card: r.input('card', { type: 'string', redact: true }) },
    );
  }
}

/** Fans out over a redacted collection: an element `bad-…` fails with a message quoting it. */
@Reactor('dash-secret-import')
export class SecretImportReactor implements ReactorBlueprint<{ items: string[] }> {
  build(r: ReactorBuilder<{ items: string[] }>) {
    return r.map('lines', {
      source: r.input('items', { type: 'array', redact: true }),
      element: ImportLineReactor,
      inputs: (item) => ({ item }),
      atomic: false,
      fanOut: { batchSize: 2 },
    });
  }
}

/** The same map over a redacted collection, inline (its element records live in the run's results). */
@Reactor('dash-secret-inline-import')
export class SecretInlineImportReactor implements ReactorBlueprint<{ items: string[] }> {
  build(r: ReactorBuilder<{ items: string[] }>) {
    return r.map('lines', {
      source: r.input('items', { type: 'array', redact: true }),
      element: ImportLineReactor,
      inputs: (item) => ({ item }),
      atomic: false,
    });
  }
}

/** The reactors whose derived values hold a redacted input (not in {@link DASHBOARD_PROVIDERS}). */
export const SECRET_REACTORS = [
  SecretPeriodReactor,
  SecretFingerprintReactor,
  SecretApprovalReactor,
  SecretDeclineReactor,
  SecretImportReactor,
  SecretInlineImportReactor,
];

/**
 * A Nest app with the dashboard at `admin/reactor` behind {@link TokenGuard}: on the embedded
 * runtime, or on the one `reactor` options choose (Redis).
 */
export async function dashboardApp(
  options: ReactorDashboardOptions = {},
  reactor: ReactorModuleOptions = {},
  prepare: (app: INestApplication) => void = () => undefined,
): Promise<INestApplication> {
  const module = await Test.createTestingModule({
    imports: [
      ReactorModule.forRoot(reactor),
      ReactorDashboardModule.forRoot({ path: 'admin/reactor', guard: TokenGuard, ...options }),
    ],
    providers: DASHBOARD_PROVIDERS,
  }).compile();
  const app = module.createNestApplication({ logger: false });
  prepare(app);
  await app.init();
  return app;
}

/**
 * A Nest app with the dashboard at `admin/reactor` behind {@link TokenGuard}, on Express or Fastify,
 * with {@link DASHBOARD_PROVIDERS} and `providers` (reactors of one spec).
 */
export async function platformApp(
  platform: 'express' | 'fastify',
  options: ReactorDashboardOptions = {},
  reactor: ReactorModuleOptions = {},
  providers: Provider[] = [],
): Promise<INestApplication> {
  const module = await Test.createTestingModule({
    imports: [
      ReactorModule.forRoot(reactor),
      ReactorDashboardModule.forRoot({ path: 'admin/reactor', guard: TokenGuard, ...options }),
    ],
    providers: [...DASHBOARD_PROVIDERS, ...providers],
  }).compile();
  if (platform === 'express') {
    const app = module.createNestApplication({ logger: false });
    await app.init();
    return app;
  }
  const app = module.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false });
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  return app;
}

/** A forged action: what a page on another site (or a client lying about its proxy) sends. */
export interface ForgedAction {
  name: string;
  headers: Record<string, string>;
  body: string;
  /** Fastify's answer when it is not the guard's 403 (its body parser refuses a type it has no parser for: 415). */
  fastifyStatus?: number;
}

/**
 * The cross-site attempts every dashboard must refuse (403, and the run untouched), against an app
 * reached at `http://<host>` (`host` is `hostname:port`) that grants CORS with credentials, so a
 * page on another site can send the dashboard's header and a JSON body: only the origin check
 * stands between it and the action.
 */
export function forgedActions(host: string): ForgedAction[] {
  const hostname = host.replace(/:\d+$/, '');
  const port = Number(/:(\d+)$/.exec(host)?.[1] ?? 80);
  const json = { 'content-type': 'application/json', 'x-reactor-dashboard': '1' };
  const body = JSON.stringify({ reason: 'forged' });
  return [
    {
      name: 'a form post (no header, a form body)',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'reason=forged',
    },
    {
      name: 'JSON without the header',
      headers: { 'content-type': 'application/json', origin: `http://${host}` },
      body,
    },
    {
      name: 'the header with a text/plain body',
      headers: { 'x-reactor-dashboard': '1', 'content-type': 'text/plain' },
      body,
    },
    {
      name: 'the header with a content type that only starts like JSON',
      headers: { ...json, 'content-type': 'application/json-seq' },
      body,
      fastifyStatus: 415,
    },
    { name: 'another origin', headers: { ...json, origin: 'https://evil.example' }, body },
    { name: 'an opaque origin (null)', headers: { ...json, origin: 'null' }, body },
    {
      name: 'another origin with a spoofed X-Forwarded-Host',
      headers: {
        ...json,
        origin: 'https://evil.example',
        'x-forwarded-host': 'evil.example',
        'x-forwarded-proto': 'https',
      },
      body,
    },
    {
      name: 'another origin (http) with a spoofed X-Forwarded-Host only',
      headers: { ...json, origin: 'http://evil.example', 'x-forwarded-host': 'evil.example' },
      body,
    },
    { name: 'https on the same host (another scheme)', headers: { ...json, origin: `https://${host}` }, body },
    {
      name: 'https on the same host and the default https port',
      headers: { ...json, origin: `https://${hostname}` },
      body,
    },
    {
      name: 'the same host on another port',
      headers: { ...json, origin: `http://${hostname}:${port === 1 ? 2 : port - 1}` },
      body,
    },
    { name: 'a sibling host', headers: { ...json, origin: `http://${hostname}.evil.example:${port}` }, body },
    {
      name: 'the same origin, but the browser says cross-site',
      headers: { ...json, origin: `http://${host}`, 'sec-fetch-site': 'cross-site' },
      body,
    },
    {
      name: 'the same origin, but the browser says same-site',
      headers: { ...json, origin: `http://${host}`, 'sec-fetch-site': 'same-site' },
      body,
    },
  ];
}

/** Options of {@link openDashboard}. */
export interface OpenDashboardOptions {
  /** The page's viewport; `null` leaves puppeteer's default (the test sets its own). @default 1280×900 */
  viewport?: Viewport | null;
  /** Where the page's script errors (`pageerror`) and console errors go, for the test to check. */
  problems?: string[];
}

/**
 * Headless Chromium (found or provided by test/support/chromium.ts, never downloaded) with one
 * page on it, sending the test guard's bearer token ({@link TOKEN}) with every request. The caller
 * closes the browser (`browser.close()`) in its `afterAll`.
 */
export async function openDashboard(options: OpenDashboardOptions = {}): Promise<{ browser: Browser; page: Page }> {
  const chromium = findChromium();
  const browser = await puppeteer.launch({
    executablePath: chromium.executablePath,
    headless: true,
    args: chromium.args,
  });
  const page = await browser.newPage();
  const viewport = options.viewport === undefined ? { width: 1280, height: 900 } : options.viewport;
  if (viewport) await page.setViewport(viewport);
  await page.setExtraHTTPHeaders({ authorization: `Bearer ${TOKEN}` });
  const problems = options.problems;
  if (problems) {
    page.on('pageerror', (error) => problems.push(`pageerror: ${String(error)}`));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
  }
  return { browser, page };
}

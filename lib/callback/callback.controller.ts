import {
  BadRequestException,
  Body,
  ConflictException,
  Headers,
  HttpCode,
  HttpException,
  HttpStatus,
  Inject,
  NotFoundException,
  Param,
  Post,
  UnauthorizedException,
} from '@nestjs/common';
import { REACTOR_CLOCK } from '../config';
import { PayloadValidationError, ReactorError, type Clock, type ContinueResult, type RunOutcome } from '../core';
import { ReactorClient } from '../nest/reactor.client';
import { CALLBACK_OPTIONS, type ResolvedCallbackOptions } from './callback.options';
import { CallbackTokens } from './callback-tokens';

/**
 * What the callback route answers (202) when the payload is accepted: the run, the interrupt it
 * answered, whether the answer was applied in the request, deferred to a worker or queued, and the
 * run's status then (`dispatched` while a worker has it). Nothing of the run's data: the sender of
 * a webhook is not the app.
 */
export interface CallbackAnswer {
  runId: string;
  step: string;
  accepted: ContinueResult['accepted'];
  status: RunOutcome['status'];
}

/** What an error answer carries besides `statusCode` and `message`. */
interface ErrorBody {
  statusCode: number;
  code: string;
  message: string;
  fieldErrors?: Record<string, string[]>;
  attemptsLeft?: number | null;
  runFailed?: boolean;
}

/** Codes of the run's state an answer cannot apply to (409): the token's single use is one of them. */
const CONFLICT = new Set([
  'ALREADY_RESUMED',
  'RUN_NOT_PAUSED',
  'INTERRUPT_TIMED_OUT',
  'INVALID_RUN_STATE',
  'DEFINITION_CHANGED',
]);
const NOT_FOUND = new Set(['RUN_NOT_FOUND', 'INTERRUPT_NOT_FOUND', 'UNKNOWN_REACTOR', 'INVALID_RUN_ID']);

/** The generic answer to a token that is not one of the app's (never says what was wrong with it). */
const INVALID_TOKEN: ErrorBody = {
  statusCode: 401,
  code: 'CALLBACK_TOKEN_INVALID',
  message: 'The callback token is not valid.',
};

function unauthorized(body: ErrorBody): never {
  throw new UnauthorizedException(body);
}

/** A ReactorError as an HTTP error with its code; anything else is rethrown (a 500). */
function toHttp(error: unknown): never {
  if (error instanceof HttpException || !(error instanceof ReactorError)) throw error;
  const body: ErrorBody = { statusCode: 0, code: error.code, message: error.message };
  if (error instanceof PayloadValidationError) {
    throw new BadRequestException({
      ...body,
      statusCode: 400,
      fieldErrors: error.fieldErrors,
      // JSON has no Infinity: null when attempts are unlimited.
      attemptsLeft: Number.isFinite(error.attemptsLeft) ? error.attemptsLeft : null,
      runFailed: error.runFailed,
    });
  }
  if (NOT_FOUND.has(error.code)) throw new NotFoundException({ ...body, statusCode: 404 });
  if (CONFLICT.has(error.code)) throw new ConflictException({ ...body, statusCode: 409 });
  throw error;
}

/**
 * `POST <path>/:token`: a webhook answers an interrupt with the signed token its pause handed out;
 * the body is the payload (JSON). Checked in this order, and nothing is claimed, counted or run
 * before the last check passes:
 * - the token: not one of the app's (malformed, altered, forged, another secret) → 401
 *   `CALLBACK_TOKEN_INVALID`; genuine but expired → 401 `CALLBACK_TOKEN_EXPIRED`;
 * - the body: not JSON → 415;
 * - the run: unknown → 404; waiting at that interrupt since another pause than the token's → 401;
 * - then `client.continue(runId, path, payload, { ifNotReached: 'refuse' })`: accepted → 202
 *   {@link CallbackAnswer}; answered already (the token's second use), or the run not waiting
 *   there (finished, cancelled, timed out) → 409 with its code; an invalid payload → 400
 *   `PAYLOAD_INVALID` with `fieldErrors` (counted as one of the interrupt's attempts, as
 *   `continue` counts it: the run stays paused while attempts remain).
 */
export class CallbackController {
  constructor(
    @Inject(CALLBACK_OPTIONS) private readonly options: ResolvedCallbackOptions,
    @Inject(CallbackTokens) private readonly tokens: CallbackTokens,
    @Inject(ReactorClient) private readonly client: ReactorClient,
    @Inject(REACTOR_CLOCK) private readonly clock: Clock,
  ) {}

  @Post(':token')
  @HttpCode(HttpStatus.ACCEPTED)
  async answer(
    @Param('token') token: string,
    @Body() payload: unknown,
    @Headers('content-type') contentType: string | undefined,
  ): Promise<CallbackAnswer> {
    const check = this.tokens.verify(token, this.clock.now());
    if (!check.ok) {
      if (check.reason === 'invalid') unauthorized(INVALID_TOKEN);
      unauthorized({
        statusCode: 401,
        code: 'CALLBACK_TOKEN_EXPIRED',
        message: `The callback token expired at ${new Date(check.claim.expiresAt).toISOString()}.`,
      });
    }
    if (typeof contentType !== 'string' || !/^application\/json\s*(?:;|$)/i.test(contentType)) {
      throw new HttpException(
        {
          statusCode: 415,
          code: 'UNSUPPORTED_MEDIA_TYPE',
          message: 'A callback takes its payload as JSON (content-type: application/json).',
        },
        HttpStatus.UNSUPPORTED_MEDIA_TYPE,
      );
    }
    const { runId, path, pausedAt } = check.claim;
    try {
      const view = await this.client.get(runId);
      if (!view) throw new NotFoundException({ statusCode: 404, code: 'RUN_NOT_FOUND', message: `No run '${runId}'.` });
      const outcome = view.outcome;
      const pending = outcome.status === 'paused' ? outcome.waitingFor.find((p) => p.path === path) : undefined;
      if (pending && pending.pausedAt !== pausedAt) {
        // Signed by this app, for an earlier pause of this interrupt: not the question now asked.
        unauthorized({
          ...INVALID_TOKEN,
          message: 'The callback token was issued for another pause of this interrupt.',
        });
      }
      const result = await this.client.continue(runId, path, payload, {
        ifNotReached: 'refuse',
        execute: this.options.execute,
      });
      return {
        runId,
        step: path,
        accepted: result.accepted,
        status: result.outcome?.status ?? (result.accepted === 'queued' ? 'paused' : 'dispatched'),
      };
    } catch (error) {
      return toHttp(error);
    }
  }
}

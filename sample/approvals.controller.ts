import {
  BadRequestException,
  Body,
  ConflictException,
  Controller,
  HttpCode,
  NotFoundException,
  Param,
  Post,
} from '@nestjs/common';
import { ReactorClient, ReactorError } from '../lib';
import { CreditApprovalReactor, type ApprovalDecision } from './approval.reactor';

/** Where an approver (or a webhook) answers a paused credit request, by its request id. */
@Controller('approvals')
export class ApprovalsController {
  constructor(private readonly client: ReactorClient) {}

  @Post(':requestId')
  @HttpCode(200)
  async decide(@Param('requestId') requestId: string, @Body() decision: ApprovalDecision) {
    try {
      const result = await this.client.continueByCorrelationId(CreditApprovalReactor, 'approve', requestId, decision, {
        ifNotReached: 'refuse',
      });
      if (result.accepted !== 'applied') return { accepted: result.accepted };
      return { accepted: 'applied', runId: result.runId, status: result.outcome.status };
    } catch (error) {
      if (!(error instanceof ReactorError)) throw error;
      switch (error.code) {
        case 'PAYLOAD_INVALID':
          throw new BadRequestException(error.toJSON());
        case 'CORRELATION_ID_NOT_FOUND':
          throw new NotFoundException(error.message);
        case 'ALREADY_RESUMED':
        case 'RUN_NOT_PAUSED':
          throw new ConflictException(error.message);
        default:
          throw error;
      }
    }
  }
}

import { Injectable, Logger } from '@nestjs/common';
import { failure, Reactor, Step, success, type ReactorBlueprint, type ReactorBuilder, type StepHandler } from '../lib';

/** Input of {@link CreditApprovalReactor}: a goodwill credit over the limit a manager must approve. */
export interface CreditRequest {
  requestId: string;
  customerId: string;
  amountCents: number;
}

/** What the approver sends: the interrupt's payload, validated against its contract. */
export interface ApprovalDecision {
  approved: boolean;
  approver: string;
}

/** Credits issued to customers, in memory. */
@Injectable()
export class CreditsService {
  private readonly logger = new Logger('Credits');
  readonly issued: Array<{ customerId: string; amountCents: number; approver: string }> = [];

  issue(customerId: string, amountCents: number, approver: string): string {
    this.issued.push({ customerId, amountCents, approver });
    this.logger.log(`credited ${customerId} ${amountCents} cents (approved by ${approver})`);
    return `cr_${this.issued.length}`;
  }
}

/** Issue the credit once the decision says yes; a refusal fails the run (nothing was issued). */
@Step('issue-credit')
export class IssueCredit implements StepHandler<
  { customerId: string; amountCents: number; decision: ApprovalDecision },
  string
> {
  constructor(private readonly credits: CreditsService) {}

  run({ customerId, amountCents, decision }: { customerId: string; amountCents: number; decision: ApprovalDecision }) {
    if (!decision.approved) return failure(new Error(`credit refused by ${decision.approver}`), { retryable: false });
    return success(this.credits.issue(customerId, amountCents, decision.approver));
  }
}

/**
 * A goodwill credit waits for a manager: the run pauses at `approve` (durable, no worker held)
 * until `POST /approvals/:requestId` answers, the way an approval UI or a webhook would. The
 * request id is the interrupt's correlation id, so the caller needs no run id.
 */
@Reactor('credit-approval')
export class CreditApprovalReactor implements ReactorBlueprint<CreditRequest> {
  build(r: ReactorBuilder<CreditRequest>) {
    const requestId = r.input('requestId', { type: 'string' });
    const decision = r.interrupt<ApprovalDecision, { requestId: string }>('approve', {
      args: { requestId },
      correlationId: ({ args }) => args.requestId,
      payload: { approved: { type: 'boolean' }, approver: { type: 'string', minLength: 1 } },
      maxAttempts: 3,
      timeoutMs: 24 * 60 * 60 * 1000,
    });
    return r.step('issue-credit', IssueCredit, {
      customerId: r.input('customerId', { type: 'string' }),
      amountCents: r.input('amountCents', { type: 'integer', min: 1 }),
      decision,
    });
  }
}

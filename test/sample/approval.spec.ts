import type { INestApplication, LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ReactorTestingKit, ReactorTestingModule } from '../../lib/testing';
import { reactorMatchers } from '../../lib/testing/jest';
import { CreditApprovalReactor, CreditsService, IssueCredit } from '../../sample/approval.reactor';
import { ApprovalsController } from '../../sample/approvals.controller';

expect.extend(reactorMatchers);

const silent: LoggerService = { log() {}, warn() {}, error() {} };
const HOUR = 60 * 60 * 1000;
const request = { requestId: 'credit-42', customerId: 'cus_ada', amountCents: 2_500 };

describe('sample: credit approval over HTTP', () => {
  let app: INestApplication;
  let kit: ReactorTestingKit;
  let baseUrl: string;

  beforeEach(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [ReactorTestingModule.forRoot()],
      controllers: [ApprovalsController],
      providers: [CreditsService, IssueCredit, CreditApprovalReactor],
    })
      .setLogger(silent)
      .compile();
    app = moduleRef.createNestApplication({ logger: silent });
    await app.listen(0, '127.0.0.1');
    baseUrl = await app.getUrl();
    kit = app.get(ReactorTestingKit);
  });

  afterEach(async () => {
    await app.close();
  });

  const post = async (body: unknown) => {
    const response = await fetch(`${baseUrl}/approvals/${request.requestId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  it('pauses at approve, refuses an invalid decision, and issues the credit once a manager approves', async () => {
    const paused = await kit.client.run(CreditApprovalReactor, request);
    expect(paused).toMatchObject({ status: 'paused', stepName: 'approve', correlationId: 'credit-42' });

    await expect(
      kit.client.continueByCorrelationId(CreditApprovalReactor, 'approve', 'credit-42', { approved: 'yes' }),
    ).rejects.toHaveValidationErrorOn('approver');

    const accepted = await post({ approved: true, approver: 'grace' });
    expect(accepted).toEqual({ status: 200, body: { accepted: 'applied', runId: paused.runId, status: 'completed' } });
    const done = await kit.client.wait(paused.runId);
    expect(done).toHaveCompleted('cr_1');
    expect(app.get(CreditsService).issued).toEqual([{ customerId: 'cus_ada', amountCents: 2_500, approver: 'grace' }]);

    expect((await post({ approved: false, approver: 'mallory' })).status).toBe(409);
  });

  it('answers 400 with the field errors for an invalid decision', async () => {
    await kit.client.run(CreditApprovalReactor, request);
    const refused = await post({ approved: true, approver: '' });
    expect(refused.status).toBe(400);
    expect(refused.body).toHaveValidationErrorOn('approver');
  });

  it('a refusal fails the run at issue-credit, nothing issued', async () => {
    const paused = await kit.client.run(CreditApprovalReactor, request);
    await post({ approved: false, approver: 'grace' });
    const done = await kit.client.wait(paused.runId);
    expect(done).toHaveFailedAt('issue-credit');
    expect(app.get(CreditsService).issued).toEqual([]);
  });

  it('nobody answers: the run stays paused for 23 hours, and times out when the clock reaches 24', async () => {
    const paused = await kit.client.run(CreditApprovalReactor, request);

    await kit.advance(23 * HOUR);
    expect(await kit.client.get(paused.runId)).toMatchObject({ status: 'paused' });

    await kit.advance(HOUR);
    const timedOut = await kit.client.wait(paused.runId);
    expect(timedOut).toHaveFailedAt('approve');
    expect(timedOut.status === 'failed' && timedOut.failure.code).toBe('INTERRUPT_TIMED_OUT');
    // A late answer is refused: the request under its id timed out (its id is kept as long as the run).
    expect((await post({ approved: true, approver: 'grace' })).status).toBe(409);
  });
});

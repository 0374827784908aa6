/**
 * A worker process of the flow-control chaos tests: a Nest application context with the
 * ReactorModule on Redis (workers on) and the reactors of flow.fixtures.ts. Started by
 * test/chaos/flow.spec.ts through `WorkerProcess.start(..., 'test/chaos/flow.worker.ts')`.
 *
 * Environment: REDIS_URL (or REDIS_CLUSTER_NODES), CHAOS_PREFIX, WORKER_ID, LEASE_TTL_MS (default
 * 1500) and SWEEPER_INTERVAL_MS (unset: no sweeper; set: `ScheduleModule.forRoot()` is imported and
 * the recovery sweeper, flow sweep included, runs on that interval).
 *
 * Once consuming it prints `ready`, then takes start commands from its list
 * (`FlowChaosKeys.commands(WORKER_ID)`, BLPOP on a connection of its own): for each it starts the
 * reactor once per input, in order, each start awaited, with its own `ReactorClient`, and pushes
 * the outcomes (or the error) to `FlowChaosKeys.reply(id)`. The test SIGKILLs it.
 */
import 'reflect-metadata';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { createTestRedis } from '../setup/redis';
import { FLOW_CHAOS_PROVIDERS, FlowChaosKeys, type FlowCommand, type FlowReply } from './flow.fixtures';
import { runWorker, startChaosWorker } from './worker-bootstrap';

runWorker('flow.worker', async () => {
  const { app, config, workerId, probe } = await startChaosWorker({ providers: FLOW_CHAOS_PROVIDERS });
  const client = app.get(ReactorClient);
  const keys = new FlowChaosKeys(config.prefix);

  // The command loop: BLPOP blocks its connection, so it has one of its own.
  const commands = createTestRedis({ connectionName: `flow-chaos-commands-${workerId}` });
  for (;;) {
    const popped = await commands.blpop(keys.commands(workerId), 0);
    if (!popped) continue;
    const command = JSON.parse(popped[1]) as FlowCommand;
    let reply: FlowReply;
    try {
      const outcomes: Array<NonNullable<FlowReply['outcomes']>[number]> = [];
      for (const input of command.inputs) {
        const outcome = await client.start(command.reactor, input);
        outcomes.push({
          runId: outcome.runId,
          status: outcome.status,
          ...(outcome.status === 'dispatched' && outcome.flow ? { flow: outcome.flow } : {}),
        });
      }
      reply = { outcomes };
    } catch (error) {
      reply = { error: (error as Error)?.stack ?? String(error) };
    }
    await probe.redis.rpush(keys.reply(command.id), JSON.stringify(reply));
  }
});

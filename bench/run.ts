/**
 * `npm run bench`: every benchmark, each beside a baseline measured in the same run. Prints
 * Markdown tables that bench/RESULTS.md records. Never part of `npm test`.
 *
 * `npm run bench -- engine durable map user coordination cluster scaling flow live` runs only the named groups. Redis: a
 * private `redis-server` on a free port (command counts are server-wide), or BENCH_REDIS_URL.
 * `user`: BENCH_ROUNDS=3 runs each scenario three times, the sides in turn, and reports medians (on
 * shared cores one pass can land a burst of load on one side).
 */
import * as os from 'node:os';
import { clusterDistribution, printClusterDistribution } from './cluster-distribution.bench';
import { coordinationRates, printCoordination } from './coordination.bench';
import { durableRuns, printDurable } from './durable.bench';
import { engineOverhead, printOverhead } from './engine-overhead.bench';
import { flowControl, printFlowControl } from './flow.bench';
import { liveRuns, printLiveRuns } from './live.bench';
import { mapFanOut, printMapFanOut } from './map.bench';
import { stopBenchRedis } from './redis-counter';
import { printWorkerScaling, workerScaling } from './scaling.bench';
import { printUserPath, userPath } from './user-path.bench';

async function main(): Promise<void> {
  const only = process.argv.slice(2);
  const want = (name: string) => only.length === 0 || only.includes(name);
  console.log(`# nest-reactor benchmarks`);
  console.log(
    `node ${process.version}, ${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, ${new Date().toISOString()}`,
  );
  if (want('engine')) printOverhead(await engineOverhead());
  if (want('durable')) printDurable(await durableRuns());
  if (want('map')) printMapFanOut(await mapFanOut());
  if (want('user')) printUserPath(await userPath());
  if (want('coordination')) printCoordination(await coordinationRates());
  if (want('cluster')) printClusterDistribution(clusterDistribution());
  if (want('scaling')) printWorkerScaling(await workerScaling());
  if (want('flow')) printFlowControl(await flowControl());
  if (want('live')) printLiveRuns(await liveRuns());
  stopBenchRedis();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);

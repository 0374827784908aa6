/**
 * Jest configuration of the cluster run, `npm run test:cluster`: the Redis end-to-end and chaos
 * suites (and the cluster-only tests of test/cluster) against a private 3-master Redis Cluster that
 * test/cluster/global-setup.ts starts from `redis-server` (free ports, `redis-cli --cluster
 * create`, ready once every node says `cluster_state:ok`) and test/cluster/global-teardown.ts stops
 * by pid. The nodes are exported as `REDIS_CLUSTER_NODES`; the test helpers (test/setup/redis.ts,
 * test/e2e/e2e.fixtures.ts, test/chaos/chaos.harness.ts and the chaos worker processes) then give
 * the module `{ redis: { connection: new Cluster(nodes, ...) } }`.
 *
 * Same transform, timeout and worker count as ./jest.config.js.
 *
 * @type {import('jest').Config}
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS config reusing the main one
const base = require('./jest.config.js');

/** Test files that are single-node by design, with the reason. */
const SINGLE_NODE_FILES = {
  'test/e2e/redis-deployment.e2e.spec.ts':
    'the single-node deployment: the refusal of single-node connections to one cluster node (it starts ' +
    'its own node), the shard-count record, and `redis: { url }`, whose connections the module creates ' +
    'and closes itself (a cluster cannot be given as a url); nothing in it runs on a cluster',
};

module.exports = {
  ...base,
  globalSetup: '<rootDir>/test/cluster/global-setup.ts',
  globalTeardown: '<rootDir>/test/cluster/global-teardown.ts',
  testMatch: [
    '<rootDir>/test/e2e/**/*.spec.ts',
    '<rootDir>/test/chaos/**/*.spec.ts',
    '<rootDir>/test/core/abort-signal.redis.spec.ts',
    '<rootDir>/test/cluster/**/*.spec.ts',
  ],
  testPathIgnorePatterns: ['/node_modules/', ...Object.keys(SINGLE_NODE_FILES).map((file) => `<rootDir>/${file}`)],
};

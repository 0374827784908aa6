/**
 * `nest-reactor/metrics` is the only part of the package that loads `prom-client` (an optional peer
 * dependency): an application without prom-client imports `nest-reactor` as before. Here prom-client
 * is made to fail on load, in a module registry of its own, as if it were not installed.
 */
const NO_PROM_CLIENT = 'prom-client is not installed (test)';

describe('the metrics entry point is optional', () => {
  afterEach(() => {
    jest.dontMock('prom-client');
  });

  it('the main entry point loads without prom-client and exports nothing of the metrics entry', () => {
    jest.isolateModules(() => {
      jest.doMock('prom-client', () => {
        throw new Error(NO_PROM_CLIENT);
      });
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const main = require('../../lib') as Record<string, unknown>;
      expect(main.ReactorModule).toBeDefined();
      expect(Object.keys(main).filter((name) => /metrics/i.test(name))).toEqual([]);
    });
  });

  it('the metrics entry point is what loads prom-client, and exports the module, its provider and its controller', () => {
    jest.isolateModules(() => {
      jest.doMock('prom-client', () => {
        throw new Error(NO_PROM_CLIENT);
      });
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      expect(() => require('../../lib/metrics')).toThrow(NO_PROM_CLIENT);
    });
    jest.dontMock('prom-client');
    jest.isolateModules(() => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const metrics = require('../../lib/metrics') as Record<string, unknown>;
      expect(Object.keys(metrics).sort()).toEqual([
        'ReactorMetrics',
        'ReactorMetricsController',
        'ReactorMetricsModule',
      ]);
    });
  });
});

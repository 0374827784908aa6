/**
 * `nest-reactor/health` is the only part of the package that loads `@nestjs/terminus` (an optional
 * peer dependency): an application without terminus imports `nest-reactor` as before. Here
 * terminus is made to fail on load, in a module registry of its own, as if it were not installed.
 */
const ABSENT = '@nestjs/terminus is not installed (test)';

describe('the health entry point is optional', () => {
  afterEach(() => {
    jest.dontMock('@nestjs/terminus');
  });

  it('the main entry point loads without @nestjs/terminus and exports nothing of the health entry', () => {
    jest.isolateModules(() => {
      jest.doMock('@nestjs/terminus', () => {
        throw new Error(ABSENT);
      });
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const main = require('../../lib') as Record<string, unknown>;
      expect(main.ReactorModule).toBeDefined();
      expect(main.ReactorClient).toBeDefined();
      expect(Object.keys(main).filter((name) => /health/i.test(name))).toEqual([]);
    });
  });

  it('the health entry point is what loads @nestjs/terminus', () => {
    jest.isolateModules(() => {
      jest.doMock('@nestjs/terminus', () => {
        throw new Error(ABSENT);
      });
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      expect(() => require('../../lib/health')).toThrow(ABSENT);
    });
  });
});

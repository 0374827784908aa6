import type { LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Reactor, ReactorClient, ReactorModule, success, type ReactorBlueprint, type ReactorBuilder } from '../../lib';
import { CLIENT_ONLY_PROCESS } from '../../lib/nest/reactor-module.options';

const silent: LoggerService = { log() {}, warn() {}, error() {} };

@Reactor('client-only-nightly', { schedule: { cron: '0 2 * * *', input: {} } })
class NightlyReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    return r.step('one', () => success(1), {});
  }
}

/** Boot an app with the scheduled reactor; the ids of the schedules it then lists. */
async function scheduleIdsAfterBoot(): Promise<string[]> {
  const moduleRef = await Test.createTestingModule({
    imports: [ReactorModule.forRoot()],
    providers: [NightlyReactor],
  })
    .setLogger(silent)
    .compile();
  await moduleRef.init();
  try {
    return (await moduleRef.get(ReactorClient).schedules.list()).map((s) => s.id);
  } finally {
    await moduleRef.close();
  }
}

describe('a client-only process (the CLI) and declared schedules', () => {
  it('an app booted as a client writes no schedule; the same app booted normally declares its schedule', async () => {
    const global = globalThis as Record<symbol, unknown>;
    global[CLIENT_ONLY_PROCESS] = true;
    try {
      expect(await scheduleIdsAfterBoot()).toEqual([]);
    } finally {
      delete global[CLIENT_ONLY_PROCESS];
    }
    expect(await scheduleIdsAfterBoot()).toEqual(['client-only-nightly']);
  });
});

import {
  Inject,
  Injectable,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { ReactorEngine } from '../core/engine';
import type { ReactorRuntime } from './reactor-runtime.interface';
import { REACTOR_RUNTIME } from './reactor.constants';

/**
 * The module's start and stop, in one place (collection happens earlier, in the explorer's
 * `onModuleInit`):
 *
 * - `onApplicationBootstrap`: workers start consuming jobs (every reactor is registered by then);
 * - `beforeApplicationShutdown`: workers stop taking jobs;
 * - `onApplicationShutdown`: the runtime releases what it created.
 *
 * `app.close()` runs the shutdown hooks; `app.enableShutdownHooks()` also runs them on SIGTERM.
 */
@Injectable()
export class ReactorLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  constructor(
    @Inject(REACTOR_RUNTIME) private readonly runtime: ReactorRuntime,
    private readonly engine: ReactorEngine,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.runtime.startWorkers((job) => this.engine.handleJob(job));
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.runtime.stopWorkers();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.runtime.close();
  }
}

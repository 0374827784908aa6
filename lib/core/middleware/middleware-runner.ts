import type { ReactorEvent, ReactorMiddleware } from './events';

/** Something to report swallowed middleware errors to. */
export interface ErrorSink {
  error(message: string): void;
}

/** Delivers events to middleware in order, isolating each from the others and from the run. */
export class MiddlewareRunner {
  private readonly middleware: ReactorMiddleware[];

  constructor(
    middleware: readonly ReactorMiddleware[],
    private readonly sink: ErrorSink = { error: (m) => console.error(m) },
  ) {
    this.middleware = [...middleware];
  }

  /** Deliver to `mw` too, after the others (listeners found at boot; runners made earlier by {@link with} are not changed). */
  add(mw: ReactorMiddleware): void {
    this.middleware.push(mw);
  }

  get empty(): boolean {
    return this.middleware.length === 0;
  }

  /** A runner delivering to this one's middleware, then to `more` (a reactor's own, after the global ones). */
  with(more: readonly ReactorMiddleware[]): MiddlewareRunner {
    return more.length === 0 ? this : new MiddlewareRunner([...this.middleware, ...more], this.sink);
  }

  async emit(event: ReactorEvent): Promise<void> {
    for (const mw of this.middleware) {
      try {
        await mw.onEvent(event);
      } catch (error) {
        this.sink.error(
          `nest-reactor middleware ${mw.constructor?.name ?? 'middleware'} failed during ${event.type}: ${(error as Error)?.message ?? String(error)}`,
        );
      }
    }
  }
}

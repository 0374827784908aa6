import { ReactorError } from '../errors/reactor.error';
import type { BrokenReason } from '../ports/reactor-storage.port';

/** The reason stored with a run that is marked broken because of `error`. */
export function toBrokenReason(error: unknown): Required<BrokenReason> {
  const exceptionClass = (error as Error)?.constructor?.name ?? 'Error';
  if (error instanceof ReactorError) return { code: error.code, message: error.message, exceptionClass };
  return { code: 'INTERNAL', message: (error as Error)?.message ?? String(error), exceptionClass };
}

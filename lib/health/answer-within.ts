/** How a call bounded by a timeout ended: its value and how long it took, or why there is none. */
export type Answer<T> =
  | { readonly ok: true; readonly value: T; readonly ms: number }
  | { readonly ok: false; readonly timedOut: boolean; readonly error?: unknown };

/**
 * Call `call` and wait at most `timeoutMs` for it. Never throws: a rejection or a timeout is an
 * answer that says so.
 *
 * NOTE: ioredis queues a command while its connection is down (and retries it on reconnect), so a
 * PING to an unreachable Redis neither resolves nor rejects for a long time; a health check must
 * not wait for it. The call left behind settles on its own (its rejection is handled here).
 */
export async function answerWithin<T>(call: () => Promise<T>, timeoutMs: number): Promise<Answer<T>> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Answer<T>>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, timedOut: true }), timeoutMs);
  });
  const answer = Promise.resolve()
    .then(call)
    .then(
      (value): Answer<T> => ({ ok: true, value, ms: Math.round(performance.now() - started) }),
      (error: unknown): Answer<T> => ({ ok: false, timedOut: false, error }),
    );
  try {
    return await Promise.race([answer, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

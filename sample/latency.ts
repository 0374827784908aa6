/** Simulated network latency of the fake services, so concurrent steps visibly overlap. */
export function latency(ms = 20): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

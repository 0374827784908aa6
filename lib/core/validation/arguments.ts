/**
 * Checks of a client call's arguments, before anything is read or written: an argument the call
 * cannot use is an `InvalidArgumentError` (`INVALID_ARGUMENT`) naming the method, the argument and
 * what it must be, instead of failing somewhere inside (where it would read as another failure).
 * Run ids are checked by the engine (`INVALID_RUN_ID`), inputs and payloads by their validation.
 */
import { InvalidArgumentError } from '../errors/invalid-argument.error';

/** A lone UTF-16 surrogate: such a string has no UTF-8 form (Redis keys, URLs, JSON to other systems). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether `text` is well-formed Unicode (no lone surrogate). */
export function isWellFormed(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}

/** `options` is undefined or a plain object; returns it as one (`{}` when undefined). */
export function checkOptions<T extends object>(method: string, options: T | undefined, name = 'options'): T {
  if (options === undefined) return {} as T;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new InvalidArgumentError(method, name, 'an object (or left out)', options);
  }
  return options;
}

/** `value` is undefined or one of `allowed`. */
export function checkOneOf(method: string, name: string, value: unknown, allowed: readonly unknown[]): void {
  if (value !== undefined && !allowed.includes(value)) {
    throw new InvalidArgumentError(method, name, `one of ${allowed.map((a) => JSON.stringify(a)).join(', ')}`, value);
  }
}

/** `value` is undefined or a boolean. */
export function checkBoolean(method: string, name: string, value: unknown): void {
  if (value !== undefined && typeof value !== 'boolean') {
    throw new InvalidArgumentError(method, name, 'a boolean (or left out)', value);
  }
}

/** `value` is undefined or a finite number of milliseconds, at least `min`. */
export function checkMs(method: string, name: string, value: unknown, min = 0): void {
  if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value) || value < min)) {
    throw new InvalidArgumentError(method, name, `a finite number of milliseconds >= ${min} (or left out)`, value);
  }
}

/** `value` is undefined or an integer from `min` to `max`. */
export function checkInteger(method: string, name: string, value: unknown, min: number, max: number): void {
  if (value !== undefined && (!Number.isInteger(value) || (value as number) < min || (value as number) > max)) {
    throw new InvalidArgumentError(method, name, `an integer from ${min} to ${max} (or left out)`, value);
  }
}

/** `value` is a non-empty, well-formed string of at most `max` characters. */
export function checkText(method: string, name: string, value: unknown, max = 512): asserts value is string {
  if (typeof value !== 'string' || value.length === 0 || value.length > max || !isWellFormed(value)) {
    throw new InvalidArgumentError(
      method,
      name,
      `a non-empty string of at most ${max} characters, well-formed Unicode (no lone surrogate)`,
      value,
    );
  }
}

/** An interrupt's step: a name, a path (`'payment.approve'`) or the path's names as an array. */
export function checkStepPath(method: string, step: unknown): void {
  const expected = "a step name or path ('payment.approve'), or a non-empty array of step names";
  if (typeof step === 'string') {
    if (step.length === 0 || !isWellFormed(step)) throw new InvalidArgumentError(method, 'step', expected, step);
    return;
  }
  if (!Array.isArray(step) || step.length === 0) throw new InvalidArgumentError(method, 'step', expected, step);
  for (const name of step as unknown[]) {
    if (typeof name !== 'string' || name.length === 0 || !isWellFormed(name)) {
      throw new InvalidArgumentError(method, 'step', expected, step);
    }
  }
}

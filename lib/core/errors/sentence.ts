/**
 * Building messages out of other messages without doubled punctuation: an embedded error message
 * often ends in a period of its own (ioredis: "... Refer to "maxRetriesPerRequest" option for
 * details."), and a template that adds one after it prints "details..".
 */

/** Terminal punctuation, optionally followed by closing quotes or brackets: `.`, `!`, `?`, `…`, `."`, `.)`. */
const ENDS_A_SENTENCE = /[.!?…]['"’”)\]]*$/u;

/** The message of an error (its `message` when it has one, else `String(error)`), trimmed. */
export function errorText(error: unknown): string {
  const message = (error as Error | undefined)?.message;
  return (typeof message === 'string' ? message : String(error)).trim();
}

/**
 * `text` as one sentence: trimmed, with a period added unless it already ends a sentence
 * (`.`, `!`, `?`, `…`, also before a closing quote or bracket). Empty text stays empty.
 */
export function sentence(text: string): string {
  const trimmed = text.trim();
  if (trimmed.length === 0 || ENDS_A_SENTENCE.test(trimmed)) return trimmed;
  return `${trimmed}.`;
}

/**
 * Join sentences with single spaces, each ended by {@link sentence}; empty, `undefined` and
 * `false` parts are left out: `sentences('Redis did not answer: details.', 'Retry later')` is
 * `'Redis did not answer: details. Retry later.'`.
 */
export function sentences(...parts: ReadonlyArray<string | undefined | false | null>): string {
  return parts
    .filter((part): part is string => typeof part === 'string')
    .map(sentence)
    .filter((part) => part.length > 0)
    .join(' ');
}

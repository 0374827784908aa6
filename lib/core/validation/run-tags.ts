/**
 * Run tags (issue 25): small string key/value pairs a run carries (`tags` on start, `ctx.tag` from
 * a step), stored on its record and indexed per reactor, so `list` can find a reactor's runs by tag.
 */
import { ConfigurationError } from '../errors/configuration.error';

/** A tag key: letters, digits, `_`, `.` and `-`, 1 to 64 characters. */
export const TAG_KEY_PATTERN = /^[a-z0-9_.-]{1,64}$/i;
/** The longest tag value (characters). */
export const MAX_TAG_VALUE_LENGTH = 256;
/** The most tags a run carries. */
export const MAX_TAGS_PER_RUN = 16;

/** A tag filter of `list`: `{ key, value }` or `'key=value'`. */
export type TagFilter = { key: string; value: string } | string;

/** Refuses a tag key or value out of bounds; `where` names the reactor, step or option (`Reactor 'x' step 'y': ctx.tag`). */
export function checkTag(where: string, key: unknown, value: unknown, field = 'tags'): void {
  if (typeof key !== 'string' || !TAG_KEY_PATTERN.test(key)) {
    throw new ConfigurationError(
      `${where}: a tag key must be 1 to 64 letters, digits, '_', '.' or '-' (got ${describe(key)}).`,
      field,
    );
  }
  if (typeof value !== 'string' || value.length > MAX_TAG_VALUE_LENGTH) {
    throw new ConfigurationError(
      `${where}: the value of tag '${key}' must be a string of at most ${MAX_TAG_VALUE_LENGTH} characters (got ${
        typeof value === 'string' ? `${value.length} characters` : describe(value)
      }).`,
      `${field}.${key}`,
    );
  }
}

/** The tags given on start, checked and copied: an object of at most 16 string values. */
export function checkTags(where: string, tags: unknown): Record<string, string> {
  if (typeof tags !== 'object' || tags === null || Array.isArray(tags)) {
    throw new ConfigurationError(
      `${where}: 'tags' must be an object of string values (got ${describe(tags)}).`,
      'tags',
    );
  }
  const out: Record<string, string> = {};
  const entries = Object.entries(tags);
  if (entries.length > MAX_TAGS_PER_RUN) {
    throw new ConfigurationError(
      `${where}: a run carries at most ${MAX_TAGS_PER_RUN} tags ('tags' has ${entries.length}).`,
      'tags',
    );
  }
  for (const [key, value] of entries) {
    checkTag(where, key, value);
    out[key] = value as string;
  }
  return out;
}

/**
 * Set tag `key` of a run to `value` (a new `tags` object, so a storage adapter sees it changed).
 * A key already set is replaced; a run's 17th key is refused.
 */
export function setTag(state: { tags?: Record<string, string> }, where: string, key: unknown, value: unknown): void {
  checkTag(where, key, value);
  const k = key as string;
  const tags = state.tags ?? {};
  if (tags[k] === value) return;
  if (!(k in tags) && Object.keys(tags).length >= MAX_TAGS_PER_RUN) {
    throw new ConfigurationError(
      `${where}: a run carries at most ${MAX_TAGS_PER_RUN} tags; tag '${k}' would be its ${MAX_TAGS_PER_RUN + 1}th.`,
      'tags',
    );
  }
  state.tags = { ...tags, [k]: value as string };
}

/** A `list` tag filter as `{ key, value }` (`'key=value'` split at its first `=`), checked. */
export function parseTagFilter(where: string, filter: unknown): { key: string; value: string } {
  let key: unknown;
  let value: unknown;
  if (typeof filter === 'string') {
    const at = filter.indexOf('=');
    if (at <= 0) {
      throw new ConfigurationError(
        `${where}: 'tag' must be 'key=value' or { key, value } (got ${describe(filter)}).`,
        'tag',
      );
    }
    key = filter.slice(0, at);
    value = filter.slice(at + 1);
  } else if (typeof filter === 'object' && filter !== null && !Array.isArray(filter)) {
    ({ key, value } = filter as { key?: unknown; value?: unknown });
  } else {
    throw new ConfigurationError(
      `${where}: 'tag' must be 'key=value' or { key, value } (got ${describe(filter)}).`,
      'tag',
    );
  }
  checkTag(where, key, value, 'tag');
  return { key: key as string, value: value as string };
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}...` : value);
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}

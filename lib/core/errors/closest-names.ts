/**
 * The known names closest to `name`, for "did you mean" in errors about a name that is not
 * registered (a reactor, a step, an interrupt, a rate limit): at most `max` of them, nearest first.
 *
 * Distance is the optimal string alignment distance (Levenshtein with adjacent transpositions, so
 * `nmae` is one edit from `name`), compared case-insensitively. A name is close when it is at most
 * a third of the longer name's length away (at least 1, at most 3 edits): `chekout` finds
 * `checkout`, `x` finds nothing in `['checkout']`.
 */
export function closestNames(name: string, known: Iterable<string>, max = 3): string[] {
  if (typeof name !== 'string' || name.length === 0) return [];
  const wanted = name.toLowerCase();
  const found: Array<{ name: string; distance: number }> = [];
  for (const candidate of new Set(known)) {
    if (candidate === name) continue;
    const threshold = Math.min(3, Math.max(1, Math.floor(Math.max(name.length, candidate.length) / 3)));
    // Lengths alone already tell a candidate is too far.
    if (Math.abs(candidate.length - name.length) > threshold) continue;
    const distance = editDistance(wanted, candidate.toLowerCase());
    // NOTE: a one-letter name is "one edit" from every other one-letter name: not a suggestion.
    if (distance <= threshold && distance < Math.max(name.length, candidate.length))
      found.push({ name: candidate, distance });
  }
  return found
    .sort((a, b) => a.distance - b.distance || a.name.localeCompare(b.name))
    .slice(0, max)
    .map((f) => f.name);
}

/** ` Did you mean 'checkout'?` (with a leading space), or '' when no known name is close. */
export function didYouMean(name: string, known: Iterable<string>): string {
  const close = closestNames(name, known);
  if (close.length === 0) return '';
  const quoted = close.map((n) => `'${n}'`);
  const list = quoted.length === 1 ? quoted[0] : `${quoted.slice(0, -1).join(', ')} or ${quoted[quoted.length - 1]}`;
  return ` Did you mean ${list}?`;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  if (a.length === 0) return b.length;
  if (b.length === 0) return a.length;
  // Three rows: the one before the previous (for swaps), the previous, the current.
  let before = new Array<number>(b.length + 1).fill(0);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  let current = new Array<number>(b.length + 1).fill(0);
  for (let i = 1; i <= a.length; i++) {
    current[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2] + 1);
      current[j] = d;
    }
    [before, previous, current] = [previous, current, before];
  }
  return previous[b.length];
}

import type { MapElementJob } from '../ports/job-dispatcher.port';

/**
 * The jobs that carry `indices` of map `mapId`: runs of consecutive indices, at most `perJob`
 * per job (a `map-element` job claims, runs and settles its elements together; rollbacks go one
 * element per job). Each job is identity only: the owner run, the map, the first index, the count.
 */
export function elementJobs(
  owner: { runId: string; reactorName: string },
  mapId: string,
  indices: readonly number[],
  kind: MapElementJob['kind'],
  perJob = 1,
): MapElementJob[] {
  const jobs: MapElementJob[] = [];
  const size = kind === 'map-element' ? Math.max(1, perJob) : 1;
  for (const index of indices) {
    const last = jobs[jobs.length - 1];
    const count = last?.count ?? 1;
    if (last && last.index + count === index && count < size) last.count = count + 1;
    else jobs.push({ kind, runId: owner.runId, reactorName: owner.reactorName, mapId, index });
  }
  return jobs;
}

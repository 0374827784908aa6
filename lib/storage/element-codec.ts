/**
 * How both map stores write a fan-out map's element inputs and states: JSON, sealed (see
 * `sealing.ts`) when the map's inputs are encrypted or the state's run is marked `encryptInputs`.
 */
import type { RunState } from '../core';
import { Sealer } from './sealing';

/** Encodes and decodes element inputs and states, sealing with the store's cipher where asked. */
export class ElementCodec {
  readonly sealer: Sealer;

  constructor(sealer: Sealer) {
    this.sealer = sealer;
  }

  /** An element's inputs as stored. */
  input(mapId: string, index: number, input: Record<string, unknown>, encrypt: boolean): string {
    const json = JSON.stringify(input);
    return encrypt ? this.sealer.seal(json, { runId: mapId, field: `inputs:${index}` }) : json;
  }

  /** An element's stored inputs (`{}` when none are stored). */
  readInput(mapId: string, index: number, raw: string | null | undefined): Record<string, unknown> {
    if (typeof raw !== 'string' || raw === '') return {};
    return JSON.parse(this.sealer.open(raw, { runId: mapId, field: `inputs:${index}` })) as Record<string, unknown>;
  }

  /** An element's state as stored. */
  state(mapId: string, index: number, state: RunState): string {
    const json = JSON.stringify(state);
    return state.encryptInputs ? this.sealer.seal(json, { runId: mapId, field: `states:${index}` }) : json;
  }

  /** An element's stored state, if any. */
  readState(mapId: string, index: number, raw: string | null | undefined): RunState | undefined {
    if (typeof raw !== 'string' || raw === '') return undefined;
    return JSON.parse(this.sealer.open(raw, { runId: mapId, field: `states:${index}` })) as RunState;
  }
}

/**
 * A run as a record of fields, written by deltas: a checkpoint writes only what changed since the
 * last write of the same state object, so its cost does not grow with the steps already done or
 * with the size of earlier results. Both adapters store runs this way (Redis: one HASH per run;
 * memory: a map of fields), so both pass the same conformance suite on the same code.
 *
 * Fields:
 *
 * | field        | holds                                                      | written            |
 * | ------------ | ---------------------------------------------------------- | ------------------ |
 * | `state`      | identity: schema version, run id, reactor, definition hash, createdAt | once |
 * | `head`       | progress: status, value, failure, halt, plans, and `updatedAt` as of that write (JSON) | when more than the time changes |
 * | `at`         | `updatedAt` (ms): read in place of the one in `head`       | every checkpoint   |
 * | `inputs`     | the validated inputs (JSON)                                | once               |
 * | `r:<step>`   | `[seq]`, `[seq, value]` or `[seq, value, folded]`: a finished step's result, `seq` its place in `completed`; `folded` its first `run` and its `complete` trace entries and an attempt count of 1, when they are written with it (see {@link foldedWithResult}) | once |
 * | `u:<n>`      | `[step, args]`: entry `n` of the undo stack (its result is `r:<step>`) | on push; deleted on pop |
 * | `t:<n>`      | trace entry `n`: `[type, step, at, {rest}?]` (an argument that is a stored result or input is a reference to it); none for an entry folded into a result | once |
 * | `a:<step>`   | attempts made at the step (a count of 1 may be folded into its result instead) | when it changes |
 * | `c:<step>`   | a composed child's whole state (JSON)                      | when it changes    |
 * | `m:<step>`   | a map step's record (JSON)                                 | when it changes    |
 * | `tags`       | the run's tags (JSON object), absent when it has none      | when they change   |
 *
 * In a run marked `encryptInputs`, the fields that hold inputs in clear (`inputs`, `u:`, `c:`/`m:`
 * of children and elements that are marked, the arguments a `t:` entry shows, and `head` while a
 * rollback keeps the arguments of the steps it compensates) are sealed with the adapter's
 * `InputCipher` (see `sealing.ts`); the identity, results, other trace entries and attempts are not.
 *
 * `status`, `terminal` and `broken` sit beside them for the Lua scripts (Redis). A record whose
 * `state` holds the whole run (the format before deltas) is still read; its first checkpoint
 * rewrites it in fields.
 *
 * What was written is remembered per state object ({@link Written}, in a WeakMap owned by the
 * adapter): the adapter that loaded or saved a state knows which of its fields are stored. A state
 * it has never seen is written whole, replacing the record.
 */
import { Buffer } from 'node:buffer';
import {
  ContextTooLargeError,
  CorruptRecordError,
  copyOwn,
  jsonProblem,
  UnstorableValueError,
  type MapRecord,
  type RunState,
  type TraceEntry,
  type UndoEntry,
} from '../core';
import { checkRunState, decodeRunState } from './run-state.codec';
import { NO_SEALER, type Sealer } from './sealing';

/** The identity field (what never changes in a run): also the whole run in records written before deltas. */
export const HEADER_FIELD = 'state';
/** What changes from step to step outside the collections: status, times, outcome, plans. */
const PROGRESS = 'head';
/** When the run last changed (`updatedAt`, ms): apart from `head`, which is then written only when the rest changed. */
const UPDATED_AT = 'at';
export const INPUTS = 'inputs';
export const RESULT = 'r:';
export const UNDO = 'u:';
export const TRACE = 't:';
export const ATTEMPTS = 'a:';
export const CHILD = 'c:';
export const MAP = 'm:';
/** The run's tags (JSON object); a record without it has none. */
export const TAGS = 'tags';
/** A trace entry's reference to an input (`i:<name>`); to a result it is the result's field, `r:<step>`. */
const INPUT_REF = 'i:';

/** Collections of the run stored in fields of their own, left out of the header. */
type Collection =
  'inputs' | 'results' | 'completed' | 'undoStack' | 'attempts' | 'trace' | 'children' | 'maps' | 'tags';

/** What is stored of one state object, as far as the adapter that wrote or read it knows. */
export interface Written {
  /** Entries of `completed` whose results are stored. */
  completed: number;
  /** The stored undo stack, bottom first: each entry's object and its field's size. */
  undo: Array<{ entry: UndoEntry; bytes: number }>;
  /** Trace entries stored. */
  trace: number;
  /** The inputs object stored. */
  inputs: unknown;
  /** The identity stored (see {@link identity}), field by field. */
  identity?: Identity;
  /** The progress stored (`head`, as written: sealed or not). */
  progress?: string;
  attempts: Map<string, number>;
  /** Serialized children and map records, to write only those that changed. */
  children: Map<string, string>;
  maps: Map<string, string>;
  /** The stored tags (their JSON), when the run has any. */
  tags?: string;
  /** Size of each replaceable field (header, attempts, children, maps), in UTF-8 bytes. */
  sizes: Map<string, number>;
  /** Size of the whole record, in UTF-8 bytes. */
  bytes: number;
  /**
   * The stored object values a trace entry can point at instead of copying them: a stored result
   * (`r:<step>`) or input (`i:<name>`), by identity. A Map, not a WeakMap: its values are the
   * run's own, kept as long as the state that holds them (and a Map's writes cost less).
   */
  refs: Map<object, string>;
}

/** What a checkpoint writes. */
export interface RecordDelta {
  /** Replace the whole record (a state this adapter has not seen, or one it cannot diff). */
  full: boolean;
  /** Fields to set and their values, flat: `[field, value, field, value, ...]`. */
  set: string[];
  /** Fields to delete. */
  del: string[];
  /** Size of the record once the delta is written, in UTF-8 bytes. */
  bytes: number;
  /** Tags this delta sets that were not stored with these values (to index them); absent when none. */
  tags?: Array<[key: string, value: string]>;
  /** After the delta was written: what is now stored (updates and returns `written` when it was diffed). */
  commit(): Written;
}

/**
 * The delta that brings the stored record of `state` up to date, given what is `written` of it
 * (none: write it whole). Touches only what changed, so its cost is that of the change; `written`
 * is left as it is until {@link RecordDelta.commit} (call it once the write succeeded). Fields
 * holding inputs of a run marked `encryptInputs` are sealed with `sealer`.
 * @throws ContextTooLargeError when the record would exceed `maxBytes` (nothing is to be written).
 * @throws ConfigurationError when a field must be sealed and `sealer` cannot.
 */
export function encodeDelta(
  state: RunState,
  written: Written | undefined,
  maxBytes: number,
  sealer: Sealer = NO_SEALER,
): RecordDelta {
  const full = written === undefined || !diffable(state, written);
  const w = full ? emptyWritten() : written;
  const set: string[] = [];
  const del: string[] = [];
  const sizes: Array<[string, number]> = [];
  let bytes = w.bytes;
  const put = (field: string, value: string, replaceable: boolean): number => {
    set.push(field, value);
    const size = byteLength(field, value);
    if (replaceable) {
      bytes -= w.sizes.get(field) ?? 0;
      sizes.push([field, size]);
    }
    bytes += size;
    return size;
  };

  // `what` names the value in an error: a string, or the step whose result or undo arguments it is
  // (the message is built only when there is an error).
  const json = (value: unknown, what: ValueName, step?: string, checked?: unknown): string => {
    const problem = checked === undefined ? undefined : jsonProblem(checked);
    if (problem)
      throw new UnstorableValueError(
        state.runId,
        named(what),
        step,
        new Error(`${problem} would not come back as it is`),
      );
    try {
      return JSON.stringify(value);
    } catch (error) {
      throw new UnstorableValueError(state.runId, named(what), step, error);
    }
  };
  const sealRun = state.encryptInputs === true;
  const sealed = (field: string, value: string, seal: boolean | undefined): string =>
    seal ? sealer.seal(value, { runId: state.runId, field }) : value;
  // Object values this delta stores, which its own trace entries may point at (`refs` once committed).
  const stored: Array<[object, string]> = [];
  const refOf = (value: object): string | undefined => {
    const known = w.refs.get(value);
    if (known !== undefined) return known;
    for (const [object, ref] of stored) if (object === value) return ref;
    return undefined;
  };
  const id = sameIdentity(w.identity, state) ? undefined : identity(state);
  if (id) put(HEADER_FIELD, JSON.stringify(id), true);
  // The progress holds inputs in clear only while a rollback keeps the arguments of the steps it
  // compensates; otherwise it is sealed for nothing (and it is written on every checkpoint).
  const sealProgress = sealRun && (state.rollback?.compensate.length ?? 0) > 0;
  const inputsChanged = w.inputs !== state.inputs;
  if (inputsChanged) {
    put(INPUTS, sealed(INPUTS, json(state.inputs, 'the inputs', undefined, state.inputs), sealRun), true);
    for (const name in state.inputs) {
      const value = state.inputs[name];
      if (typeof value === 'object' && value !== null) stored.push([value, INPUT_REF + name]);
    }
  }
  // Trace entries written with a step's result instead of in fields of their own (their positions),
  // and the steps whose attempt count of 1 is (DD-speed22-8).
  const folded = new Set<number>();
  const foldedAttempts: string[] = [];
  for (let seq = w.completed; seq < state.completed.length; seq++) {
    const step = state.completed[seq];
    const value = state.results[step];
    const field = RESULT + step;
    if (typeof value === 'object' && value !== null) stored.push([value, field]);
    // `[seq]`, `[seq, value]` or `[seq, value, folded]`, without an array made to write it.
    // (A value JSON writes nothing for is `null` in an array, as JSON.stringify([seq, value]) writes it.)
    const encoded =
      value === undefined
        ? undefined
        : ((json(value, { resultOf: step }, step, value) as string | undefined) ?? 'null');
    if (encoded === undefined) {
      put(field, `[${seq}]`, false);
      continue;
    }
    const extra = sealRun ? '' : foldedWithResult(state, step, w.trace, w.attempts.get(step), refOf, folded);
    if (extra !== '' && state.attempts[step] === 1 && w.attempts.get(step) !== 1) foldedAttempts.push(step);
    put(field, `[${seq},${encoded}${extra}]`, false);
  }
  // `head` only when more than the time changed (the time is `at`, written every time); a value
  // that is a stored result is a reference to it.
  const head = progressJson(state, json);
  const headChanged = head !== w.progress;
  // Written with the time it was written at too (an earlier version reads `updatedAt` only there).
  if (headChanged) put(PROGRESS, sealed(PROGRESS, withUpdatedAt(head, state.updatedAt), sealProgress), true);
  put(UPDATED_AT, String(state.updatedAt), true);
  const keep = commonUndo(w.undo, state.undoStack);
  for (let n = w.undo.length - 1; n >= keep; n--) {
    // An entry rewritten below is replaced by its write, never deleted: the script (and the memory
    // adapter) apply the writes before the deletes, so deleting it too would lose it.
    if (n >= state.undoStack.length) del.push(UNDO + n);
    bytes -= w.undo[n].bytes;
  }
  const pushed: Written['undo'] = [];
  for (let n = keep; n < state.undoStack.length; n++) {
    const entry = state.undoStack[n];
    // An entry without arguments (a step with no undo keeps none) is written as it is, and holds
    // nothing to seal.
    const bare = isEmpty(entry.args);
    const value = bare
      ? `[${quote(entry.step)},{}]`
      : json([entry.step, entry.args], { argumentsOf: entry.step }, entry.step, entry.args);
    const sealEntry = sealRun && !bare;
    pushed.push({ entry, bytes: put(UNDO + n, sealed(UNDO + n, value, sealEntry), false) });
  }
  for (let n = w.trace; n < state.trace.length; n++) {
    if (folded.has(n)) continue;
    const field = TRACE + n;
    // Inline arguments of a sealed run may hold its inputs in clear: sealed like the inputs (the
    // arguments alone, so the entry stays JSON for every reader).
    const seal = sealRun ? (json: string) => sealed(field, json, true) : undefined;
    put(field, traceJson(state.trace[n], refOf, seal), false);
  }
  const attempts: Array<[string, number]> = [];
  for (const step of foldedAttempts) attempts.push([step, 1]);
  const attemptOf = (step: string): void => {
    const count = state.attempts[step];
    if (count === undefined || w.attempts.get(step) === count) return;
    for (const [done] of attempts) if (done === step) return;
    put(ATTEMPTS + step, String(count), true);
    attempts.push([step, count]);
  };
  if (full) {
    for (const step in state.attempts) attemptOf(step);
  } else {
    // An attempt is recorded with its `run` trace entry (RunState.attempts): only the steps this
    // delta's `run` entries name can have a new count, so a checkpoint does not read every step's.
    for (let n = w.trace; n < state.trace.length; n++) {
      const entry = state.trace[n];
      if (entry.type === 'run') attemptOf(entry.step);
    }
  }
  const children = changed(state.runId, state.children, w.children, CHILD, (field, value, child) =>
    put(field, sealed(field, value, sealRun || child.encryptInputs), true),
  );
  const maps = state.maps
    ? changed(state.runId, state.maps, w.maps, MAP, (field, value, record) =>
        put(field, sealed(field, value, sealRun || holdsSealed(record)), true),
      )
    : [];
  // Tags: nothing to compare for a run that has none (the common case).
  const tagsJson = state.tags === undefined ? undefined : JSON.stringify(state.tags);
  const tagsChanged = tagsJson !== w.tags;
  let newTags: Array<[string, string]> | undefined;
  if (tagsChanged) {
    if (tagsJson === undefined) {
      del.push(TAGS);
      bytes -= w.sizes.get(TAGS) ?? 0;
      sizes.push([TAGS, 0]);
    } else {
      put(TAGS, tagsJson, true);
      const old = w.tags === undefined ? {} : (JSON.parse(w.tags) as Record<string, string>);
      newTags = Object.entries(state.tags!).filter(([key, value]) => old[key] !== value);
    }
  }

  if (bytes > maxBytes) throw new ContextTooLargeError(state.runId, bytes, maxBytes);
  // `tags` is set last, not spread in (DD-speed22-11: a property after a spread is V8's slow path).
  const delta: RecordDelta = {
    full,
    set,
    del,
    bytes,
    commit: () => {
      if (tagsChanged) w.tags = tagsJson;
      w.completed = state.completed.length;
      w.undo.length = keep;
      w.undo.push(...pushed);
      w.trace = state.trace.length;
      for (const [object, ref] of stored) w.refs.set(object, ref);
      if (headChanged) w.progress = head;
      if (inputsChanged) w.inputs = state.inputs;
      if (id) w.identity = id;
      for (const [step, count] of attempts) w.attempts.set(step, count);
      for (const [step, json] of children) w.children.set(step, json);
      for (const [step, json] of maps) w.maps.set(step, json);
      for (const [field, size] of sizes) w.sizes.set(field, size);
      w.bytes = bytes;
      return w;
    },
  };
  if (newTags && newTags.length > 0) delta.tags = newTags;
  return delta;
}

/**
 * Read a run from its fields (opening sealed ones with `sealer`); returns the state and what is
 * stored of it.
 * @throws CorruptRecordError for a field that cannot be read, a wrong shape or another schema version.
 * @throws ConfigurationError for a sealed field `sealer` cannot open (no cipher, another key).
 */
export function decodeRecord(
  runId: string,
  fields: Record<string, string>,
  sealer: Sealer = NO_SEALER,
): { state: RunState; written?: Written } {
  const raw = fields[HEADER_FIELD];
  if (raw === undefined) throw new CorruptRecordError(`Stored record of run '${runId}' has no 'state' field.`, runId);
  const head = parse(runId, HEADER_FIELD, raw);
  if (typeof head !== 'object' || head === null || Array.isArray(head)) {
    throw new CorruptRecordError(`Stored record of run '${runId}' is not a JSON object.`, runId);
  }
  // A record written whole (before deltas, or by markBroken): its header is the run. Its first
  // save rewrites it in fields.
  if ('results' in head) return { state: decodeRunState(runId, raw) };

  const written = emptyWritten();
  const size = (field: string, value: string, replaceable: boolean) => {
    const bytes = byteLength(field, value);
    if (replaceable) written.sizes.set(field, bytes);
    written.bytes += bytes;
    return bytes;
  };
  // The header's own object becomes the run, filled in by assignment: on Node 20 a property added
  // after a spread (`{ ...head, inputs: {} }`) takes V8's slow path, about 16 µs per decode here for
  // these seven (DD-speed22-11). The same result: the header's fields, then these (which win).
  const assembled = head as Record<string, unknown>;
  assembled.inputs = {};
  assembled.results = {};
  assembled.completed = [];
  assembled.undoStack = [];
  assembled.attempts = {};
  assembled.trace = [];
  assembled.children = {};
  const open = (field: string, value: string): string => sealer.open(value, { runId, field });
  const results = assembled.results as Record<string, unknown>;
  const order: Array<[number, string]> = [];
  const undo: Array<[number, string, Record<string, unknown>, number]> = [];
  const trace: Array<[number, unknown]> = [];
  const foldedAttempts: string[] = [];
  const sizes = new Map<string, number>();
  let updatedAt: number | undefined;
  const maps: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(fields)) {
    if (field === HEADER_FIELD) {
      size(field, value, true);
    } else if (field === PROGRESS) {
      const json = open(field, value);
      const parsed = parse(runId, field, json) as Record<string, unknown>;
      Object.assign(assembled, parsed);
      // What the next save compares its progress with: the same JSON without the time.
      const { updatedAt: _time, ...rest } = parsed;
      written.progress = JSON.stringify(rest);
      size(field, value, true);
    } else if (field === UPDATED_AT) {
      updatedAt = Number(value);
      size(field, value, true);
    } else if (field === INPUTS) {
      assembled.inputs = parse(runId, field, open(field, value));
      size(field, value, true);
    } else if (field.startsWith(RESULT)) {
      const step = field.slice(RESULT.length);
      const [seq, ...rest] = parse(runId, field, value) as [number, unknown?, unknown?];
      if (rest.length > 0) results[step] = rest[0];
      if (rest.length > 1) {
        // Trace entries and an attempt count written with the result (its size is measured when needed).
        if (unfoldResult(step, rest[1], trace)) foldedAttempts.push(step);
      } else if (typeof rest[0] === 'object' && rest[0] !== null) {
        // The size of the result's JSON, for a trace entry that refers to it (`[seq,` and `]` off).
        sizes.set(field, value.length - String(seq).length - 3);
      }
      order.push([seq, step]);
      size(field, value, false);
    } else if (field.startsWith(UNDO)) {
      const [step, args] = parse(runId, field, open(field, value)) as [string, Record<string, unknown>];
      undo.push([Number(field.slice(UNDO.length)), step, args, size(field, value, false)]);
    } else if (field.startsWith(TRACE)) {
      const entry = traceEntryOf(parse(runId, field, open(field, value))) as { arguments?: unknown };
      // Arguments of a sealed run are sealed inside the entry.
      if (typeof entry.arguments === 'string' && entry.arguments.startsWith('~'))
        entry.arguments = parse(runId, field, open(field, entry.arguments));
      trace.push([Number(field.slice(TRACE.length)), entry]);
      size(field, value, false);
    } else if (field.startsWith(ATTEMPTS)) {
      const step = field.slice(ATTEMPTS.length);
      (assembled.attempts as Record<string, number>)[step] = Number(value);
      written.attempts.set(step, Number(value));
      size(field, value, true);
    } else if (field.startsWith(CHILD)) {
      const step = field.slice(CHILD.length);
      const json = open(field, value);
      (assembled.children as Record<string, unknown>)[step] = parse(runId, field, json);
      written.children.set(step, json);
      size(field, value, true);
    } else if (field === TAGS) {
      assembled.tags = parse(runId, field, value);
      written.tags = value;
      size(field, value, true);
    } else if (field.startsWith(MAP)) {
      const step = field.slice(MAP.length);
      const json = open(field, value);
      maps[step] = parse(runId, field, json);
      written.maps.set(step, json);
      size(field, value, true);
    }
  }
  // An attempt count written with a result, unless a field of its own says otherwise.
  const attemptsRead = assembled.attempts as Record<string, number>;
  for (const step of foldedAttempts) {
    if (attemptsRead[step] !== undefined) continue;
    attemptsRead[step] = 1;
    written.attempts.set(step, 1);
  }
  order.sort((a, b) => a[0] - b[0]);
  assembled.completed = order.map(([, step]) => step);
  undo.sort((a, b) => a[0] - b[0]);
  assembled.undoStack = undo.map(([, step, args]) => ({ step, args, result: results[step] }));
  // A record written before `at` keeps the time in `head`.
  if (updatedAt !== undefined) assembled.updatedAt = updatedAt;
  trace.sort((a, b) => a[0] - b[0]);
  const inputs = assembled.inputs as Record<string, unknown>;
  assembled.trace = trace.map(([, entry]) => withReferencedArguments(entry, results, inputs, sizes));
  if (written.maps.size > 0) assembled.maps = maps;

  // The shape checks (run id, status, schema version, collections) of a whole record.
  const state = checkRunState(runId, assembled);
  written.completed = state.completed.length;
  written.undo = state.undoStack.map((entry, n) => ({ entry, bytes: undo[n][3] }));
  written.trace = state.trace.length;
  written.inputs = state.inputs;
  written.identity = identity(state);
  for (const name in state.inputs) {
    const value = state.inputs[name];
    if (typeof value === 'object' && value !== null) written.refs.set(value, INPUT_REF + name);
  }
  for (const step of state.completed) {
    const value = state.results[step];
    if (typeof value === 'object' && value !== null) written.refs.set(value, RESULT + step);
  }
  return { state, written };
}

/** Whether `state` is `written` plus changes a delta can express (collections only grew, the undo stack at its top). */
function diffable(state: RunState, written: Written): boolean {
  return (
    state.completed.length >= written.completed &&
    state.trace.length >= written.trace &&
    Object.keys(state.children).length >= written.children.size &&
    Object.keys(state.maps ?? {}).length >= written.maps.size
  );
}

/** How many entries at the bottom of the stored undo stack are still the state's. */
function commonUndo(stored: Written['undo'], current: readonly UndoEntry[]): number {
  // The stack changes at its top (a push, a pop) or is replaced by another state's: when the stored
  // top entry is still in its place, so is every entry below it, and the stack is not read through.
  const top = stored.length - 1;
  if (top >= 0 && top < current.length && stored[top].entry === current[top]) return stored.length;
  let n = 0;
  while (n < stored.length && n < current.length && stored[n].entry === current[n]) n++;
  return n;
}

/**
 * The run's progress as JSON. A failure or halt carries what the step was given and said; when that
 * cannot be written it is kept as `'[not storable]'` so that the failure itself is stored. A value
 * that cannot be written is the run's to fail on.
 */
function progressJson(state: RunState, json: (value: unknown, what: string) => string): string {
  // The common checkpoint of a run under way: nothing but its status (what JSON.stringify writes).
  if (onlyStatus(state)) return statusOnly(state.status);
  const head = progress(state);
  let out: string | undefined;
  try {
    out = JSON.stringify(head);
  } catch {
    out = undefined;
  }
  // A failure shows the inputs and the step's arguments for people (the values themselves are in
  // the record's inputs and undo entries): bounded like the trace's, never failing the run.
  if (out !== undefined && (out.length <= TRACE_ENTRY_LIMIT || !head.failure)) return out;
  // Copies of what may have been read from a record (`copyOwn` keeps a `__proto__` key its own),
  // then our own fields assigned.
  const failure =
    head.failure &&
    Object.assign(copyOwn({}, head.failure), {
      inputs: bounded(safe(head.failure.inputs)) as Record<string, unknown>,
      stepArguments: bounded(safe(head.failure.stepArguments)) as Record<string, unknown> | undefined,
    });
  const halt = head.halt && Object.assign(copyOwn({}, head.halt), { details: safe(head.halt.details) });
  return json(Object.assign(copyOwn({}, head), { failure, halt }), "the run's value");
}

/** `{"status":<status>}` for each status, one string each (compared with the stored one by identity first). */
const STATUS_ONLY = new Map<string, string>();

function statusOnly(status: string): string {
  let json = STATUS_ONLY.get(status);
  if (json === undefined) {
    json = `{"status":${JSON.stringify(status)}}`;
    // Statuses are a handful; the bound is for a corrupt state's odd one.
    if (STATUS_ONLY.size < 64) STATUS_ONLY.set(status, json);
  }
  return json;
}

/**
 * Whether the run's progress ({@link progress}) holds its status and nothing else: each field read
 * by name (a keyed read of each listed field cost ~0.6 µs per checkpoint). {@link OTHER_PROGRESS}
 * lists them for the compiler, and the codec's tests check that each one listed there is read here.
 */
function onlyStatus(s: RunState): boolean {
  return (
    s.value === undefined &&
    s.failure === undefined &&
    s.halt === undefined &&
    s.cancellation === undefined &&
    s.rollback === undefined &&
    s.handoff === undefined &&
    s.interrupts === undefined &&
    s.asyncUnits === undefined &&
    s.coordination === undefined &&
    s.stepContentions === undefined &&
    s.asyncParent === undefined &&
    s.retryAt === undefined &&
    s.flow === undefined &&
    s.finishedAt === undefined
  );
}

/**
 * Every field of the progress but the status (a field added to it does not compile until listed);
 * exported for the codec's tests, which check that {@link onlyStatus} reads each.
 */
export const OTHER_PROGRESS: { readonly [K in Exclude<keyof ReturnType<typeof progress>, 'status'>]: true } = {
  value: true,
  failure: true,
  halt: true,
  cancellation: true,
  rollback: true,
  handoff: true,
  interrupts: true,
  asyncUnits: true,
  coordination: true,
  stepContentions: true,
  asyncParent: true,
  retryAt: true,
  flow: true,
  finishedAt: true,
};

/** Arguments with each large one replaced by its kind and size. */
function bounded(args: unknown): unknown {
  if (typeof args !== 'object' || args === null) return args;
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(args)) {
    const size = JSON.stringify(value)?.length ?? 0;
    out[name] = size <= TRACE_ARGUMENT_LIMIT ? value : summary(value, size);
  }
  return out;
}

/** `value` when it can be written as JSON, else `'[not storable]'`. */
function safe(value: unknown): unknown {
  try {
    JSON.stringify(value);
    return value;
  } catch {
    return '[not storable]';
  }
}

/** Trace entries longer than this (UTF-16 units of JSON) store their large arguments as a summary. */
const TRACE_ENTRY_LIMIT = 2_048;
/** An argument longer than this in a summarized entry is replaced by its kind and size. */
const TRACE_ARGUMENT_LIMIT = 256;

/**
 * A trace entry as JSON. The trace is for people, so it is bounded and never fails the run: an
 * argument that is a stored result or input (the same object) is written as a reference to it
 * (`refs: { prev: 'r:reserve' }`), not copied; an entry whose other arguments are large keeps each
 * large one as a summary (`'[object, 10485760 chars]'`), and one whose arguments cannot be written
 * keeps its place with `arguments: '[not storable]'`. The values themselves are where they are
 * needed: the inputs, the results, the undo entries.
 */
function traceJson(
  entry: RunState['trace'][number],
  refOf: (value: object) => string | undefined,
  seal?: (json: string) => string,
): string {
  let json: string;
  try {
    json = compactTraceJson(entry, refOf, seal);
  } catch {
    return compactTraceJson(
      Object.assign({}, entry, { arguments: '[not storable]' as never, detail: entry.detail }),
      refOf,
    );
  }
  if (json.length <= TRACE_ENTRY_LIMIT || !entry.arguments) return json;
  return compactTraceJson(
    Object.assign({}, entry, { arguments: bounded(entry.arguments) as Record<string, unknown> }),
    refOf,
    seal,
  );
}

/**
 * A trace entry as a JSON array, `[type, step, at]` or `[type, step, at, {the other fields}]`: the
 * three fields every entry has without their names (read back by {@link traceEntryOf}); an
 * argument that is a stored result or input is left out of `arguments` and named in `refs`.
 * Written piece by piece (what `JSON.stringify` of the array would write), so no copy of the
 * entry or its arguments is made.
 */
function compactTraceJson(
  entry: TraceEntry,
  refOf: (value: object) => string | undefined,
  seal?: (json: string) => string,
): string {
  const rest = traceRestJson(entry, refOf, seal);
  return `[${quote(entry.type)},${quote(entry.step)},${entry.at}${rest === '' ? '' : `,{${rest}}`}]`;
}

/**
 * The fields of a trace entry other than `type`, `step` and `at`, as the inside of a JSON object
 * (`'"attempt":1,"arguments":{...},"refs":{...}'`, or `''` when it has none); see {@link compactTraceJson}.
 */
function traceRestJson(
  entry: TraceEntry,
  refOf: (value: object) => string | undefined,
  seal?: (json: string) => string,
  folded = false,
): string {
  let rest = '';
  let refs = '';
  for (const key in entry) {
    // A folded `run` entry's attempt is 1 (see foldedWithResult).
    if (key === 'type' || key === 'step' || key === 'at' || (folded && key === 'attempt')) continue;
    const value = (entry as unknown as Record<string, unknown>)[key];
    if (key === 'arguments' && typeof value === 'object' && value !== null) {
      let args = '';
      for (const name in value) {
        const arg = (value as Record<string, unknown>)[name];
        const ref = typeof arg === 'object' && arg !== null ? refOf(arg) : undefined;
        if (ref !== undefined) {
          refs += `${refs === '' ? '' : ','}${quote(name)}:${quote(ref)}`;
          continue;
        }
        const json = JSON.stringify(arg);
        if (json !== undefined) args += `${args === '' ? '' : ','}${quote(name)}:${json}`;
      }
      const json = `{${args}}`;
      rest += `${rest === '' ? '' : ','}"arguments":${seal ? JSON.stringify(seal(json)) : json}`;
      continue;
    }
    const json = JSON.stringify(value);
    if (json !== undefined) rest += `${rest === '' ? '' : ','}${quote(key)}:${json}`;
  }
  if (refs !== '') rest += `${rest === '' ? '' : ','}"refs":{${refs}}`;
  return rest;
}

/**
 * What a step's result field carries besides its result, when the step's first `run` trace entry,
 * its `complete` entry and an attempt count of 1 are written with it instead of in fields of their
 * own (DD-speed22-8): `,[attempts, runPosition, runAt, {runRest}, completePosition, completeTime]`
 * (positions -1 and times 0 for an entry not folded; `runRest` the `run` entry's other fields but
 * its attempt, which is 1; `completeTime` the `complete` entry's time after `runAt` when the `run`
 * entry is folded too, else its own time), or `''` when nothing is folded. Only entries of this
 * delta are folded (`from` on), only plain ones (a first attempt's `run` with its arguments, a bare
 * `complete`), only in a run whose arguments are not sealed; `folded` collects their positions.
 */
function foldedWithResult(
  state: RunState,
  step: string,
  from: number,
  attemptsWritten: number | undefined,
  refOf: (value: object) => string | undefined,
  folded: Set<number>,
): string {
  let runAt = -1;
  let runPosition = -1;
  let runRest = '';
  let completePosition = -1;
  let completeAt = 0;
  const trace = state.trace;
  for (let n = from; n < trace.length; n++) {
    const entry = trace[n];
    if (entry.step !== step) continue;
    if (entry.type === 'run' && runPosition < 0 && entry.attempt === 1 && plainEntry(entry, RUN_KEYS)) {
      let rest: string;
      try {
        rest = traceRestJson(entry, refOf, undefined, true);
      } catch {
        continue; // written on its own, with `'[not storable]'` in place of its arguments
      }
      // A large entry is written on its own, as a summary (see traceJson).
      if (rest.length + step.length + 32 > TRACE_ENTRY_LIMIT) continue;
      runPosition = n;
      runAt = entry.at;
      runRest = rest;
    } else if (entry.type === 'complete' && completePosition < 0 && plainEntry(entry, COMPLETE_KEYS)) {
      completePosition = n;
      completeAt = entry.at;
    }
  }
  const attempts = state.attempts[step] === 1 && attemptsWritten !== 1 ? 1 : 0;
  if (attempts === 0 && runPosition < 0 && completePosition < 0) return '';
  if (runPosition >= 0) folded.add(runPosition);
  if (completePosition >= 0) folded.add(completePosition);
  // The `complete` entry's time after the `run` entry's (when that is folded too; else its own).
  const completeTime = completePosition < 0 ? 0 : runPosition < 0 ? completeAt : completeAt - runAt;
  return `,[${attempts},${runPosition},${runPosition < 0 ? 0 : runAt},${runPosition < 0 ? 0 : `{${runRest}}`},${completePosition},${completeTime}]`;
}

const RUN_KEYS = new Set(['type', 'step', 'at', 'attempt', 'arguments']);
const COMPLETE_KEYS = new Set(['type', 'step', 'at']);

/** Whether `entry` has no field outside `keys` (other than ones left undefined). */
function plainEntry(entry: TraceEntry, keys: ReadonlySet<string>): boolean {
  for (const key in entry) {
    if (!keys.has(key) && (entry as unknown as Record<string, unknown>)[key] !== undefined) return false;
  }
  return typeof entry.at === 'number';
}

/**
 * The trace entries and attempt count a result field carries (see {@link foldedWithResult}): its
 * entries are pushed to `trace` at their positions; returns whether it holds an attempt count of 1.
 * Anything else is ignored (a field written before folding has no third element).
 */
export function unfoldResult(step: string, extra: unknown, trace: Array<[number, unknown]>): boolean {
  if (!Array.isArray(extra) || extra.length < 6) return false;
  const [attempts, runPosition, runAt, runRest, completePosition, completeTime] = extra as unknown[];
  const runFolded = typeof runPosition === 'number' && runPosition >= 0;
  if (runFolded)
    trace.push([
      runPosition,
      {
        type: 'run',
        step,
        at: runAt,
        attempt: 1,
        ...(typeof runRest === 'object' && runRest !== null ? runRest : {}),
      },
    ]);
  if (typeof completePosition === 'number' && completePosition >= 0)
    trace.push([
      completePosition,
      { type: 'complete', step, at: runFolded ? (runAt as number) + (completeTime as number) : completeTime },
    ]);
  return attempts === 1;
}

/** A stored trace entry as an object: an array (`[type, step, at, rest?]`) or, written before it, an object. */
export function traceEntryOf(stored: unknown): unknown {
  if (!Array.isArray(stored)) return stored;
  const [type, step, at, rest] = stored as [unknown, unknown, unknown, Record<string, unknown> | undefined];
  return { type, step, at, ...rest };
}

/** A trace entry as stored: arguments that are stored results or inputs by reference (`r:<step>`, `i:<name>`). */
interface StoredTraceEntry extends TraceEntry {
  refs?: Record<string, string>;
}

/**
 * A stored trace entry with its referenced arguments put back (the same objects as the run's
 * results and inputs; a large one, when the entry would be large, as its summary).
 */
export function withReferencedArguments(
  stored: unknown,
  results: Record<string, unknown>,
  inputs: Record<string, unknown>,
  sizes: Map<string, number>,
): unknown {
  const entry = stored as StoredTraceEntry;
  if (typeof entry !== 'object' || entry === null || entry.refs === undefined) return stored;
  const { refs, ...rest } = entry;
  // Copied by assignment, not spread: see DD-speed22-11.
  const args = copyOwn<Record<string, unknown>>({}, rest.arguments as Record<string, unknown> | undefined);
  let total = JSON.stringify(args).length;
  for (const name in refs) {
    const ref = refs[name];
    const value = ref.startsWith(RESULT) ? results[ref.slice(RESULT.length)] : inputs[ref.slice(INPUT_REF.length)];
    args[name] = value;
    let size = sizes.get(ref);
    if (size === undefined) sizes.set(ref, (size = JSON.stringify(value)?.length ?? 0));
    total += size;
  }
  if (total > TRACE_ENTRY_LIMIT) {
    for (const name in refs) {
      const size = sizes.get(refs[name]) ?? 0;
      if (size > TRACE_ARGUMENT_LIMIT) args[name] = summary(args[name], size);
    }
  }
  (rest as Record<string, unknown>).arguments = args;
  return rest;
}

function summary(value: unknown, chars: number): string {
  return `[${Array.isArray(value) ? 'array' : typeof value}, ${chars} chars]`;
}

/** Whether an inline map's record holds the state of an element marked `encryptInputs`. */
function holdsSealed(record: MapRecord): boolean {
  for (const index in record.elements) if (record.elements[index].encryptInputs) return true;
  return false;
}

/** The entries of `current` whose JSON differs from what is `stored` (their JSON), written with `put`. */
function changed<T>(
  runId: string,
  current: Record<string, T>,
  stored: ReadonlyMap<string, string>,
  prefix: string,
  put: (field: string, json: string, value: T) => void,
): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const key in current) {
    let json: string;
    try {
      json = JSON.stringify(current[key]);
    } catch (error) {
      throw new UnstorableValueError(runId, `the record of step '${key}'`, key, error);
    }
    if (stored.get(key) === json) continue;
    put(prefix + key, json, current[key]);
    out.push([key, json]);
  }
  return out;
}

/** What never changes in a run once it is created. */
type Identity = Pick<
  RunState,
  | 'schemaVersion'
  | 'runId'
  | 'reactorName'
  | 'definitionHash'
  | 'reactorVersion'
  | 'redactedInputs'
  | 'encryptInputs'
  | 'retriedFrom'
  | 'retryCount'
  | 'inputsHash'
  | 'createdAt'
>;

function identity(state: RunState): Identity {
  return {
    schemaVersion: state.schemaVersion,
    runId: state.runId,
    reactorName: state.reactorName,
    definitionHash: state.definitionHash,
    reactorVersion: state.reactorVersion,
    redactedInputs: state.redactedInputs,
    encryptInputs: state.encryptInputs,
    retriedFrom: state.retriedFrom,
    retryCount: state.retryCount,
    inputsHash: state.inputsHash,
    createdAt: state.createdAt,
  };
}

function sameIdentity(stored: Identity | undefined, state: RunState): boolean {
  return (
    stored !== undefined &&
    stored.schemaVersion === state.schemaVersion &&
    stored.runId === state.runId &&
    stored.reactorName === state.reactorName &&
    stored.definitionHash === state.definitionHash &&
    stored.reactorVersion === state.reactorVersion &&
    stored.redactedInputs === state.redactedInputs &&
    stored.encryptInputs === state.encryptInputs &&
    stored.retriedFrom === state.retriedFrom &&
    stored.retryCount === state.retryCount &&
    stored.inputsHash === state.inputsHash &&
    stored.createdAt === state.createdAt
  );
}

/**
 * The run without its identity and the collections stored in fields of their own. Every other
 * field of RunState is listed, so a field added to RunState does not compile until it is placed.
 */
function progress(state: RunState): Omit<RunState, Collection | keyof Identity | 'updatedAt'> {
  return {
    status: state.status,
    value: state.value,
    failure: state.failure,
    halt: state.halt,
    cancellation: state.cancellation,
    rollback: state.rollback,
    handoff: state.handoff,
    interrupts: state.interrupts,
    asyncUnits: state.asyncUnits,
    coordination: state.coordination,
    stepContentions: state.stepContentions,
    asyncParent: state.asyncParent,
    retryAt: state.retryAt,
    flow: state.flow,
    finishedAt: state.finishedAt,
  } satisfies Record<keyof Omit<RunState, Collection | keyof Identity | 'updatedAt'>, unknown>;
}

function emptyWritten(): Written {
  return {
    completed: 0,
    undo: [],
    trace: 0,
    inputs: undefined,
    attempts: new Map(),
    children: new Map(),
    maps: new Map(),
    sizes: new Map(),
    bytes: 0,
    refs: new Map(),
  };
}

/** What a value to store is, for an error: as given, or the step whose result or undo arguments it is. */
type ValueName = string | { resultOf: string } | { argumentsOf: string };

function named(what: ValueName): string {
  if (typeof what === 'string') return what;
  return 'resultOf' in what ? `the result of step '${what.resultOf}'` : `the arguments of step '${what.argumentsOf}'`;
}

/** Whether `value` is a plain object without an own enumerable property (JSON writes it `{}`, as it is). */
function isEmpty(value: object): boolean {
  // (A record written by hand may hold anything where the arguments are: that goes through JSON.)
  if (typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype) return false;
  for (const key in value) if (Object.prototype.hasOwnProperty.call(value, key)) return false;
  return true;
}

/** Short strings' JSON (step, argument and field names, refs, statuses: the same few on every checkpoint). */
const QUOTED = new Map<string, string>();
/** Entries {@link QUOTED} holds at most (emptied when full: names are few, the bound is for odd ones). */
const QUOTED_MAX = 4_096;

/** `JSON.stringify(s)`, from a cache for a string of up to 64 characters. */
function quote(s: string): string {
  let json = QUOTED.get(s);
  if (json !== undefined) return json;
  json = JSON.stringify(s);
  if (s.length <= 64) {
    if (QUOTED.size >= QUOTED_MAX) QUOTED.clear();
    QUOTED.set(s, json);
  }
  return json;
}

function byteLength(field: string, value: string): number {
  return Buffer.byteLength(field) + Buffer.byteLength(value);
}

function parse(runId: string, field: string, value: string): unknown {
  try {
    return JSON.parse(value);
  } catch (err) {
    throw new CorruptRecordError(
      `Stored record of run '${runId}' is not valid JSON in field '${field}': ${(err as Error).message}`,
      runId,
    );
  }
}

/** A progress JSON object (`{...}`) with `updatedAt` added last. */
function withUpdatedAt(progressJson: string, updatedAt: number): string {
  return `${progressJson.slice(0, -1)}${progressJson.length > 2 ? ',' : ''}"updatedAt":${updatedAt}}`;
}

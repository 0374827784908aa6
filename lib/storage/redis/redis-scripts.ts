import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Cluster, Redis } from 'ioredis';
import { InternalError } from '../../core';

/** A connection the Redis adapters accept: a standalone client or a cluster client. */
export type RedisConnection = Redis | Cluster;

/**
 * The Lua scripts of `lib/scripts/`, by file name. The number before `.lua` is the key count; `n`
 * marks a script whose key count varies by call (`runScript` sends it).
 * Each is registered on a client as the command `nestReactor_<name>`.
 *
 * A script may inline a shared fragment of `lib/scripts/includes/` with a line
 * `--- @include "<name>"` (fragments define local functions and never name `KEYS`).
 */
export const SCRIPT_FILES = {
  checkpoint: 'checkpoint-n.lua',
  markBroken: 'markBroken-2.lua',
  forgetIfMissing: 'forgetIfMissing-2.lua',
  extendLease: 'extendLease-1.lua',
  extendRunLease: 'extendRunLease-2.lua',
  releaseLease: 'releaseLease-1.lua',
  acquireAndLoad: 'acquireAndLoad-2.lua',
  requestCancel: 'requestCancel-1.lua',
  claimIdempotencyKey: 'claimIdempotencyKey-1.lua',
  releaseIdempotencyKey: 'releaseIdempotencyKey-1.lua',
  mapCreate: 'mapCreate-7.lua',
  mapPutInputs: 'mapPutInputs-1.lua',
  mapReserve: 'mapReserve-6.lua',
  mapClaimElements: 'mapClaimElements-n.lua',
  mapPutElementState: 'mapPutElementState-7.lua',
  mapSettleElements: 'mapSettleElements-n.lua',
  mapRecords: 'mapRecords-2.lua',
  mapProgress: 'mapProgress-2.lua',
  mapClaimSignal: 'mapClaimSignal-6.lua',
  mapStalled: 'mapStalled-2.lua',
  mapStartRollback: 'mapStartRollback-10.lua',
  mapSettleRollback: 'mapSettleRollback-10.lua',
  mapRollbackProgress: 'mapRollbackProgress-2.lua',
  mapStalledRollback: 'mapStalledRollback-3.lua',
  interruptClaim: 'interruptClaim-3.lua',
  interruptReject: 'interruptReject-3.lua',
  interruptClaims: 'interruptClaims-2.lua',
  bindCorrelationId: 'bindCorrelationId-2.lua',
  mailResume: 'mailResume-2.lua',
  lockAcquire: 'lockAcquire-2.lua',
  lockExtend: 'lockExtend-2.lua',
  lockRelease: 'lockRelease-1.lua',
  semaphoreAcquire: 'semaphoreAcquire-1.lua',
  semaphoreExtend: 'semaphoreExtend-1.lua',
  semaphoreRelease: 'semaphoreRelease-1.lua',
  rateConsume: 'rateConsume-n.lua',
  orderAssign: 'orderAssign-5.lua',
  orderTurn: 'orderTurn-5.lua',
  orderHeartbeat: 'orderHeartbeat-2.lua',
  orderAdvance: 'orderAdvance-5.lua',
  flowEnter: 'flowEnter-3.lua',
  flowLeave: 'flowLeave-3.lua',
  flowInspect: 'flowInspect-2.lua',
  flowPrune: 'flowPrune-1.lua',
  flowReserve: 'flowReserve-1.lua',
  flowGather: 'flowGather-4.lua',
  flowTake: 'flowTake-4.lua',
  flowTouch: 'flowTouch-1.lua',
} as const;

/** Name of a bundled script. */
export type ScriptName = keyof typeof SCRIPT_FILES;

const COMMAND_PREFIX = 'nestReactor_';
const INCLUDE = /^--- @include "([\w.-]+)"[ \t]*$/gm;
const MARKER = SCRIPT_FILES.checkpoint;

let scriptsDir: string | undefined;
const sources = new Map<ScriptName, { lua: string; numberOfKeys: number | undefined }>();
const defined = new WeakSet<object>();

/**
 * The folder holding the `.lua` files. From source (`lib/storage/redis/*.ts`, ts-jest) it is
 * `lib/scripts`; from the build (`dist/lib/storage/redis/*.js`) it is `dist/lib/scripts`, which the
 * build must copy there. Walks up from this file and takes the first `scripts/` (or `lib/scripts/`)
 * holding the scripts, so either layout works.
 */
export function resolveScriptsDir(): string {
  if (scriptsDir) return scriptsDir;
  const tried: string[] = [];
  for (let dir = __dirname; ; dir = dirname(dir)) {
    for (const candidate of [join(dir, 'scripts'), join(dir, 'lib', 'scripts')]) {
      tried.push(candidate);
      if (existsSync(join(candidate, MARKER))) return (scriptsDir = candidate);
    }
    if (dirname(dir) === dir) break;
  }
  throw new InternalError(
    `nest-reactor could not find its Lua scripts (${MARKER}); looked in ${tried.slice(0, 4).join(', ')}, ... ` +
      'A build must copy lib/scripts/*.lua to dist/lib/scripts/.',
  );
}

function source(name: ScriptName): { lua: string; numberOfKeys: number | undefined } {
  let script = sources.get(name);
  if (!script) {
    const file = SCRIPT_FILES[name];
    const keys = /-(\d+|n)\.lua$/.exec(file);
    if (!keys) throw new InternalError(`Script file name '${file}' does not end in -<numberOfKeys>.lua or -n.lua.`);
    const dir = resolveScriptsDir();
    const lua = readFileSync(join(dir, file), 'utf8').replace(INCLUDE, (_, fragment: string) =>
      readFileSync(join(dir, 'includes', `${fragment}.lua`), 'utf8'),
    );
    script = { lua, numberOfKeys: keys[1] === 'n' ? undefined : Number(keys[1]) };
    sources.set(name, script);
  }
  return script;
}

/**
 * Register every bundled script on `redis` with `defineCommand`, once per client. ioredis then
 * sends `EVAL` the first time a script runs on a connection and `EVALSHA` after that (and
 * re-sends `EVAL` after a `NOSCRIPT`, e.g. following `SCRIPT FLUSH`).
 */
export function defineScripts(redis: RedisConnection): void {
  if (defined.has(redis)) return;
  for (const name of Object.keys(SCRIPT_FILES) as ScriptName[]) {
    const { lua, numberOfKeys } = source(name);
    redis.defineCommand(COMMAND_PREFIX + name, numberOfKeys === undefined ? { lua } : { lua, numberOfKeys });
  }
  defined.add(redis);
}

type ScriptCommand = (...keysAndArgs: Array<string | number>) => Promise<unknown>;

/**
 * Run script `name` with `keys` and `args` in one command. Scripts must have been defined on
 * `redis` ({@link defineScripts}); the result is returned as Redis sent it.
 */
export async function runScript(
  redis: RedisConnection,
  name: ScriptName,
  keys: readonly string[],
  args: ReadonlyArray<string | number>,
): Promise<unknown> {
  const { numberOfKeys } = source(name);
  if (numberOfKeys !== undefined && keys.length !== numberOfKeys) {
    throw new InternalError(`Script '${name}' takes ${numberOfKeys} keys, got ${keys.length}.`);
  }
  const command = (redis as unknown as Record<string, ScriptCommand | undefined>)[COMMAND_PREFIX + name];
  if (!command)
    throw new InternalError(`Script '${name}' is not defined on this Redis client; call defineScripts first.`);
  return numberOfKeys === undefined
    ? command.call(redis, keys.length, ...keys, ...args)
    : command.call(redis, ...keys, ...args);
}

/** Run script `name` and require an integer reply. */
export async function runIntegerScript(
  redis: RedisConnection,
  name: ScriptName,
  keys: readonly string[],
  args: ReadonlyArray<string | number>,
): Promise<number> {
  const reply = await runScript(redis, name, keys, args);
  if (typeof reply !== 'number')
    throw new InternalError(`Script '${name}' returned ${JSON.stringify(reply)}, expected an integer.`);
  return reply;
}

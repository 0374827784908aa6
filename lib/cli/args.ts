/** The command line of `npx nest-reactor`: parsed and checked, or a {@link UsageError} (exit 2). */
import { parseArgs } from 'node:util';

/** A command line the CLI cannot run: printed with the usage, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export const COMMANDS = ['list', 'show', 'retry', 'cancel', 'undo', 'continue', 'check'] as const;
export type CommandName = (typeof COMMANDS)[number];

/** Every option of every command (node:util parseArgs' shape). */
const OPTIONS = {
  app: { type: 'string' },
  module: { type: 'string' },
  json: { type: 'boolean' },
  verbose: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  reactor: { type: 'string', multiple: true },
  status: { type: 'string' },
  since: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  new: { type: 'boolean' },
  wait: { type: 'boolean' },
  'no-wait': { type: 'boolean' },
  timeout: { type: 'string' },
  reason: { type: 'string' },
  payload: { type: 'string' },
  'payload-file': { type: 'string' },
  inline: { type: 'boolean' },
} as const;

type OptionName = keyof typeof OPTIONS;

/** The options each command takes, beside the global ones; and its positional arguments. */
const COMMAND_SHAPES: Record<CommandName, { options: OptionName[]; positionals: string[] }> = {
  list: { options: ['reactor', 'status', 'since', 'limit', 'cursor'], positionals: [] },
  show: { options: [], positionals: ['runId'] },
  retry: { options: ['new', 'wait', 'timeout'], positionals: ['runId'] },
  cancel: { options: ['reason', 'wait', 'timeout'], positionals: ['runId'] },
  undo: { options: ['no-wait', 'timeout'], positionals: ['runId'] },
  continue: { options: ['payload', 'payload-file', 'wait', 'timeout', 'inline'], positionals: ['runId', 'step'] },
  check: { options: ['limit'], positionals: [] },
};
const GLOBAL_OPTIONS: OptionName[] = ['app', 'module', 'json', 'verbose', 'help'];

/** A parsed command line. */
export interface CliArgs {
  command?: CommandName;
  /** The positional arguments after the command, by name (`runId`, `step`). */
  args: Record<string, string>;
  app?: string;
  module?: string;
  json: boolean;
  verbose: boolean;
  help: boolean;
  reactors: string[];
  status?: string;
  since?: number;
  limit?: number;
  cursor?: string;
  new: boolean;
  wait: boolean;
  noWait: boolean;
  timeoutMs?: number;
  reason?: string;
  payload?: string;
  payloadFile?: string;
  inline: boolean;
}

/**
 * Parse `argv` (without node and the script). `env` supplies `--app` and `--module` when they are
 * not given (`NEST_REACTOR_APP`, `NEST_REACTOR_MODULE`). `now` dates a relative `--since`.
 * @throws UsageError
 */
export function parseCliArgs(argv: readonly string[], env: NodeJS.ProcessEnv, now: number): CliArgs {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true; strict: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  const [first, ...rest] = positionals;
  const help = values.help === true;
  if (first === undefined || first === 'help') {
    if (help || first === 'help') return emptyArgs({ help: true });
    throw new UsageError('a command is required.');
  }
  if (!(COMMANDS as readonly string[]).includes(first)) {
    throw new UsageError(`unknown command '${first}' (the commands: ${COMMANDS.join(', ')}).`);
  }
  const command = first as CommandName;
  const shape = COMMAND_SHAPES[command];
  for (const name of Object.keys(values) as OptionName[]) {
    if (!GLOBAL_OPTIONS.includes(name) && !shape.options.includes(name)) {
      throw new UsageError(`'${command}' takes no --${name}.`);
    }
  }
  if (help) return emptyArgs({ help: true, command });
  if (rest.length !== shape.positionals.length) {
    const expected = shape.positionals.map((p) => `<${p}>`).join(' ') || 'no argument';
    throw new UsageError(`'${command}' takes ${expected} (got ${rest.length ? rest.join(' ') : 'none'}).`);
  }
  const args = Object.fromEntries(shape.positionals.map((name, i) => [name, rest[i]]));
  if (values.payload !== undefined && values['payload-file'] !== undefined) {
    throw new UsageError('give --payload or --payload-file, not both.');
  }
  if (values.wait && values.inline) throw new UsageError('--inline goes on in this call: it takes no --wait.');
  const app = values.app ?? (env.NEST_REACTOR_APP || undefined);
  if (app === undefined) {
    throw new UsageError(
      'the app is required: --app <the compiled file exporting your root module> (or NEST_REACTOR_APP), e.g. --app dist/app.module.js.',
    );
  }
  return {
    ...emptyArgs({ command }),
    args,
    app,
    module: values.module ?? (env.NEST_REACTOR_MODULE || undefined),
    json: values.json === true,
    verbose: values.verbose === true,
    reactors: values.reactor ?? [],
    status: values.status,
    since: values.since === undefined ? undefined : parseSince(values.since, now),
    limit: values.limit === undefined ? undefined : parseInteger('--limit', values.limit),
    cursor: values.cursor,
    new: values.new === true,
    wait: values.wait === true,
    noWait: values['no-wait'] === true,
    timeoutMs: values.timeout === undefined ? undefined : parseDuration('--timeout', values.timeout),
    reason: values.reason,
    payload: values.payload,
    payloadFile: values['payload-file'],
    inline: values.inline === true,
  };
}

function emptyArgs(over: Partial<CliArgs>): CliArgs {
  return {
    args: {},
    json: false,
    verbose: false,
    help: false,
    reactors: [],
    new: false,
    wait: false,
    noWait: false,
    inline: false,
    ...over,
  };
}

function parseInteger(option: string, text: string): number {
  if (!/^\d+$/.test(text)) throw new UsageError(`${option} must be a whole number (got '${text}').`);
  return Number(text);
}

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `5000`, `5000ms`, `30s`, `10m`, `2h`, `7d`: milliseconds. */
function parseDuration(option: string, text: string): number {
  const match = /^(\d+)(ms|s|m|h|d)?$/.exec(text);
  if (!match) throw new UsageError(`${option} must be a duration: 5000 (ms), 30s, 10m, 2h or 7d (got '${text}').`);
  return Number(match[1]) * UNITS[match[2] ?? 'ms'];
}

/** `--since`: a time (ISO 8601, or ms since the epoch) or how long ago (`30m`, `2h`, `7d`). */
function parseSince(text: string, now: number): number {
  if (/^\d+(ms|s|m|h|d)$/.test(text)) return now - parseDuration('--since', text);
  if (/^\d+$/.test(text)) return Number(text);
  const at = Date.parse(text);
  if (Number.isNaN(at)) {
    throw new UsageError(
      `--since must be a time (2025-01-31T12:00:00Z, or ms since the epoch) or how long ago (30m, 2h, 7d) (got '${text}').`,
    );
  }
  return at;
}

/** The usage text (`--help`, and after a usage error). */
export const USAGE = `Usage: nest-reactor <command> --app <file> [--module <name>] [options]

Operates on the runs of an application's Redis, through the application's own ReactorClient: the
CLI loads the app's compiled root module and boots it as a client (no workers, no sweeper).

Commands:
  list [--reactor <name>]... [--status <s>] [--since <time|30m|2h|7d>] [--limit <n>] [--cursor <c>]
                             runs, newest first (every registered reactor's without --reactor)
  show <runId>               a run as client.get shows it (redacted inputs)
  retry <runId> [--new] [--wait] [--timeout <d>]
                             retry a failed run (a worker carries it on)
  cancel <runId> [--reason <text>] [--wait] [--timeout <d>]
                             stop a live run; its completed steps are undone
  undo <runId> [--no-wait] [--timeout <d>]
                             undo a finished run's completed steps (their undo code runs here)
  continue <runId> <step> [--payload <json> | --payload-file <file|->] [--wait] [--timeout <d>] [--inline]
                             answer an interrupt of a paused run (a worker carries it on)
  check [--limit <n>]        the definitions this build registers, and the live runs none of them
                             can carry on (exit 1 if any): run it with the build about to be deployed

Options:
  --app <file>      the compiled file exporting the app's root module (or NEST_REACTOR_APP)
  --module <name>   its export to boot (or NEST_REACTOR_MODULE; default AppModule, then default)
  --json            machine output on stdout (errors too: {"error":{"code","message",...}})
  --verbose         the app's log lines (on stderr)
  -h, --help        this text

Exit codes: 0 done, 1 refused or failed (the error's code and message are printed), 2 usage.`;

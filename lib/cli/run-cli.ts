/** `npx nest-reactor`: parse the command line, load and boot the app as a client, run the command, print. */
import { parseCliArgs, USAGE, UsageError } from './args';
import { errorJson, errorText, runCommand } from './commands';
import { bootApp, loadAppModule, markClientOnly, type LoadedApp } from './load-app';

/** Where the CLI writes, and what it reads of its process (a test passes its own). */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  cwd: string;
  env: NodeJS.ProcessEnv;
}

/**
 * Run the CLI with `argv` (the arguments after the script). Resolves the exit code: 0 done, 1 the
 * operation was refused or failed (the error's code and message printed), 2 a usage error.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<0 | 1 | 2> {
  let json = argv.includes('--json');
  const fail = (error: unknown, code: 1 | 2): 1 | 2 => {
    if (json) io.stdout(`${JSON.stringify({ error: errorJson(error) }, null, 2)}\n`);
    else io.stderr(`${errorText(error)}\n`);
    if (code === 2 && !json) io.stderr('nest-reactor --help: the commands and their options\n');
    return code;
  };
  let args;
  try {
    args = parseCliArgs(argv, io.env, Date.now());
  } catch (error) {
    return fail(error, 2);
  }
  json = args.json;
  if (args.help || !args.command) {
    io.stdout(`${USAGE}\n`);
    return 0;
  }
  let loaded: LoadedApp | undefined;
  try {
    markClientOnly();
    const module = await loadAppModule(args.app!, args.module, io.cwd);
    loaded = await bootApp(module, args.verbose);
    const result = await runCommand(args.command, args, loaded);
    io.stdout(`${json ? JSON.stringify(result.json, null, 2) : result.text}\n`);
    return result.exitCode;
  } catch (error) {
    return fail(error, error instanceof UsageError ? 2 : 1);
  } finally {
    await loaded?.app
      .close()
      .catch((error: unknown) => io.stderr(`warning: closing the app failed: ${String(error)}\n`));
  }
}

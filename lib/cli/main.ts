#!/usr/bin/env node
/**
 * The `nest-reactor` bin (`npx nest-reactor <command> --app dist/app.module.js`): see run-cli.ts and
 * the README's "The CLI" section. Exits once the output is written, whatever the app left open.
 */
import 'reflect-metadata';
import { runCli } from './run-cli';

void runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  cwd: process.cwd(),
  env: process.env,
}).then(
  (code) => process.stdout.write('', () => process.stderr.write('', () => process.exit(code))),
  (error: unknown) => {
    process.stderr.write(
      `error INTERNAL: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);

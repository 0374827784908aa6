/**
 * `npm run bench`: every benchmark, each beside a baseline measured in the same run. Prints
 * Markdown tables that bench/RESULTS.md records. Never part of `npm test`.
 *
 * `npm run bench -- engine` runs only the named groups.
 */
import * as os from 'node:os';
import { engineOverhead, printOverhead } from './engine-overhead.bench';

async function main(): Promise<void> {
  const only = process.argv.slice(2);
  const want = (name: string) => only.length === 0 || only.includes(name);
  console.log(`# nest-reactor benchmarks`);
  console.log(
    `node ${process.version}, ${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, ${new Date().toISOString()}`,
  );
  if (want('engine')) printOverhead(await engineOverhead());
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);

#!/usr/bin/env node
// Import-cycle check, run by `npm run lint`.
//
//   node tools/check-import-cycles.mjs [dir]      (dir defaults to lib/ of this repository)
//
// Two checks on the madge graph of the .ts files under dir (resolved with tsconfig.json):
//   1. file-level cycles, as `madge --circular --extensions ts --ts-config tsconfig.json <dir>` reports
//      them. Type-only imports (`import type`, `export type ... from`, `import('x').T`) count: a cycle
//      made of types is still a cycle in the shape of the code. Each cycle is tagged [value] when every
//      edge in it is a value import (a require() cycle in the emitted JS, unless tsc elides an import
//      only used as a type), [type-only] when every edge is a type-only import, else [k of n type-only].
//      (That tag needs a second madge pass with detectiveOptions.ts.skipTypeImports; about a second.)
//   2. folder-level cycles: each file collapses to its top-level folder under dir (lib/core/a/b.ts ->
//      core; a file directly in dir -> the root folder, shown as lib/*.ts), dir/index.ts (the public
//      barrel, which imports everything) is left out, and every elementary cycle of that folder graph
//      is printed with one example file import per folder edge.
// Exits 1 when there is any cycle of either kind, 2 when the graph could not be built.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const madge = require('madge');

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dirArg = process.argv[2];
const dir = dirArg ? path.resolve(dirArg) : path.join(repoRoot, 'lib');
const relativeDir = path.relative(process.cwd(), dir);
const dirLabel = relativeDir === '' ? '.' : relativeDir.startsWith('..') ? dir : relativeDir;
const BARREL = 'index.ts';
const ROOT_FOLDER = `${path.basename(dir)}/*.ts`;
const MAX_FOLDER_CYCLES = 50;

/** madge graph of dir: { 'core/engine.ts': ['core/map/map-jobs.ts', ...], ... } (paths relative to dir). */
async function graph(skipTypeImports) {
  const result = await madge(dir, {
    fileExtensions: ['ts'],
    tsConfig: path.join(repoRoot, 'tsconfig.json'),
    detectiveOptions: { ts: { skipTypeImports }, tsx: { skipTypeImports } },
  });
  return { tree: result.obj(), cycles: result.circular(), skipped: result.warnings().skipped };
}

/** Top-level folder of a path relative to dir, or undefined for the barrel and anything outside dir. */
function folderOf(file) {
  if (file.startsWith('..') || path.isAbsolute(file)) return undefined;
  const parts = file.split('/');
  if (parts.length === 1) return parts[0] === BARREL ? undefined : ROOT_FOLDER;
  return parts[0];
}

/** Every elementary cycle of a small directed graph (Map<node, Set<node>>), each starting at its least node. */
function elementaryCycles(adjacency) {
  const nodes = [...adjacency.keys()].sort();
  const rank = new Map(nodes.map((n, i) => [n, i]));
  const cycles = [];
  for (const start of nodes) {
    const pathStack = [start];
    const onPath = new Set([start]);
    const walk = (node) => {
      for (const next of [...(adjacency.get(node) ?? [])].sort()) {
        if (next === start) cycles.push([...pathStack]);
        else if (rank.get(next) > rank.get(start) && !onPath.has(next)) {
          pathStack.push(next);
          onPath.add(next);
          walk(next);
          onPath.delete(next);
          pathStack.pop();
        }
      }
    };
    walk(start);
  }
  return cycles.sort((a, b) => a.length - b.length || a.join().localeCompare(b.join()));
}

async function main() {
  const started = Date.now();
  if (!fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory()) throw new Error(`${dir} is not a directory`);
  // The graph without type-only imports, only to tell type-only edges from value ones.
  const [full, values] = [await graph(false), await graph(true)];
  const isValueEdge = (from, to) => (values.tree[from] ?? []).includes(to);
  const files = Object.keys(full.tree);
  if (files.length === 0) throw new Error('no .ts files found');
  const out = [];
  out.push(`import cycles in ${dirLabel}/ (${files.length} files; type-only imports count)`);

  // 1. File-level cycles (madge's own list, the same as `madge --circular`).
  out.push('', `file-level cycles: ${full.cycles.length}`);
  full.cycles.forEach((cycle, i) => {
    const edges = cycle.map((from, j) => [from, cycle[(j + 1) % cycle.length]]);
    const typeOnly = edges.filter(([from, to]) => !isValueEdge(from, to)).length;
    const kind =
      typeOnly === 0 ? 'value' : typeOnly === edges.length ? 'type-only' : `${typeOnly} of ${edges.length} type-only`;
    out.push(`  ${i + 1}) ${[...cycle, cycle[0]].join(' > ')}  [${kind}]`);
  });

  // 2. Folder-level cycles.
  const folderEdges = new Map(); // 'a\0b' -> [[fromFile, toFile], ...]
  const adjacency = new Map();
  for (const [from, deps] of Object.entries(full.tree)) {
    const fromFolder = folderOf(from);
    if (fromFolder === undefined) continue;
    if (!adjacency.has(fromFolder)) adjacency.set(fromFolder, new Set());
    for (const to of deps) {
      const toFolder = folderOf(to);
      if (toFolder === undefined || toFolder === fromFolder) continue;
      adjacency.get(fromFolder).add(toFolder);
      if (!adjacency.has(toFolder)) adjacency.set(toFolder, new Set());
      const key = `${fromFolder}\0${toFolder}`;
      if (!folderEdges.has(key)) folderEdges.set(key, []);
      folderEdges.get(key).push([from, to]);
    }
  }
  const folderCycles = elementaryCycles(adjacency);
  out.push(
    '',
    `folder-level cycles: ${folderCycles.length} (top-level folders of ${dirLabel}/, ${dirLabel}/${BARREL} left out)`,
  );
  folderCycles.slice(0, MAX_FOLDER_CYCLES).forEach((cycle, i) => {
    out.push(`  ${i + 1}) ${[...cycle, cycle[0]].join(' > ')}`);
    cycle.forEach((from, j) => {
      const to = cycle[(j + 1) % cycle.length];
      const imports = folderEdges.get(`${from}\0${to}`);
      // Prefer a value import as the example; a type-only one is tagged as such.
      const example = imports.find(([f, t]) => isValueEdge(f, t)) ?? imports[0];
      const typeOnly = isValueEdge(...example) ? '' : ' (type-only)';
      const more = imports.length > 1 ? `  (+${imports.length - 1} more)` : '';
      out.push(`       ${from} > ${to}: ${example[0]} imports ${example[1]}${typeOnly}${more}`);
    });
  });
  if (folderCycles.length > MAX_FOLDER_CYCLES) {
    out.push(`  ... and ${folderCycles.length - MAX_FOLDER_CYCLES} more`);
  }

  if (full.skipped.length > 0) {
    out.push('', `note: ${full.skipped.length} import(s) could not be resolved: ${full.skipped.join(', ')}`);
  }

  const failed = full.cycles.length > 0 || folderCycles.length > 0;
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  out.push(
    '',
    failed
      ? `import cycles: FAILED (${full.cycles.length} file-level, ${folderCycles.length} folder-level; ${seconds}s)`
      : `import cycles: none (${seconds}s)`,
  );
  console.log(out.join('\n'));
  process.exitCode = failed ? 1 : 0;
}

main().catch((error) => {
  console.error(
    `import cycles: could not build the import graph of ${dirLabel}/: ${error instanceof Error ? error.message : error}`,
  );
  process.exitCode = 2;
});

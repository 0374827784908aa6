/**
 * Engine overhead per step on the embedded runtime (issue: foundation).
 *
 * Scenarios: a 10-step chain and a 10-wide fan-in (10 independent steps joined by an 11th), each
 * step adding 1; and a 10-step chain shaped as the user path's (bench/user-path.bench.ts): each step
 * returns a ~300-byte object and takes `{ seed, prev }` (the previous step's result).
 * Baseline, measured in the same run: the same step functions called as plain awaited calls
 * (sequential awaits for the chains, Promise.all plus the join for the fan-in).
 * Overhead per step = (engine time - baseline time) / steps.
 */
import { ReactorEngine } from '../lib/core';
import { defineReactor, type ReactorBuilder } from '../lib/core/definition/builder';
import type { Ref } from '../lib/core/definition/ref';
import { success } from '../lib/core/results/step-outcome';
import { InProcessJobDispatcher } from '../lib/runtime/in-process-job.dispatcher';
import { createMemoryAdapters } from '../lib/storage/memory';
import { fmt, measure, stepResult } from './harness';

const RUNS = 2000;

async function work(x: number): Promise<number> {
  return x + 1;
}

function chain() {
  return defineReactor('bench-chain', (r: ReactorBuilder<{ seed: number }>) => {
    let prev: Ref<number> = r.input('seed', { type: 'number' });
    for (let i = 0; i < 10; i++)
      prev = r.step(`s${i}`, async ({ x }: { x: number }) => success(await work(x)), { x: prev });
    return prev;
  });
}

/** A step of the user path's shape: a ~300-byte object. */
async function userStep(seed: number, step: number): Promise<Record<string, unknown>> {
  return stepResult(seed, step);
}

function userShaped() {
  return defineReactor(
    'bench-user-shaped',
    (r: ReactorBuilder<{ seed: number }>) => {
      const seed = r.input('seed', { type: 'number' });
      let prev: Ref<unknown> = seed;
      for (let i = 0; i < 10; i++) {
        const step = i;
        prev = r.step(
          `s${i}`,
          async ({ seed: s }: { seed: number; prev?: unknown }) => success(await userStep(s, step)),
          { seed, prev },
        );
      }
      return prev;
    },
    { maxConcurrency: 1 },
  );
}

function fanIn() {
  return defineReactor(
    'bench-fan-in',
    (r: ReactorBuilder<{ seed: number }>) => {
      const seed = r.input('seed', { type: 'number' });
      const parts: Array<Ref<number>> = [];
      for (let i = 0; i < 10; i++)
        parts.push(r.step(`p${i}`, async ({ x }: { x: number }) => success(await work(x)), { x: seed }));
      const args = Object.fromEntries(parts.map((p, i) => [`p${i}`, p])) as Record<string, Ref<number>>;
      return r.step(
        'join',
        async (a: Record<string, number>) => success(Object.values(a).reduce((s, v) => s + v, 0)),
        args,
      );
    },
    { maxConcurrency: 10 },
  );
}

export interface OverheadResult {
  scenario: string;
  steps: number;
  engineUsPerRun: number;
  baselineUsPerRun: number;
  overheadUsPerStep: number;
  ratio: number;
}

export async function engineOverhead(): Promise<OverheadResult[]> {
  const { storage, locks } = createMemoryAdapters();
  const engine = new ReactorEngine({ storage, locks, dispatcher: new InProcessJobDispatcher() });
  // The same engine with OpenTelemetry switched off: what tracing costs when no SDK is registered.
  const untraced = new ReactorEngine({ storage, locks, dispatcher: new InProcessJobDispatcher(), tracing: false });
  const results: OverheadResult[] = [];

  const scenarios = [
    {
      name: '10-step chain',
      def: chain(),
      steps: 10,
      baseline: async () => {
        let x = 1;
        for (let i = 0; i < 10; i++) x = await work(x);
        return x;
      },
    },
    {
      name: '10-step chain, ~300-byte results',
      def: userShaped(),
      steps: 10,
      baseline: async () => {
        let prev: unknown;
        for (let i = 0; i < 10; i++) prev = await userStep(1, i);
        return prev;
      },
    },
    {
      name: '10-wide fan-in',
      def: fanIn(),
      steps: 11,
      baseline: async () => {
        const parts = await Promise.all(Array.from({ length: 10 }, () => work(1)));
        return parts.reduce((s, v) => s + v, 0);
      },
    },
  ];

  for (const s of scenarios) {
    for (const [label, e] of [
      ['', engine],
      [' (tracing: false)', untraced],
    ] as const) {
      const engineTime = await measure(async () => {
        for (let i = 0; i < RUNS; i++) {
          const outcome = await e.run(s.def, { seed: 1 });
          if (outcome.status !== 'completed') throw new Error(`bench run ${outcome.status}`);
        }
      });
      const baseTime = await measure(async () => {
        for (let i = 0; i < RUNS; i++) await s.baseline();
      });
      const engineUs = (engineTime.medianMs * 1000) / RUNS;
      const baseUs = (baseTime.medianMs * 1000) / RUNS;
      results.push({
        scenario: s.name + label,
        steps: s.steps,
        engineUsPerRun: engineUs,
        baselineUsPerRun: baseUs,
        overheadUsPerStep: (engineUs - baseUs) / s.steps,
        ratio: engineUs / baseUs,
      });
    }
  }
  return results;
}

export function printOverhead(results: OverheadResult[]): void {
  console.log(`\n## Engine overhead, embedded runtime (${RUNS} runs per round, median of 7 rounds)\n`);
  console.log('| scenario | steps | engine us/run | plain calls us/run | ratio | overhead us/step | target |');
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const r of results) {
    console.log(
      `| ${r.scenario} | ${r.steps} | ${fmt(r.engineUsPerRun, 1)} | ${fmt(r.baselineUsPerRun, 2)} | ${fmt(r.ratio, 0)}x | ${fmt(r.overheadUsPerStep, 2)} | <= 5 ${r.overheadUsPerStep <= 5 ? 'met' : 'MISSED'} |`,
    );
  }
}

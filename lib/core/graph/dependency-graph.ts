/** A node for graph checks: a name and the names it depends on. */
export interface GraphNode {
  readonly name: string;
  readonly dependsOn: readonly string[];
}

/**
 * Find a dependency cycle. Returns the cycle as a path that starts and ends at the same node
 * (`['a', 'b', 'a']`), or undefined when the graph is acyclic. Depth-first with a recursion stack.
 */
export function findCycle(nodes: readonly GraphNode[]): string[] | undefined {
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const state = new Map<string, 'visiting' | 'done'>();
  const stack: string[] = [];

  const visit = (name: string): string[] | undefined => {
    const mark = state.get(name);
    if (mark === 'done') return undefined;
    if (mark === 'visiting') return [...stack.slice(stack.indexOf(name)), name];
    const node = byName.get(name);
    if (!node) return undefined;
    state.set(name, 'visiting');
    stack.push(name);
    for (const dep of node.dependsOn) {
      const cycle = visit(dep);
      if (cycle) return cycle;
    }
    stack.pop();
    state.set(name, 'done');
    return undefined;
  };

  for (const node of nodes) {
    const cycle = visit(node.name);
    if (cycle) return cycle;
  }
  return undefined;
}

/**
 * Steps that may start: not finished, not started, and every dependency finished. In the order
 * of `nodes` (declaration order).
 */
export function readySteps<N extends GraphNode>(
  nodes: readonly N[],
  finished: ReadonlySet<string>,
  started: ReadonlySet<string>,
): N[] {
  return nodes.filter(
    (n) => !finished.has(n.name) && !started.has(n.name) && n.dependsOn.every((d) => finished.has(d)),
  );
}

interface GraphIndex {
  byName: Map<string, number>;
  /** For each node, the nodes that depend on it. */
  dependents: number[][];
}

const indexes = new WeakMap<readonly GraphNode[], GraphIndex>();

function indexOf(nodes: readonly GraphNode[]): GraphIndex {
  let index = indexes.get(nodes);
  if (!index) {
    const byName = new Map(nodes.map((n, i) => [n.name, i]));
    const dependents: number[][] = nodes.map(() => []);
    nodes.forEach((n, i) => {
      for (const dep of n.dependsOn) {
        const d = byName.get(dep);
        if (d !== undefined) dependents[d].push(i);
      }
    });
    index = { byName, dependents };
    indexes.set(nodes, index);
  }
  return index;
}

/**
 * The steps that may start, kept up to date as steps start and finish: the same answer as
 * {@link readySteps} (declaration order) at a cost per change, not per question. A definition's
 * graph is indexed once (by its steps array).
 */
export class ReadySteps<N extends GraphNode> {
  private readonly index: GraphIndex;
  /** Dependencies of each node not finished yet; -1 once the node started or finished. */
  private readonly waiting: number[];
  /** Ready nodes, ascending. */
  private readonly ready: number[] = [];
  /** Edges (`dependent:dependency`, by index) already counted as satisfied by {@link releaseEarly}. */
  private readonly early = new Set<string>();

  constructor(
    private readonly nodes: readonly N[],
    finished: ReadonlySet<string>,
  ) {
    this.index = indexOf(nodes);
    this.waiting = nodes.map((n) =>
      finished.has(n.name) ? -1 : n.dependsOn.reduce((count, d) => (finished.has(d) ? count : count + 1), 0),
    );
    this.waiting.forEach((count, i) => count === 0 && this.ready.push(i));
  }

  /** The ready steps, in declaration order (a copy). */
  list(): N[] {
    return this.ready.map((i) => this.nodes[i]);
  }

  /** `name` started: it is no longer ready. */
  started(name: string): void {
    const i = this.index.byName.get(name)!;
    this.waiting[i] = -1;
    const ready = this.ready;
    const at = ready.indexOf(i);
    if (at < 0) return;
    // Removed in place (`splice` makes an array of what it removes, on every step).
    for (let k = at + 1; k < ready.length; k++) ready[k - 1] = ready[k];
    ready.pop();
  }

  /** `name` finished: its dependents may become ready. */
  finished(name: string): void {
    const i = this.index.byName.get(name)!;
    const early = this.early.size > 0 ? this.early : undefined;
    for (const d of this.index.dependents[i]) {
      if (early?.has(`${d}:${i}`)) continue;
      if (this.waiting[d] > 0 && --this.waiting[d] === 0) this.insert(d);
    }
  }

  /**
   * `name` is under way but not finished (a dispatched async unit): the dependents `early` accepts
   * (those that only wait for it) no longer wait for it; the others wait for {@link finished}.
   */
  releaseEarly(name: string, early: (node: N) => boolean): void {
    const i = this.index.byName.get(name)!;
    for (const d of this.index.dependents[i]) {
      const edge = `${d}:${i}`;
      if (this.early.has(edge) || !early(this.nodes[d])) continue;
      this.early.add(edge);
      if (this.waiting[d] > 0 && --this.waiting[d] === 0) this.insert(d);
    }
  }

  private insert(i: number): void {
    let at = this.ready.length;
    while (at > 0 && this.ready[at - 1] > i) at--;
    this.ready.splice(at, 0, i);
  }
}

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

import type { ReactorDefinition } from '../definition/definition';
import { DefinitionError } from '../errors/definition.error';
import { UnknownReactorError } from '../errors/run-state.error';
import { stepKindOf } from '../steps';

/** The reactor definitions this process knows, by name, and the checks across them. */
export class DefinitionRegistry {
  private readonly definitions = new Map<string, ReactorDefinition>();

  /** Register a definition (and those declared inside its steps). The same name with another shape is an error. */
  register(def: ReactorDefinition): void {
    const existing = this.definitions.get(def.name);
    if (existing && existing.hash !== def.hash) {
      throw new DefinitionError(
        `Reactor '${def.name}' is registered twice with different definitions. Reactor names must be unique.`,
        def.name,
      );
    }
    this.definitions.set(def.name, def);
    for (const step of def.steps) {
      for (const inner of stepKindOf(step).innerDefinitions?.(step) ?? []) this.register(inner);
    }
  }

  /** Every reactor a step runs by name is registered, and no reactor composes itself through a chain. */
  validate(): void {
    for (const def of this.definitions.values()) {
      for (const step of def.steps) {
        for (const linked of stepKindOf(step).linkedReactors?.(step) ?? []) {
          if (this.definitions.has(linked.reactorName)) continue;
          throw new DefinitionError(
            `Reactor '${def.name}': ${linked.describe(step.name)}, which is not registered. ` +
              `Registered: ${this.names().join(', ')}.`,
            def.name,
            step.name,
          );
        }
      }
    }
    const visiting: string[] = [];
    const done = new Set<string>();
    const visit = (name: string): void => {
      if (done.has(name)) return;
      const at = visiting.indexOf(name);
      if (at >= 0) {
        const cycle = [...visiting.slice(at), name];
        throw new DefinitionError(`Reactors compose each other in a cycle: ${cycle.join(' -> ')}.`, name);
      }
      visiting.push(name);
      for (const step of this.definitions.get(name)?.steps ?? []) {
        for (const linked of stepKindOf(step).linkedReactors?.(step) ?? [])
          if (linked.nested) visit(linked.reactorName);
      }
      visiting.pop();
      done.add(name);
    };
    for (const name of this.definitions.keys()) visit(name);
  }

  /** The registered definition named `name`. @throws UnknownReactorError */
  get(name: string): ReactorDefinition {
    const def = this.definitions.get(name);
    if (!def) throw new UnknownReactorError(name, this.names());
    return def;
  }

  has(name: string): boolean {
    return this.definitions.has(name);
  }

  /** Names of every registered reactor. */
  names(): string[] {
    return [...this.definitions.keys()];
  }
}

import type { ReactorDefinition } from '../definition/definition';
import { didYouMean } from '../errors/closest-names';
import { DefinitionError } from '../errors/definition.error';
import { UnknownReactorError } from '../errors/run-state.error';
import { stepKindOf } from '../steps';

/**
 * The reactor definitions this process knows, by name and version, and the checks across them.
 * New runs take the highest version of a name; a run resumes under the version it started with.
 */
export class DefinitionRegistry {
  /** The highest version of each name. */
  private readonly definitions = new Map<string, ReactorDefinition>();
  private readonly versions = new Map<string, Map<string, ReactorDefinition>>();
  /** Definitions served in place of a name's registered one (the testing kit's reactor mocks). */
  private readonly overrides = new Map<string, ReactorDefinition[]>();

  /**
   * Register a definition (and those declared inside its steps). The same name and version with
   * another shape is an error; another version of a name is kept beside it.
   */
  register(def: ReactorDefinition): void {
    const byVersion = this.versions.get(def.name) ?? new Map<string, ReactorDefinition>();
    const existing = byVersion.get(def.version);
    // This very definition again (a run of a definition object registers it): nothing changes.
    if (existing === def) return;
    if (existing && existing.hash !== def.hash) {
      throw new DefinitionError(
        `Reactor '${def.name}' is registered twice with different definitions. Reactor names must be unique ` +
          '(or give each definition its own version: @Reactor(name, { version }))',
        def.name,
      );
    }
    byVersion.set(def.version, def);
    this.versions.set(def.name, byVersion);
    const current = this.definitions.get(def.name);
    if (!current || compareVersions(def.version, current.version) >= 0) this.definitions.set(def.name, def);
    for (const step of def.steps) {
      for (const inner of stepKindOf(step).innerDefinitions?.(step) ?? []) this.register(inner);
    }
  }

  /** Every reactor a step runs by name is registered, and no reactor composes itself through a chain. */
  validate(): void {
    for (const def of this.all()) {
      for (const step of def.steps) {
        for (const linked of stepKindOf(step).linkedReactors?.(step) ?? []) {
          if (this.definitions.has(linked.reactorName)) continue;
          throw new DefinitionError(
            `Reactor '${def.name}': ${linked.describe(step.name)}, which is not registered.` +
              `${didYouMean(linked.reactorName, this.names())} Registered: ${this.names().join(', ')}.`,
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
    const def = this.overrides.get(name)?.at(-1) ?? this.definitions.get(name);
    if (!def) throw new UnknownReactorError(name, this.names());
    return def;
  }

  /**
   * Serve `def` for its name (in {@link get}: new runs by name and composed children) until the
   * returned function is called. For tests: a mock of a registered reactor, which it must name.
   */
  override(def: ReactorDefinition): () => void {
    this.get(def.name);
    const stack = this.overrides.get(def.name) ?? [];
    stack.push(def);
    this.overrides.set(def.name, stack);
    return () => {
      const at = stack.indexOf(def);
      if (at >= 0) stack.splice(at, 1);
      if (stack.length === 0 && this.overrides.get(def.name) === stack) this.overrides.delete(def.name);
    };
  }

  has(name: string): boolean {
    return this.definitions.has(name);
  }

  /**
   * The definition a stored run goes on under: the version it started with when registered, else
   * the highest version when it has the same shape (a compatible change), else undefined.
   */
  forRun(run: { reactorName: string; reactorVersion?: string; definitionHash: string }): ReactorDefinition | undefined {
    const exact = this.versions.get(run.reactorName)?.get(run.reactorVersion ?? '1');
    if (exact) return exact;
    const current = this.definitions.get(run.reactorName);
    return current?.hash === run.definitionHash ? current : undefined;
  }

  /** Versions of `name` registered here, lowest first. */
  versionsOf(name: string): string[] {
    return [...(this.versions.get(name)?.keys() ?? [])].sort(compareVersions);
  }

  /** Every registered definition, every version. */
  all(): ReactorDefinition[] {
    return [...this.versions.values()].flatMap((byVersion) => [...byVersion.values()]);
  }

  /** Names of every registered reactor. */
  names(): string[] {
    return [...this.definitions.keys()];
  }
}

/** Compares as `localeCompare(b, 'en', { numeric: true })`, made once (that call makes a collator each time). */
const VERSION_ORDER = new Intl.Collator('en', { numeric: true });

/** Order versions as people read them: '2' before '10', '1.9' before '1.10'. */
export function compareVersions(a: string, b: string): number {
  return VERSION_ORDER.compare(a, b);
}

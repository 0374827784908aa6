/**
 * Turns a step class into the instance that runs it. In Nest it comes from the DI container, so
 * steps get ordinary constructor injection; the default constructs each class once.
 */
export interface StepResolver {
  resolve<T>(stepClass: new (...args: never[]) => T): T;
}

/** Resolver that constructs each class once with no arguments. */
export class ConstructingStepResolver implements StepResolver {
  private readonly instances = new Map<unknown, unknown>();
  resolve<T>(stepClass: new (...args: never[]) => T): T {
    let instance = this.instances.get(stepClass) as T | undefined;
    if (!instance) {
      instance = new (stepClass as unknown as new () => T)();
      this.instances.set(stepClass, instance);
    }
    return instance;
  }
}

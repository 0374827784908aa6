import { Injectable } from '@nestjs/common';
import { DefinitionError, getStepMetadata, type StepResolver } from '../core';
import { messages } from '../config';

type Class = abstract new (...args: never[]) => unknown;

/**
 * What the explorer discovered: `@Step` classes with their container instances, and `@Reactor`
 * classes with their names. It is the engine's {@link StepResolver}, so a step class resolves to
 * the singleton Nest built, with its constructor dependencies.
 */
@Injectable()
export class ReactorRegistry implements StepResolver {
  private readonly steps = new Map<Class, unknown>();
  private readonly stepClassesByName = new Map<string, Class>();
  private readonly reactors = new Map<Class, string>();
  private readonly reactorClassesByName = new Map<string, Class>();
  private explored = false;

  /**
   * Record a discovered step provider. A second instance of the same class is ignored; another
   * class with the same step name is an error.
   */
  addStep(stepClass: Class, instance: unknown, name: string): void {
    const other = this.stepClassesByName.get(name);
    // NOTE: a step name belongs to no one reactor, so the error's reactorName is empty.
    if (other && other !== stepClass)
      throw new DefinitionError(messages.duplicateStepName(name, other, stepClass), '', name);
    this.stepClassesByName.set(name, stepClass);
    if (!this.steps.has(stepClass)) this.steps.set(stepClass, instance);
  }

  /**
   * Record a discovered reactor class. Returns false when the class was already recorded (it is a
   * provider of several modules); another class with the same name is an error.
   */
  addReactor(reactorClass: Class, name: string, version = '1'): boolean {
    // Versions of one reactor are kept side by side (a deploy drains the old one's runs).
    const key = `${name}@${version}`;
    const other = this.reactorClassesByName.get(key);
    if (other && other !== reactorClass)
      throw new DefinitionError(messages.duplicateReactorName(name, other, reactorClass), name);
    if (this.reactors.has(reactorClass)) return false;
    this.reactorClassesByName.set(key, reactorClass);
    this.reactors.set(reactorClass, name);
    return true;
  }

  /** Whether `stepClass` was discovered as a `@Step` provider. */
  hasStep(stepClass: Class): boolean {
    return this.steps.has(stepClass);
  }

  /** The `@Step` class discovered under `name`, or undefined. */
  stepClassNamed(name: string): Class | undefined {
    return this.stepClassesByName.get(name);
  }

  /** The names of every discovered `@Step` class. */
  stepNames(): string[] {
    return [...this.stepClassesByName.keys()];
  }

  /** The name of a discovered reactor class, or undefined. */
  reactorNameOf(reactorClass: unknown): string | undefined {
    return this.reactors.get(reactorClass as Class);
  }

  /** Every discovered `@Reactor` class (its metadata holds what it declares, such as its schedule). */
  reactorClasses(): Class[] {
    return [...this.reactors.keys()];
  }

  /** Discovery finished: every reactor is registered with the engine. */
  markExplored(): void {
    this.explored = true;
  }

  /** Whether discovery has finished. */
  get isExplored(): boolean {
    return this.explored;
  }

  resolve<T>(stepClass: new (...args: never[]) => T): T {
    if (!this.steps.has(stepClass)) {
      throw new DefinitionError(messages.stepClassNotResolvable(stepClass), '', getStepMetadata(stepClass)?.name);
    }
    return this.steps.get(stepClass) as T;
  }
}

import { Inject, Injectable, Scope, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import {
  defineReactor,
  type ReactorBuilder,
  type ReactorDefinition,
  getReactorMetadata,
  type ReactorBlueprint,
  type ReactorClassMetadata,
  getStepMetadata,
  ReactorEngine,
  DefinitionError,
} from '../core';
import { ReactorRegistry } from './reactor.registry';
import { messages, REACTOR_RUNTIME, type ReactorRuntime } from '../config';
import { reactorListenerOf, type ReactorListenerMetadata } from './on-reactor-event.decorator';
import { ReactorListeners } from './reactor-listeners';
import { resolveJobRouting } from '../queue/job-routing';

type Class = abstract new (...args: never[]) => unknown;

interface FoundReactor {
  reactorClass: Class;
  instance: ReactorBlueprint;
  metadata: ReactorClassMetadata;
}

/**
 * Collects reactors and steps at boot (`onModuleInit`), before any worker starts:
 *
 * 1. find every provider whose class carries `@Step` or `@Reactor` metadata (the class is
 *    resolved through the instance, so `useFactory` providers are found; aliases are skipped);
 * 2. refuse request-scoped and transient ones;
 * 3. record steps in the registry (the engine's step resolver), refusing two classes with one name;
 * 4. build each reactor's definition, check that every step class it uses is a `@Step` provider,
 *    and register it with the engine;
 * 5. validate links between reactors (composition);
 * 6. validate the reactors' `queue`, `concurrency` and `priority` options and hand the routing of
 *    jobs to the runtime (the Redis runtime creates the named queues).
 *
 * Any problem throws, so `app.init()` fails with a message naming the reactor and step.
 */
@Injectable()
export class ReactorExplorer implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly engine: ReactorEngine,
    private readonly registry: ReactorRegistry,
    @Inject(REACTOR_RUNTIME) private readonly runtime: ReactorRuntime,
    private readonly listeners: ReactorListeners,
  ) {}

  /**
   * Explore; when that fails, close the runtime before the error reaches `app.init()`: Nest runs no
   * shutdown hook for an application whose bootstrap failed, and an open Redis connection or
   * BullMQ queue would keep the process from exiting.
   */
  async onModuleInit(): Promise<void> {
    try {
      this.explore();
    } catch (error) {
      await this.runtime.close().catch(() => undefined);
      throw error;
    }
  }

  /** Run discovery once (idempotent). */
  explore(): void {
    if (this.registry.isExplored) return;
    const providerClasses = new Set<Class>();
    const reactors: FoundReactor[] = [];

    for (const wrapper of this.discovery.getProviders()) {
      if (wrapper.isAlias) continue;
      const providerClass = classOf(wrapper);
      if (!providerClass) continue;
      providerClasses.add(providerClass);
      this.addListeners(wrapper, providerClass);
      const stepMetadata = getStepMetadata(providerClass);
      const reactorMetadata = getReactorMetadata(providerClass);
      if (!stepMetadata && !reactorMetadata) continue;
      refuseScoped(wrapper, providerClass, reactorMetadata?.name, stepMetadata?.name);
      checkConstructorMetadata(
        wrapper,
        reactorMetadata ? 'reactor' : 'step',
        reactorMetadata?.name ?? stepMetadata?.name,
      );
      if (stepMetadata) this.registry.addStep(providerClass, wrapper.instance, stepMetadata.name);
      if (
        reactorMetadata &&
        this.registry.addReactor(providerClass, reactorMetadata.name, String(reactorMetadata.version ?? '1'))
      ) {
        reactors.push({
          reactorClass: providerClass,
          instance: wrapper.instance as ReactorBlueprint,
          metadata: reactorMetadata,
        });
      }
    }

    const definitions: ReactorDefinition[] = [];
    for (const found of reactors) {
      const definition = buildDefinition(found);
      this.checkStepClasses(definition, providerClasses);
      this.engine.register(definition);
      definitions.push(definition);
    }
    this.engine.validate();
    const current = this.engine.reactorNames().map((name) => this.engine.definition(name));
    // NOTE: resolved (and so validated) first: `routeJobs?.(...)` would skip its argument on the
    // embedded runtime, which has no queues but must refuse bad options too.
    const routing = resolveJobRouting(definitions, current);
    this.runtime.routeJobs?.(routing);
    this.registry.markExplored();
  }

  /**
   * `@OnReactorEvent` methods of a provider become middleware (a singleton only: events are not per
   * request), delivered through {@link ReactorListeners}: fire-and-forget and bounded.
   */
  private addListeners(wrapper: InstanceWrapper, providerClass: Class): void {
    const instance: unknown = wrapper.instance;
    if (instance === null || typeof instance !== 'object') return;
    const found: Array<[string, ReactorListenerMetadata]> = [];
    for (
      let proto = Object.getPrototypeOf(instance);
      proto && proto !== Object.prototype;
      proto = Object.getPrototypeOf(proto)
    ) {
      for (const name of Object.getOwnPropertyNames(proto)) {
        const listener = reactorListenerOf(Object.getOwnPropertyDescriptor(proto, name)?.value);
        if (listener && !found.some(([n]) => n === name)) found.push([name, listener]);
      }
    }
    if (found.length === 0) return;
    refuseScoped(wrapper, providerClass, undefined, undefined, true);
    checkConstructorMetadata(wrapper, 'listener', undefined);
    for (const [name, listener] of found) {
      this.engine.addMiddleware(this.listeners.middleware(instance, name, listener));
    }
  }

  private checkStepClasses(definition: ReactorDefinition, providerClasses: ReadonlySet<Class>): void {
    for (const step of definition.steps) {
      if (step.handler.kind !== 'class') continue;
      const stepClass = step.handler.stepClass;
      if (this.registry.hasStep(stepClass)) continue;
      const message = providerClasses.has(stepClass)
        ? messages.stepClassNotDecorated(definition.name, step.name, stepClass)
        : messages.stepClassNotProvider(definition.name, step.name, stepClass);
      throw new DefinitionError(message, definition.name, step.name);
    }
  }
}

/**
 * The class of a provider: its token when that is a `@Step` or `@Reactor` class (so a provider
 * overridden in a test, `overrideProvider(ChargePayment).useValue(fake)`, stands for the class the
 * reactors use), else its instance's constructor (finds `useFactory` providers), else its metatype.
 */
function classOf(wrapper: InstanceWrapper): Class | undefined {
  const token: unknown = wrapper.token;
  if (typeof token === 'function' && (getStepMetadata(token) || getReactorMetadata(token))) return token as Class;
  const instance: unknown = wrapper.instance;
  const fromInstance = instance !== null && typeof instance === 'object' ? instance.constructor : undefined;
  const candidate = fromInstance ?? wrapper.metatype;
  return typeof candidate === 'function' ? (candidate as Class) : undefined;
}

function refuseScoped(
  wrapper: InstanceWrapper,
  providerClass: Class,
  reactorName: string | undefined,
  stepName: string | undefined,
  listener = false,
): void {
  let scope: string | undefined;
  if (wrapper.isTransient) scope = 'transient';
  else if (wrapper.scope === Scope.REQUEST) scope = 'request-scoped';
  else if (!wrapper.isDependencyTreeStatic()) scope = 'request-scoped (it depends on a request-scoped provider)';
  if (!scope) return;
  const kind = listener ? 'listener' : reactorName !== undefined ? 'reactor' : 'step';
  throw new DefinitionError(messages.scopedProvider(kind, providerClass, scope), reactorName ?? '', stepName);
}

/** Nest's metadata of `@Inject(token)` on constructor parameters (`SELF_DECLARED_DEPS_METADATA`). */
const SELF_PARAMTYPES = 'self:paramtypes';

/**
 * Refuse a class Nest constructs (a class provider, not a factory or a value) that takes
 * constructor parameters but has no `design:paramtypes` metadata, and no `@Inject` on each
 * parameter: compiled without `emitDecoratorMetadata` (or by a bundler that drops it), Nest would
 * build it with undefined dependencies, and each run would fail with a TypeError only when it uses
 * them. The parameters counted are the constructor's own, or for a class that declares none, those
 * of the nearest parent class with some (`class B extends Base {}` is built with `Base`'s).
 */
function checkConstructorMetadata(
  wrapper: InstanceWrapper,
  kind: 'step' | 'reactor' | 'listener',
  name: string | undefined,
): void {
  const built: unknown = wrapper.metatype;
  if (typeof built !== 'function' || wrapper.isNotMetatype || wrapper.inject) return;
  if (Reflect.getMetadata('design:paramtypes', built) !== undefined) return;
  let parameters = 0;
  for (let cls: unknown = built; typeof cls === 'function' && parameters === 0; cls = Object.getPrototypeOf(cls)) {
    parameters = (cls as { length: number }).length;
  }
  if (parameters === 0) return;
  const declared = (Reflect.getMetadata(SELF_PARAMTYPES, built) as Array<{ index: number }> | undefined) ?? [];
  const covered = new Set(declared.map((d) => d.index));
  const uncovered = Array.from({ length: parameters }, (_, i) => i).filter((i) => !covered.has(i));
  if (uncovered.length === 0) return;
  throw new DefinitionError(
    messages.constructorMetadataMissing(kind, name, built, parameters, uncovered),
    kind === 'reactor' ? (name ?? '') : '',
    kind === 'step' ? name : undefined,
  );
}

function buildDefinition({ reactorClass, instance, metadata }: FoundReactor): ReactorDefinition {
  const { name, ...options } = metadata;
  try {
    return defineReactor(name, (r: ReactorBuilder<Record<string, unknown>>) => instance.build(r), options);
  } catch (error) {
    if (error instanceof DefinitionError) throw error;
    const wrapped = new DefinitionError(messages.reactorBuildThrew(name, reactorClass, error), name);
    // NOTE: DefinitionError takes no options, so the cause is set afterwards.
    wrapped.cause = error;
    throw wrapped;
  }
}

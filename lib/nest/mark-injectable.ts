import { Injectable } from '@nestjs/common';
import { SCOPE_OPTIONS_METADATA } from '@nestjs/common/constants';

/**
 * Apply `@Injectable()` keeping any scope the class already declares, so that a request-scoped
 * class reaches the explorer (and is refused there with a clear message) instead of silently
 * becoming a singleton.
 * @internal
 */
export function markInjectable(target: object): void {
  Injectable(Reflect.getMetadata(SCOPE_OPTIONS_METADATA, target) as Parameters<typeof Injectable>[0])(target as never);
}

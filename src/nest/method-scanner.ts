import type { DiscoveryService, MetadataScanner } from '@nestjs/core';

/** A provider method that carries some decorator's metadata, bound to its instance. */
export interface FoundMethod<M> {
  readonly meta: M;
  /** The method bound to its provider instance. */
  readonly bound: (...args: never[]) => unknown;
  /** `ClassName.method`, for logs and errors. */
  readonly name: string;
  /** The provider instance and the method's property name on it. */
  readonly instance: Record<string, unknown>;
  readonly key: string;
}

/**
 * Walks every static provider's methods and returns those for which `read` finds metadata.
 * Shared by the explorers; it only reads metadata (no I/O).
 */
export function findDecoratedMethods<M>(
  discovery: DiscoveryService,
  scanner: MetadataScanner,
  read: (method: unknown) => M | undefined,
): FoundMethod<M>[] {
  const out: FoundMethod<M>[] = [];
  for (const wrapper of discovery.getProviders()) {
    const instance: unknown = wrapper.instance;
    if (!instance || typeof instance !== 'object' || !wrapper.isDependencyTreeStatic()) continue;
    const proto = Object.getPrototypeOf(instance) as object;
    for (const key of scanner.getAllMethodNames(proto)) {
      const method = (instance as Record<string, unknown>)[key];
      const meta = read(method);
      if (!meta) continue;
      out.push({
        meta,
        bound: (method as (...args: never[]) => unknown).bind(instance),
        name: `${(instance as object).constructor.name}.${key}`,
        instance: instance as Record<string, unknown>,
        key,
      });
    }
  }
  return out;
}

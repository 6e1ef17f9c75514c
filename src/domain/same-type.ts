// Compile-time agreement between a zod schema and the type it validates, where both are declared.

/** `true` exactly when A and B are the same type (optional and readonly modifiers included). */
export type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

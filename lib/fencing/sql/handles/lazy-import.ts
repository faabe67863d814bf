/**
 * Imports a library the application has installed (Drizzle, Kysely) when a handle of it is first
 * used: never a dependency of this package, and not even named in its type declarations. The
 * specifier is a variable so that the compiler does not resolve it.
 */
export function importOptional<T>(specifier: string, why: string): Promise<T> {
  let module = imported.get(specifier);
  if (!module) {
    module = import(specifier).catch((err: unknown) => {
      imported.delete(specifier);
      const message = `${why} needs the package "${specifier}", which could not be imported: ${String(err)}`;
      throw new Error(message, { cause: err });
    });
    imported.set(specifier, module);
  }
  return module as Promise<T>;
}

/** Modules imported so far (a statement of a Drizzle handle must not wait on import() each time). */
const imported = new Map<string, Promise<unknown>>();

/**
 * Imports a library the application has installed (Drizzle, Kysely) when a handle of it is first
 * used: never a dependency of this package, and not even named in its type declarations. The
 * specifier is a variable so that the compiler does not resolve it.
 */
export async function importOptional<T>(specifier: string, why: string): Promise<T> {
  try {
    return (await import(specifier)) as T;
  } catch (err) {
    throw new Error(`${why} needs the package "${specifier}", which could not be imported: ${String(err)}`, {
      cause: err,
    });
  }
}

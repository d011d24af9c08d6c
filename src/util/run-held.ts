/**
 * The shape of every body run while something is held (withLock of a lock or a group,
 * withPermits): the body runs; whatever happens, `cleanup` runs once it is done; what is held is
 * given back by `release`. After an error the release is quiet (the body's error is what the
 * caller needs) and the error is thrown; after the body did its work, `release(true)` may let a
 * release Redis did not answer go on in the background, so that the result stands.
 */
export async function runHeld<T>(
  body: () => T | Promise<T>,
  cleanup: () => void,
  release: (afterWork: boolean) => Promise<unknown>,
): Promise<T> {
  let result: T;
  try {
    result = await body();
  } catch (error) {
    await release(false).catch(() => undefined);
    throw error;
  } finally {
    cleanup();
  }
  await release(true);
  return result;
}

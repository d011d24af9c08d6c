export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it is true; fails with `what` after `timeoutMs`. */
export async function eventually(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 5_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await sleep(10);
  }
}

/** Calls of one command on a server since its stats were last reset (INFO commandstats). */
export async function commandCalls(
  admin: { info(section: string): Promise<string> },
  command: string,
): Promise<number> {
  const stats = await admin.info('commandstats');
  const match = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(stats);
  return match ? Number(match[1]) : 0;
}

/** Settles `work`, and says how long it took and how it ended. */
export async function timed<T>(work: Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> {
  const started = performance.now();
  try {
    const value = await work;
    return { ms: performance.now() - started, value };
  } catch (error) {
    return { ms: performance.now() - started, error };
  }
}

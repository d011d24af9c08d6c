/**
 * Time in ms with sub-ms precision, comparable between processes on one machine: the monotonic
 * clock every process shares (performance.now() counts from each process's own start, and its
 * origin carries a small error, enough to fake an overlap between two workers).
 */
export const now = (): number => Number(process.hrtime.bigint()) / 1e6;

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** This process' CPU time so far (user + system), in µs. */
export const cpuMicros = (): number => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

/** Runs `work` with a deadline; past it the scenario is written down as stranded. */
export async function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} after ${Math.round(ms / 1000)} s`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

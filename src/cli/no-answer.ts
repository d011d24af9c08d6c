/**
 * Redis did not answer within the command's --timeout: a paused server (SIGSTOP, a VM freeze), one
 * too busy to answer, or a network that drops packets. The socket may still be open, so without
 * the timeout the command would wait for as long as the server stays silent.
 */
export class NoAnswerError extends Error {
  constructor(where: string, timeoutMs: number) {
    super(
      `Redis at ${where} did not answer within ${timeoutMs / 1000} s (--timeout ${timeoutMs}): ` +
        'it may be paused, overloaded or out of reach',
    );
  }
}

/**
 * Whether ioredis gave up waiting (its commandTimeout, or its connectTimeout), as opposed to
 * being told no (a refused connection, a reply error).
 */
export function isNoAnswer(error: unknown): boolean {
  const text = error instanceof Error ? error.message : String(error);
  return /Command timed out|connect ETIMEDOUT/.test(text);
}

/**
 * `work`, or a NoAnswerError once `timeoutMs` has passed (its timer cleared when `work` settles).
 * For steps made of several round trips (connecting sends CLIENT SETINFO, then a ready check,
 * each with its own commandTimeout): the step as a whole keeps to the timeout.
 */
export function answeredWithin<T>(work: Promise<T>, timeoutMs: number, where: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new NoAnswerError(where, timeoutMs)), timeoutMs);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

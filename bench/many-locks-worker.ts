/**
 * One library's round of the *many locks* scenario, in a process of its own: `locks` distinct
 * locks acquired and released concurrently, after a round of warm-up; it sends the round's rate
 * and client CPU per lock to the parent. A fresh process per round gives every library the same heap to start
 * from: in one shared process a library's round ran after the others' had grown the heap, and with
 * 10,000 calls in flight the garbage collector's cost followed that more than the library (one
 * library's client CPU per lock moved from 67 to 82 µs between two runs of the same build).
 * argv: <library> <port> <locks>
 */
import { openLibrary, type Library, type LibraryName } from './adapters';
import { cpuMicros, now } from './clock';

const [library, port, locks] = process.argv.slice(2);

/** `count` distinct locks named `<prefix>:<i>`, each taken and given back, all at once. */
async function burst(lib: Library, prefix: string, count: number): Promise<void> {
  await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const release = await lib.lock(`${prefix}:${i}`);
      await release();
    }),
  );
}

/** The round: its rate and client CPU per lock, or what went wrong. */
async function round(): Promise<{ ops: number; cpu: number } | { error: string }> {
  const lib = await openLibrary(library as LibraryName, Number(port));
  try {
    const count = Number(locks);
    // A whole round first, so that every library's code runs optimized, as in a service that has
    // been up a while (a fresh process with a short warm-up measured the compiler as much).
    await burst(lib, 'bench:many:warm', count);
    const cpuBefore = cpuMicros();
    const started = now();
    await burst(lib, 'bench:many', count);
    const seconds = (now() - started) / 1000;
    return { ops: count / seconds, cpu: (cpuMicros() - cpuBefore) / count };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  } finally {
    await lib.close().catch(() => undefined);
  }
}

void round().then((report) => process.send?.(report, () => process.exit(0)));

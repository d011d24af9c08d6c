import type { Frame } from '../ownership/owner';

/**
 * The withLock and withPermits bodies running on a client, which close() gives time to finish,
 * and how to give back what each holds outside the hold book (withPermits' permits) when one
 * outlasts that time.
 */
export class RunningBodies {
  private readonly frames = new Set<Frame>();
  private readonly giveBacks = new Map<Frame, () => Promise<unknown>>();
  private onDone?: () => void;

  /** Counts `body` as running; call the result when it is done. */
  track(body: Frame, giveBack?: () => Promise<unknown>): () => void {
    this.frames.add(body);
    if (giveBack) this.giveBacks.set(body, giveBack);
    return () => {
      this.frames.delete(body);
      this.giveBacks.delete(body);
      this.onDone?.();
    };
  }

  /** Settles once no running body passes `counts`. */
  done(counts: (body: Frame) => boolean): Promise<void> {
    const idle = (): boolean => ![...this.frames].some(counts);
    if (idle()) return Promise.resolve();
    return new Promise((resolve) => {
      this.onDone = () => {
        if (!idle()) return;
        this.onDone = undefined;
        resolve();
      };
    });
  }

  /** Gives back what the bodies still running hold outside the hold book. */
  async giveBackAll(): Promise<void> {
    await Promise.allSettled([...this.giveBacks.values()].map((giveBack) => giveBack()));
  }
}

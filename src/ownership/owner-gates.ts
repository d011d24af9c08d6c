import { onAbort } from '../util/abort';
import { LockOwnerMap, type PerLockOwner } from './lock-owner-map';
import type { Frame } from './owner';

/**
 * Re-entry is nesting, not concurrency. In Redis an owner's holds on a lock are one count, so two
 * branches of one task (a `Promise.all` inside withLock, requests of a server started inside a
 * task) would both "re-enter" and run inside the lock at once. The gate keeps them apart inside
 * the process: per (lock, owner), the acquisitions under way or held form a stack, each with the
 * frame its holder's code runs in (its body). A call may go on to Redis when nothing is on the
 * stack, or when it runs inside the body on top (it is nested in the current holder, so waiting
 * would deadlock it). Any other call waits here, in arrival order, until the stack lets it in.
 *
 * By-hand lock() has no body of its own: its hold's body is the caller's frame, so calls from one
 * frame (one withLock body, or one task outside any) re-enter each other, as Redisson's threads do.
 */
export interface GateEntry {
  /** The frame the holder's code runs in while this entry is held. */
  readonly body: Frame;
}

/** What the map of gates holds per (lock, owner): a gate, or an entry that stands in for one. */
type Stored = Gate | Entry;

interface Entry extends GateEntry, PerLockOwner<Stored> {
  /** The lock of its gate. */
  readonly name: string;
  /**
   * Its gate, once one exists: an entry alone in an empty gate (the usual acquisition) stands in
   * for it, and a gate is made only when a second entry or a waiter comes (see OwnerGates.gateOf).
   */
  gate: Gate | undefined;
  left: boolean;
}

interface Waiter {
  readonly frame: Frame;
  readonly body: Frame;
  admit(entry: Entry): void;
}

/** An entry of the gate of (`name`, `ownerId`), made in one shape wherever it is made. */
function newEntry(name: string, ownerId: string, body: Frame, gate: Gate | undefined): Entry {
  return { body, name, ownerId, gate, left: false, nextOwner: undefined };
}

class Gate implements PerLockOwner<Stored> {
  readonly entries: Entry[] = [];
  readonly waiters: Waiter[] = [];
  nextOwner: Stored | undefined = undefined;

  constructor(
    readonly name: string,
    readonly ownerId: string,
  ) {}

  admits(frame: Frame): boolean {
    const top = this.entries[this.entries.length - 1];
    return top === undefined || frame.isWithin(top.body);
  }

  push(body: Frame): Entry {
    const entry = newEntry(this.name, this.ownerId, body, this);
    this.entries.push(entry);
    return entry;
  }
}

export interface GateWait {
  /** performance.now() time after which a waiting call gives up (Infinity: never). */
  deadline: number;
  signal?: AbortSignal;
  /** The client's close: a waiting call ends with its reason. */
  closing: AbortSignal;
}

export class OwnerGates {
  /** Per (lock, owner): its gate, or the one entry of a gate nobody else has entered or waits at. */
  private readonly gates = new LockOwnerMap<Stored>();

  /**
   * Enters the gate of (`name`, `owner`) from `frame`, for a holder whose code will run in `body`:
   * the entry itself when allowed at once (nothing to wait for, so nothing to await); otherwise a
   * wait, which resolves undefined when the deadline passes first (rejects when the signal aborts
   * or the client closes).
   */
  enter(
    name: string,
    owner: string,
    frame: Frame,
    body: Frame,
    wait: GateWait,
  ): GateEntry | Promise<GateEntry | undefined> {
    const found = this.gates.get(name, owner);
    if (found === undefined) {
      // Nobody holds or waits: the entry goes in alone, with no gate made for it.
      const entry = newEntry(name, owner, body, undefined);
      this.gates.set(name, entry);
      return entry;
    }
    const gate = found instanceof Gate ? found : this.gateOf(found);
    // A call nested in the current holder goes on at once, even past waiting siblings (they wait
    // for the holder, which waits for it); into an empty gate, waiting calls go first.
    const nested = gate.entries.length > 0 && gate.admits(frame);
    if (nested || (gate.entries.length === 0 && gate.waiters.length === 0)) return gate.push(body);
    return this.waitToEnter(gate, frame, body, wait);
  }

  /** The holder is done (released, or its hold is gone): calls waiting behind it may go on. */
  leave(entry: GateEntry): void {
    const own = entry as Entry;
    if (own.left) return;
    own.left = true;
    const { gate } = own;
    if (!gate) {
      this.gates.delete(own.name, own);
      return;
    }
    const index = gate.entries.lastIndexOf(own);
    if (index >= 0) gate.entries.splice(index, 1);
    this.admitWaiters(gate);
  }

  /** A gate for an entry that was alone: a second entry or a waiter has come. */
  private gateOf(alone: Entry): Gate {
    const gate = new Gate(alone.name, alone.ownerId);
    alone.gate = gate;
    gate.entries.push(alone);
    this.gates.set(alone.name, gate);
    return gate;
  }

  private waitToEnter(gate: Gate, frame: Frame, body: Frame, wait: GateWait): Promise<GateEntry | undefined> {
    const signals = wait.signal ? [wait.signal, wait.closing] : [wait.closing];
    return new Promise((resolve, reject) => {
      const aborted = signals.find((signal) => signal.aborted);
      if (aborted) return reject(aborted.reason);
      const done = (): void => {
        clearTimeout(timer);
        for (const stop of stops) stop();
        const index = gate.waiters.indexOf(waiter);
        if (index >= 0) gate.waiters.splice(index, 1);
        this.forgetIfIdle(gate);
      };
      const waiter: Waiter = {
        frame,
        body,
        admit: (entry) => {
          done();
          resolve(entry);
        },
      };
      const stops = signals.map((signal) =>
        onAbort(signal, () => {
          done();
          reject(signal.reason);
        }),
      );
      const timer = Number.isFinite(wait.deadline)
        ? setTimeout(
            () => {
              done();
              resolve(undefined);
            },
            Math.max(0, wait.deadline - performance.now()),
          )
        : undefined;
      gate.waiters.push(waiter);
    });
  }

  /** Lets in every waiting call the stack now allows, oldest first. */
  private admitWaiters(gate: Gate): void {
    for (const waiter of [...gate.waiters]) {
      if (gate.admits(waiter.frame)) waiter.admit(gate.push(waiter.body));
    }
    this.forgetIfIdle(gate);
  }

  private forgetIfIdle(gate: Gate): void {
    if (gate.entries.length === 0 && gate.waiters.length === 0) this.gates.delete(gate.name, gate);
  }
}

import { Deadlines } from './library';
import type { Kind } from './scenario';
import type { World } from './world/world';

/**
 * Deliberate bugs, put into the simulated world and never into the shipped code: a script's text
 * as the simulated Redis runs it (the client still sends the real script and its digest), or a
 * method of the client patched for the run. Each must be caught by the checks within the seeds
 * __tests__/simulation-mutants.test.ts states, so that a checker that stops seeing it fails CI.
 */
export interface Mutant {
  name: string;
  /** What the bug is, in the words of the issue. */
  description: string;
  /** The scenario kinds whose workloads reach it. */
  kinds: Kind[];
  /** What the check that catches it says (a part of its failure message). */
  caughtBy: RegExp;
  /**
   * Within how many seeds of its kind it must be caught. A bug that needs a rare order of events (a
   * reply lost after its script ran, then the copy) is given more seeds than one every schedule meets.
   */
  within: number;
  /** Puts the bug in; returns what takes it out again. */
  install(world: World): () => void;
}

/** A mutant that rewrites the text of every script containing `find` as the servers run it. */
function scriptMutant(find: string, replace: string): (world: World) => () => void {
  return (world) => {
    for (const server of world.servers) {
      server.scriptText = (text) => {
        if (!text.includes(find)) return text;
        return text.split(find).join(replace);
      };
    }
    return () => {
      for (const server of world.servers) server.scriptText = (text) => text;
    };
  };
}

export const MUTANTS: Mutant[] = [
  {
    name: 'release-without-owner-check',
    description: 'a release deletes the lock even when its owner holds nothing in it',
    kinds: ['lock'],
    caughtBy: /held at once|owners hold it at once/,
    within: 12,
    install: scriptMutant(
      "if which == 'marked' or earlier == 'w' or not count then return nil end",
      "if not count then redis.call('del', lock) return 1 end\n  if which == 'marked' or earlier == 'w' then return nil end",
    ),
  },
  {
    name: 'lost-wake-up',
    description: 'a release of the lock does not announce itself: waiters sleep on a free lock',
    kinds: ['lock'],
    caughtBy: /lost wake-up/,
    within: 12,
    install: scriptMutant("if freed == 1 and ARGV[3] ~= 'none' then", 'if false then'),
  },
  {
    name: 'fair-queue-skips-live-waiter',
    description: 'the fair lock hands the lock to the last waiter in the queue instead of the first',
    kinds: ['fair'],
    caughtBy: /was granted at .* while .* waited/,
    within: 12,
    install: scriptMutant("head = redis.call('lindex', queue, 0)", "head = redis.call('lindex', queue, -1)"),
  },
  {
    name: 're-sent-acquire-counted-twice',
    description: 'a copy of an acquire (re-sent after a lost reply) counts a second hold',
    kinds: ['lock'],
    caughtBy: /counted twice/,
    within: 48,
    install: scriptMutant('if mark then return nil end', 'if false then return nil end'),
  },
  {
    name: 'latch-counted-down-twice',
    description: 'a countDown of a count-down latch takes two off its count: the latch opens early',
    kinds: ['latch'],
    caughtBy: /countDown calls could count it down/,
    within: 12,
    install: scriptMutant("left = redis.call('decr', KEYS[1])", "left = redis.call('decrby', KEYS[1], 2)"),
  },
  {
    name: 'budget-timer-never-set',
    description: "a client's call budgets never start their timer: calls wait for Redis for ever",
    kinds: ['lock'],
    caughtBy: /still out after|over its budget/,
    within: 12,
    install: () => {
      const prototype = Deadlines.prototype as unknown as { schedule(at: number): void };
      const original = Object.getOwnPropertyDescriptor(prototype, 'schedule') as PropertyDescriptor;
      Object.defineProperty(prototype, 'schedule', {
        configurable: true,
        writable: true,
        value: () => undefined,
      });
      return () => Object.defineProperty(prototype, 'schedule', original);
    },
  },
];

import {
  ALL_SUBJECTS,
  BASELINE,
  HANDOFF_FLOOR,
  LABELS,
  LIBRARIES,
  PEERS,
  type LibraryName,
  type Subject,
} from './adapters';
import {
  ok,
  type IdleWaiters,
  type Latency,
  type ManyLocks,
  type Outcome,
  type PairCost,
  type WatchdogScale,
} from './scenarios';
import { semaphoreTables, type SemaphoreResults } from './semaphore-scenarios';
import type { ContentionFigures } from './stats';
import { barChart } from './svg';
import { judge, verdictTable } from './targets';

export interface Results {
  date: string;
  quick: boolean;
  machine: { cpu: string; cores: number; memoryGiB: number; node: string; redis: string; os: string };
  ping: Latency;
  /** Interleaved pair by pair (older runs: each library alone, one after the other). */
  uncontended: Partial<Record<Subject, Outcome<Latency>>>;
  /** Blocks of sequential pairs per subject; absent from older runs. */
  pairCost?: Partial<Record<Subject, Outcome<PairCost>>>;
  /** Older results have no range (one run per library). */
  /** With the hand-off floor since 2026-12-06 (see bench/handoff-floor.ts). */
  contended: Partial<Record<Subject, Outcome<ContentionFigures & { range?: [number, number] }>>>;
  idleWaiters: Partial<Record<LibraryName, Outcome<IdleWaiters>>>;
  manyLocks: Partial<Record<LibraryName, Outcome<ManyLocks>>>;
  watchdog: Partial<Record<LibraryName, Outcome<WatchdogScale>>>;
  /** rlock getSemaphore next to redis-semaphore Semaphore; absent from older runs. */
  semaphores?: SemaphoreResults;
}

const num = (value: number, digits = 2): string => (Number.isFinite(value) ? value.toFixed(digits) : '–');

/** A table row per library (and the baseline where measured): its cells, or why it failed. */
function rows<T extends object>(
  outcomes: Partial<Record<Subject, Outcome<T>>>,
  columns: number,
  cells: (value: T) => string[],
): string[] {
  return ALL_SUBJECTS.filter((name) => outcomes[name] !== undefined).map((name) => {
    const outcome = outcomes[name] as Outcome<T>;
    const values =
      'failed' in outcome
        ? [`**failed:** ${outcome.failed}`, ...Array(columns - 1).fill('')]
        : cells(outcome);
    return `| ${LABELS[name]} | ${values.join(' | ')} |`;
  });
}

export function tables(results: Results): string {
  const ping = results.ping.p50;
  const x = (ms: number): string => `${num(ms / ping, 1)}x`;
  const fastestPeer = Math.min(...PEERS.map((peer) => ok(results.uncontended[peer])?.p50 ?? Infinity));
  const bestMany = Math.max(...PEERS.map((peer) => ok(results.manyLocks[peer])?.opsPerSecond ?? -Infinity));
  return [
    `PING round trip (p50 / p99): ${num(results.ping.p50, 3)} / ${num(results.ping.p99, 3)} ms — the baseline.`,
    '',
    // Runs before the side-by-side scenario measured each library alone, one after the other.
    `### Uncontended lock + unlock, ${results.pairCost ? 'interleaved pair by pair' : 'each library alone'}`,
    '',
    '| library | p50 ms | p99 ms | p50 in PINGs | p50 / fastest peer |',
    '|---|---:|---:|---:|---:|',
    ...rows(results.uncontended, 4, (v) => [
      num(v.p50, 3),
      num(v.p99, 3),
      x(v.p50),
      `${num(v.p50 / fastestPeer, 2)}x`,
    ]),
    ...(results.pairCost ? ['', ...pairCostTable(results.pairCost)] : []),
    '',
    '### Contended: 8 processes, hold 2 ms, think 1 ms',
    '',
    'The median of 3 rounds per library (and for the floor), taking turns; its slowest and fastest round in brackets.',
    ...floorNote(results),
    '',
    '| library | acq/s | % of ideal | idle gap p50 / p99 ms | wait p50 / p99 / max ms | overtakes per acq | Jain | overlaps | client / Redis CPU µs per acq |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows(results.contended, 8, (v) => [
      v.range ? `${num(v.perSecond, 0)} (${num(v.range[0], 0)}–${num(v.range[1], 0)})` : num(v.perSecond, 0),
      `${num(v.ofIdeal * 100, 0)}%`,
      `${num(v.gapP50, 2)} (${x(v.gapP50)}) / ${num(v.gapP99, 2)}`,
      `${num(v.waitP50, 1)} / ${num(v.waitP99, 1)} / ${num(v.waitMax, 0)}`,
      num(v.overtakesPerAcquisition, 2),
      num(v.jain, 3),
      String(v.overlaps),
      `${num(v.clientMicrosPerAcquisition ?? Number.NaN, 0)} / ${num(v.redisMicrosPerAcquisition ?? Number.NaN, 0)}`,
    ]),
    '',
    '### Idle waiters: 200 waiters on a held lock for a few seconds, then the release',
    '',
    'Commands as Redis counts them (INFO total_commands_processed): those a script runs count too.',
    '',
    '| library | Redis commands/s while waiting | drain all 200 after release, ms |',
    '|---|---:|---:|',
    ...rows(results.idleWaiters, 2, (v) => [num(v.commandsPerSecond, 0), num(v.drainMs, 0)]),
    '',
    '### Many locks: distinct locks acquired and released concurrently from one process',
    '',
    '| library | locks | ops/s (median of rounds) | slowest / fastest round | / best peer | client CPU µs per lock |',
    '|---|---:|---:|---:|---:|---:|',
    ...rows(results.manyLocks, 5, (v) => [
      String(v.locks),
      num(v.opsPerSecond, 0),
      v.range ? `${num(v.range[0], 0)} / ${num(v.range[1], 0)}` : '–',
      `${num(v.opsPerSecond / bestMany, 2)}x`,
      num(v.clientMicros ?? Number.NaN, 1),
    ]),
    '',
    '### Watchdog at scale: locks held with the library’s own renewal, lease 3 s',
    '',
    '| library | locks | renewal period ms | Redis commands per period | Redis CPU ms per period |',
    '|---|---:|---:|---:|---:|',
    ...rows(results.watchdog, 4, (v) => [
      String(v.locks),
      num(v.renewalPeriodMs, 0),
      num(v.commandsPerPeriod, 0),
      num(v.cpuMsPerPeriod, 1),
    ]),
    ...(results.semaphores ? ['', semaphoreTables(results.semaphores)] : []),
  ].join('\n');
}

/**
 * What the hand-off floor's row means, and rlock's fair gap against it, when the run measured it
 * (see bench/handoff-floor.ts).
 */
function floorNote(results: Results): string[] {
  const floor = ok(results.contended[HANDOFF_FLOOR]);
  if (!floor) return [];
  const fair = ok(results.contended['rlock-fair']);
  const against = fair
    ? ` ${LABELS['rlock-fair']}: gap ${num(fair.gapP50 / floor.gapP50, 2)}x the floor's, ${num(fair.perSecond / floor.perSecond, 2)}x its acq/s.`
    : '';
  return [
    '',
    `The ${LABELS[HANDOFF_FLOOR]} is not a library: a queue in Redis, a release that grants the lock to its head and ` +
      "publishes on that waiter's channel, and nothing else (no lease, no recovery). Its idle gap is what one hand-off " +
      `costs this machine: ${num(floor.gapP50 / results.ping.p50, 1)} PINGs in this run.${against}`,
  ];
}

/** What one uncontended pair costs, next to the SET NX PX + compare-and-delete pair. */
function pairCostTable(costs: Partial<Record<Subject, Outcome<PairCost>>>): string[] {
  const base = ok(costs[BASELINE]);
  const times = (value: number, baseValue: number | undefined): string =>
    baseValue === undefined ? '–' : `${num(value / baseValue, 2)}x`;
  return [
    '### Cost of one uncontended lock + unlock: blocks of sequential pairs on one connection',
    '',
    'Redis CPU: what `INFO commandstats` counts for the commands sent; server CPU: the whole',
    "redis-server process's (`INFO cpu`), reading, parsing and answering included.",
    '',
    '| library | p50 ms | p50 / baseline | Redis CPU µs | Redis CPU / baseline | server CPU µs | client CPU µs | commands sent | keys left per pair |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows(costs, 8, (v) => [
      num(v.sequentialP50, 3),
      times(v.sequentialP50, base?.sequentialP50),
      num(v.redisMicros, 1),
      times(v.redisMicros, base?.redisMicros),
      num(v.serverMicros ?? Number.NaN, 1),
      num(v.clientMicros, 0),
      num(v.commands, 1),
      num(v.keysLeft, 2),
    ]),
  ];
}

/** The hot path targets judged on this run, as a table. */
export function targetsTable(results: Results): string {
  return verdictTable(judge(results));
}

/** rlock's figures divided by the best other library's, for the headline. */
export function headline(results: Results): string[] {
  const peers = PEERS;
  const lines: string[] = [];
  // Each line: rlock's figure, the best other library's, and their ratio (above 1 favours rlock).
  const compare = (
    label: string,
    unit: string,
    mine: LibraryName,
    pick: (v: ContentionFigures) => number,
    higherIsBetter: boolean,
  ): void => {
    const own = ok(results.contended[mine]);
    const others = peers
      .map((peer) => ok(results.contended[peer]))
      .filter((v): v is ContentionFigures => !!v);
    if (!own || others.length === 0) return;
    const best = higherIsBetter ? Math.max(...others.map(pick)) : Math.min(...others.map(pick));
    const ratio = higherIsBetter ? pick(own) / best : best / pick(own);
    lines.push(
      `${LABELS[mine]}, ${label}: ${num(pick(own), 2)} ${unit} against ${num(best, 2)} for the best other library — **${num(ratio, 2)}x**`,
    );
  };
  compare('contended throughput', 'acq/s', 'rlock-fair', (v) => v.perSecond, true);
  compare('p99 wait under contention', 'ms', 'rlock-fair', (v) => v.waitP99, false);
  compare('idle gap p50 (release to next holder)', 'ms', 'rlock-fair', (v) => v.gapP50, false);
  compare('contended throughput', 'acq/s', 'rlock', (v) => v.perSecond, true);

  // Keeping 10 000 locks alive: Redis CPU per second, as each library renews on its own period.
  const cpuPerSecond = (name: LibraryName): number | undefined => {
    const v = ok(results.watchdog[name]);
    return v ? (v.cpuMsPerPeriod / v.renewalPeriodMs) * 1000 : undefined;
  };
  const own = cpuPerSecond('rlock');
  const peerCpu = peers.map(cpuPerSecond).filter((v): v is number => v !== undefined);
  if (own && peerCpu.length > 0) {
    lines.push(
      `${LABELS.rlock}, keeping 10 000 locks alive: Redis CPU ${num(own, 1)} ms/s against ${num(Math.min(...peerCpu), 1)} ms/s for the best other library — **${num(Math.min(...peerCpu) / own, 2)}x** less`,
    );
  }
  // Waiting: Redis commands per second spent on 200 idle waiters.
  const idle = (name: LibraryName): number | undefined => ok(results.idleWaiters[name])?.commandsPerSecond;
  const fairIdle = idle('rlock-fair');
  const peerIdle = peers.map(idle).filter((v): v is number => v !== undefined);
  if (fairIdle !== undefined && peerIdle.length > 0) {
    lines.push(
      `200 idle waiters cost Redis ${num(idle('rlock') ?? Number.NaN, 0)} commands/s with ${LABELS.rlock}, ${num(fairIdle, 0)} with ${LABELS['rlock-fair']}, at least ${num(Math.min(...peerIdle), 0)} with the others that finished`,
    );
  }
  return lines;
}

export function charts(results: Results): Record<string, string> {
  const contended = LIBRARIES.map((name) => ({ name, figures: ok(results.contended[name]) }));
  return {
    'benchmarks-throughput.svg': barChart({
      title: 'Contended lock: acquisitions per second (8 processes, hold 2 ms; ideal 500/s)',
      series: ['acquisitions/s'],
      unit: '/s',
      bars: contended.map(({ name, figures }) => ({
        label: LABELS[name],
        values: [figures?.perSecond ?? Number.NaN],
      })),
    }),
    'benchmarks-wait.svg': barChart({
      title: 'Contended lock: time from request to lock, per acquisition',
      series: ['p50 ms', 'p99 ms', 'max ms'],
      unit: 'ms',
      log: true,
      bars: contended.map(({ name, figures }) => ({
        label: LABELS[name],
        values: figures
          ? [figures.waitP50, figures.waitP99, figures.waitMax]
          : [Number.NaN, Number.NaN, Number.NaN],
      })),
    }),
  };
}

export function markdown(results: Results): string {
  const m = results.machine;
  return `# Benchmarks

rlock next to the libraries Node teams would otherwise pick — redlock 5 (infinite retries, its
default delays), redis-semaphore \`Mutex\` (its defaults: 10 ms polling) and node-redisson
\`getLock\` — on one fresh \`redis-server\` in one run. Every latency is also given as a multiple of a
PING round trip measured in the same run on the same kind of connection (ioredis).

![Contended throughput](benchmarks-throughput.svg)

![Contended wait times](benchmarks-wait.svg)

## Headline

${headline(results)
  .map((line) => `- ${line}`)
  .join('\n')}

## Results

Run of ${results.date}${results.quick ? ' (`--quick`: shorter runs, fewer locks)' : ''}.

${tables(results)}

### Targets

${targetsTable(results)}

## How to read it

- **Contended**: 8 worker processes, each with its own connections, loop lock → hold 2 ms → unlock →
  think 1 ms on one lock, in 3 rounds of about 3.3 s per library with the libraries taking turns
  (one 10 s run each drifted with the machine: the same build measured 285 and 367 acq/s in two
  runs); the round of median throughput is reported. A round counts only once every worker is warm:
  each first runs 500 lock + unlock pairs alone on a key of its own, then all get one start and
  compete; the first second is not counted, only the acquisitions made in the window that
  follows, so that no worker is measured while others are still starting Node on the same two
  cores. *Client / Redis CPU*: read at the window's two ends (each worker's own, and the
  redis-server process's), per acquisition in it. *Ideal* is 1 / hold = 500 acquisitions/s. *Idle gap*: from a
  release to the next acquisition, when someone was already waiting. *Wait*: from the request to the lock.
  *Overtakes*: pairs where the later request got the lock first, per acquisition (request times are
  taken in the workers, so a few ms of scheduling noise on 2 cores counts too). *Jain*: fairness of
  the workers' shares (1 = equal). *Overlaps*: holds that overlapped (must be 0). The floor of a
  direct hand-off takes its turns too (bench/handoff-floor.ts: a queue in Redis, a release script
  that grants the lock to the head and publishes on that waiter's channel, a body that starts when
  the message is read; nothing else): its gap is what one hand-off costs this machine.
- **Uncontended**: one lock + unlock of one key, nobody else around. Every library and two
  references — the baseline (\`SET NX PX\`, then a compare-and-delete script by EVALSHA: the least a
  lock can send) and the floor of Redisson's layout (a script that checks the lock and the request
  are absent and writes the owner's count, the request's mark and the lease; one that reads them,
  deletes the hash and publishes Redisson's release message: what a lock shared with Redisson and
  safe under re-sent commands costs at least, bench/layout-floor.ts) — run in one
  process, first pair by pair in turn, so that noise from other processes hits all alike; then in
  short blocks of sequential pairs on one connection, one subject at a time, the blocks interleaved
  in rounds and reported by their median. *Redis CPU*: the INFO commandstats usec of the commands
  the client sent, per pair. An EVALSHA's usec includes the commands its script runs, which
  commandstats lists as well: those are not added a second time (which commands a client sends is
  read beforehand from SLOWLOG, where a script's commands come from client "?:0"). Reading and
  writing sockets is not in it, and costs the same per command for every library. *Client CPU*:
  user + system time of the benchmark process per pair. *Keys left*: DBSIZE after a block, per
  pair (latches and other keys a release leaves behind).
- **Idle waiters**: what waiting costs Redis (polling shows here), then how fast a queue of 200 drains.
  Watched for 3 s, or for whole periods of the timer that keeps waiters alive where a library has
  one (rlock: 2 × fairLockWaitTimeout / 3, 6.7 s by default; one period with \`--quick\`).
- **Watchdog at scale**: what keeping many locks alive costs Redis; each library renews on its own
  period (rlock and node-redisson every lease / 3, redis-semaphore every 0.8 × lease, redlock
  \`using()\` when the lease is about to run out).
- **Semaphores**: rlock's \`getSemaphore\` next to redis-semaphore's \`Semaphore\` (its defaults,
  10 ms polling; \`acquireTimeout\` 120 s so every waiter gets through): 8 processes loop acquire one
  of 3 permits → hold 2 ms → release → think 1 ms (*ideal*: 3 / hold = 1 500/s; *most permits
  out* must not exceed 3), the workers warmed up, started and counted as in *Contended*; then 200
  waiters on a semaphore whose 3 permits are held, and the drain.
- **Many locks**: the libraries take turns in 5 rounds (3 with \`--quick\`), each round in a fresh
  process that first runs one whole round to warm up; the median round is reported, with the
  slowest and the fastest. Client CPU decides this figure: Redis is far from busy.
- **Targets**: the hot path limits on this run's ratios; \`npm run bench -- --check\` runs only the
  scenarios they need and exits non-zero when one is missed. *Floor, same run*: the same ratio for
  the reference that does the least a lock of its kind must (the direct hand-off for the contended
  targets, Redisson's layout with rlock's checks for the uncontended ones); where it misses the
  limit too, no lock meets that target on the run's machine, and the target still counts as missed.
- A library that fails or strands waiters in a scenario has that written in its row.

## Machine

${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB; ${m.os}; Node ${m.node}; Redis ${m.redis} on loopback.

## Rerun

\`\`\`sh
npm ci
npm run bench              # about 8 minutes
npm run bench -- --quick   # about 4.5 minutes, same shape
npm run bench -- --check   # the targets only; exits 1 when one is missed (add --quick for a fast look)
\`\`\`

It starts its own \`redis-server\` (≥ 6.2 on PATH) on a free port, writes
\`bench/results/<timestamp>.json\`, and regenerates this page and its charts.

Where the time of one lock + unlock goes, call by call (client CPU, Redis CPU, round trip), and why
the targets that are missed are missed: [hot-path.md](hot-path.md) (\`npm run bench:steps\`).
`;
}

/**
 * `npm run bench:compare -- <build> <build> ... [--rounds N] [--seconds S] [--pairs P] [--kinds
 * rlock,rlock-fair]`: builds of
 * rlock side by side in one run, for a before / after of a change or a bisect. A build is a git
 * revision (built once into a worktree under the system's temp folder, reusing this checkout's
 * node_modules) or a folder holding a built dist/index.cjs; `.` is this checkout (built first).
 *
 * Every round measures, in a rotating order so that a machine whose speed drifts weighs on every
 * subject alike: a PING p50; the contended scenario of `npm run bench` (8 processes, hold 2 ms,
 * think 1 ms) for getLock and getFairLock of each build, for redis-semaphore as the peer and for
 * the floor of a direct hand-off (bench/handoff-floor.ts: what one hand-off costs the machine); and
 * uncontended lock + unlock pairs of each, interleaved pair by pair. It prints the median of the
 * rounds, gaps also in PINGs of the same round, and each build's figures over the first build's.
 * Writes nothing.
 */
import { startRedis } from '../__tests__/helpers/redis-server';
import { HANDOFF_FLOOR, openLibrary, openSubject, type Library, type LibraryName } from './adapters';
import { distOf } from './builds';
import { now } from './clock';
import { contended, failed, pingLatency, rotated, type Settings } from './scenarios';
import { median, percentile } from './stats';

function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(name);
  return index >= 0 ? Number(process.argv[index + 1]) : fallback;
}

/** The builds named on the command line, without the options and their values. */
function buildArguments(): string[] {
  const args = process.argv.slice(2);
  return args.filter((arg, i) => !arg.startsWith('--') && !(args[i - 1] ?? '').startsWith('--'));
}

interface Subject {
  label: string;
  library: LibraryName | typeof HANDOFF_FLOOR;
  dist?: string;
  /** Builds are compared with the first build's subject of the same library. */
  build?: number;
}

interface Figures {
  perSecond: number[];
  gapMs: number[];
  gapPings: number[];
  overtakes: number[];
  clientCpu: number[];
  redisCpu: number[];
  pairMs: number[];
  pairPings: number[];
  failures: string[];
}

async function timePairs(lib: Library, pairs: number): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < pairs; i += 1) {
    const start = now();
    const release = await lib.lock('bench:compare:uncontended');
    await release();
    samples.push(now() - start);
  }
  return samples;
}

/** Uncontended pairs of every subject, interleaved pair by pair: p50 per subject, in ms. */
async function uncontendedRound(subjects: Subject[], settings: Settings, pairs: number): Promise<number[]> {
  const libs = await Promise.all(
    subjects.map((s) =>
      s.library === HANDOFF_FLOOR
        ? openSubject(s.library, settings.port)
        : openLibrary(s.library, settings.port, { build: s.dist }),
    ),
  );
  try {
    for (const lib of libs) await timePairs(lib, 200); // warm up
    const samples = libs.map((): number[] => []);
    for (let i = 0; i < pairs; i += 1) {
      for (const j of rotated(
        libs.map((_, k) => k),
        i,
      )) {
        (samples[j] as number[]).push(...(await timePairs(libs[j] as Library, 1)));
      }
    }
    return samples.map((values) => percentile(values, 50));
  } finally {
    await Promise.all(libs.map((lib) => lib.close().catch(() => undefined)));
  }
}

const fixed = (value: number, digits = 2): string => (Number.isFinite(value) ? value.toFixed(digits) : '–');

async function main(): Promise<void> {
  const builds = buildArguments();
  if (builds.length === 0) throw new Error('name at least one build: a git revision, a dist folder, or .');
  const rounds = option('--rounds', 5);
  const seconds = option('--seconds', 2);
  const pairs = option('--pairs', 1_000);
  const kindsIndex = process.argv.indexOf('--kinds');
  const kinds = (
    kindsIndex >= 0 ? (process.argv[kindsIndex + 1] as string).split(',') : ['rlock', 'rlock-fair']
  ) as ('rlock' | 'rlock-fair')[];
  const resolved = builds.map(distOf);
  const subjects: Subject[] = [
    ...resolved.flatMap(({ label, dist }, build) =>
      kinds.map((library) => ({
        label: `${library === 'rlock' ? 'getLock' : 'getFairLock'} ${label}`,
        library,
        dist,
        build,
      })),
    ),
    { label: 'redis-semaphore', library: 'redis-semaphore' },
    { label: 'hand-off floor', library: HANDOFF_FLOOR },
  ];
  const figures = subjects.map((): Figures => ({
    perSecond: [],
    gapMs: [],
    gapPings: [],
    overtakes: [],
    clientCpu: [],
    redisCpu: [],
    pairMs: [],
    pairPings: [],
    failures: [],
  }));
  const server = await startRedis();
  const admin = server.connect();
  const settings: Settings = { port: server.port, admin, quick: false };
  try {
    for (let round = 0; round < rounds; round += 1) {
      const ping = (await pingLatency({ ...settings, quick: true })).p50;
      for (const i of rotated(
        subjects.map((_, k) => k),
        round,
      )) {
        const subject = subjects[i] as Subject;
        const mine = figures[i] as Figures;
        process.stderr.write(`\r\x1b[K[compare] round ${round + 1}/${rounds}: ${subject.label}`);
        await admin.flushall();
        const outcome = await contended(subject.library, settings, seconds * 1000, subject.dist).catch(
          failed,
        );
        if ('failed' in outcome) {
          mine.failures.push(outcome.failed);
          continue;
        }
        mine.perSecond.push(outcome.perSecond);
        mine.gapMs.push(outcome.gapP50);
        mine.gapPings.push(outcome.gapP50 / ping);
        mine.overtakes.push(outcome.overtakesPerAcquisition);
        mine.clientCpu.push(outcome.clientMicrosPerAcquisition ?? Number.NaN);
        mine.redisCpu.push(outcome.redisMicrosPerAcquisition ?? Number.NaN);
      }
      await admin.flushall();
      const p50s = await uncontendedRound(subjects, settings, pairs);
      p50s.forEach((p50, i) => {
        (figures[i] as Figures).pairMs.push(p50);
        (figures[i] as Figures).pairPings.push(p50 / ping);
      });
    }
  } finally {
    admin.disconnect();
    await server.stop();
  }
  process.stderr.write('\n');
  const mid = (values: number[]): number => median(values);
  const lines = [
    `${rounds} rounds of ${seconds} s contended and ${pairs} uncontended pairs; medians (slowest–fastest round)`,
    '',
    '| subject | contended acq/s | / first build | / redis-semaphore | gap p50 ms | gap p50 PINGs | overtakes/acq | client CPU µs/acq | Redis CPU µs/acq | uncontended p50 ms | p50 PINGs | / first build |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const peer = figures[subjects.findIndex((s) => s.library === 'redis-semaphore')] as Figures;
  subjects.forEach((subject, i) => {
    const f = figures[i] as Figures;
    const first =
      subject.build === undefined
        ? undefined
        : (figures[subjects.findIndex((s) => s.library === subject.library)] as Figures);
    const range = f.perSecond.length
      ? `${fixed(Math.min(...f.perSecond), 0)}–${fixed(Math.max(...f.perSecond), 0)}`
      : '';
    lines.push(
      `| ${subject.label} | ${fixed(mid(f.perSecond), 0)} (${range}) | ${first ? fixed(mid(f.perSecond) / mid(first.perSecond)) : ''} | ${fixed(mid(f.perSecond) / mid(peer.perSecond))} | ${fixed(mid(f.gapMs))} | ${fixed(mid(f.gapPings), 1)} | ${fixed(mid(f.overtakes), 3)} | ${fixed(mid(f.clientCpu), 0)} | ${fixed(mid(f.redisCpu), 0)} | ${fixed(mid(f.pairMs), 3)} | ${fixed(mid(f.pairPings), 1)} | ${first ? fixed(mid(f.pairMs) / mid(first.pairMs)) : ''} |` +
        (f.failures.length ? ` failed ${f.failures.length}: ${f.failures[0]}` : ''),
    );
  });
  console.log(lines.join('\n'));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});

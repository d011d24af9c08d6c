/**
 * npm run sim -- --seed N [--kind K] [--mutant M]     replays one seed with its step-by-step trace
 * npm run sim -- --seeds N [--from S] [--jobs J]       runs N seeds (in J worker processes) and
 *                                                      prints the figures and every failing seed
 */
import { fork } from 'node:child_process';
import { cpus } from 'node:os';
import { MUTANTS } from './mutants';
import { runSeed, type SeedResult } from './run';
import { KINDS, type Kind } from './scenario';
import { summarize, type Summary } from './summary';

interface Args {
  seed?: number;
  seeds?: number;
  from: number;
  jobs: number;
  kind?: Kind;
  mutant?: string;
  worker?: boolean;
}

function parse(argv: string[]): Args {
  const args: Args = { from: 1, jobs: Math.max(1, cpus().length) };
  for (let i = 0; i < argv.length; i += 1) {
    const flag = argv[i];
    const value = argv[i + 1];
    const number = (): number => {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 0)
        throw new Error(`${flag} needs a whole number, got ${String(value)}`);
      i += 1;
      return n;
    };
    if (flag === '--seed') args.seed = number();
    else if (flag === '--seeds') args.seeds = number();
    else if (flag === '--from') args.from = number();
    else if (flag === '--jobs') args.jobs = Math.max(1, number());
    else if (flag === '--worker') args.worker = true;
    else if (flag === '--kind') {
      if (!KINDS.includes(value as Kind)) throw new Error(`--kind is one of ${KINDS.join(', ')}`);
      args.kind = value as Kind;
      i += 1;
    } else if (flag === '--mutant') {
      if (!MUTANTS.some((mutant) => mutant.name === value)) {
        throw new Error(`--mutant is one of ${MUTANTS.map((mutant) => mutant.name).join(', ')}`);
      }
      args.mutant = value;
      i += 1;
    } else throw new Error(`unknown argument ${String(flag)} (see the top of __tests__/sim/cli.ts)`);
  }
  return args;
}

function options(args: Args): Parameters<typeof runSeed>[1] {
  return {
    ...(args.kind ? { kind: args.kind } : {}),
    ...(args.mutant ? { mutant: MUTANTS.find((mutant) => mutant.name === args.mutant) } : {}),
  };
}

async function replay(args: Args, seed: number): Promise<number> {
  const result = await runSeed(seed, { ...options(args), trace: true });
  for (const line of result.trace) console.log(line);
  console.log('');
  console.log(`seed ${seed}: ${result.kind}, ${result.steps} steps, ${result.virtualMs} virtual ms`);
  console.log(`scenario: ${JSON.stringify(result.scenario)}`);
  console.log(`faults: ${JSON.stringify(result.faults)}`);
  console.log(`outcomes: ${JSON.stringify(result.outcomes)}`);
  if (result.failures.length === 0) console.log('every check held');
  for (const failure of result.failures) console.log(`FAILED ${failure}`);
  return result.failures.length === 0 ? 0 : 1;
}

/** A worker: runs the seeds it is sent, answers each result without its trace. */
function work(args: Args): void {
  process.on('disconnect', () => process.exit(0));
  process.on('message', (seed: number) => {
    void runSeed(seed, options(args)).then((result) => process.send?.({ ...result, trace: [], scripts: [] }));
  });
  process.send?.('ready');
}

async function search(args: Args, count: number): Promise<number> {
  const started = Date.now();
  const results: SeedResult[] = [];
  let next = args.from;
  const end = args.from + count;
  const extra = [
    ...(args.kind ? ['--kind', args.kind] : []),
    ...(args.mutant ? ['--mutant', args.mutant] : []),
  ];
  await Promise.all(
    Array.from({ length: Math.min(args.jobs, count) }, () => {
      return new Promise<void>((resolve, reject) => {
        const child = fork(__filename, ['--worker', ...extra], { execArgv: process.execArgv });
        const give = (): void => {
          if (next >= end) {
            child.kill();
            return resolve();
          }
          child.send(next);
          next += 1;
        };
        child.on('message', (message: SeedResult | 'ready') => {
          if (message !== 'ready') {
            results.push(message);
            if (message.failures.length > 0)
              console.log(`seed ${message.seed} (${message.kind}) FAILED: ${message.failures[0]}`);
            if (results.length % 500 === 0) console.log(`${results.length} seeds...`);
          }
          give();
        });
        child.on('error', reject);
        child.on('exit', (code) =>
          code === 0 || code === null ? resolve() : reject(new Error(`worker exited ${code}`)),
        );
      });
    }),
  );
  const summary: Summary = summarize(results, Date.now() - started);
  console.log(summary.text);
  return summary.failed === 0 ? 0 : 1;
}

async function main(): Promise<number> {
  const args = parse(process.argv.slice(2));
  if (args.worker) {
    work(args);
    return -1;
  }
  if (args.seed !== undefined) return replay(args, args.seed);
  return search(args, args.seeds ?? 100);
}

main().then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(2);
  },
);

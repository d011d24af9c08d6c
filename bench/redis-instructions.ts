/**
 * Instructions a redis-server spends, counted by valgrind's callgrind: a count, unlike a time,
 * comes out the same on a busy machine and a quiet one, so two steps measured minutes apart, or on
 * two machines, compare exactly. Counting runs the server some 50 times slower; only the number of
 * instructions is worth reading from it.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface InstructionCounter {
  /** The program and arguments that run redis-server under callgrind (startRedis' wrapper). */
  readonly wrapper: string[];
  /** Starts counting from zero. */
  start(pid: number): void;
  /** The instructions spent since start(). */
  stop(pid: number): number;
}

function control(pid: number, ...args: string[]): void {
  const run = spawnSync('callgrind_control', [...args, String(pid)], { encoding: 'utf8' });
  if (run.error || run.status !== 0) {
    throw new Error(`callgrind_control ${args.join(' ')} failed: ${run.error?.message ?? run.stderr}`);
  }
}

/** Throws when valgrind is missing: the count needs it, and a guess is no substitute. */
export function instructionCounter(): InstructionCounter {
  if (spawnSync('valgrind', ['--version']).status !== 0) {
    throw new Error('valgrind was not found on PATH (Debian/Ubuntu: apt-get install -y valgrind)');
  }
  const dir = mkdtempSync(join(tmpdir(), 'rlock-callgrind-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  let dumps = 0;
  return {
    // Instrumentation starts off, so the server starts and warms up at nearly full speed.
    wrapper: [
      'valgrind',
      '--tool=callgrind',
      '--instr-atstart=no',
      `--callgrind-out-file=${join(dir, 'callgrind.%p')}`,
    ],
    start(pid) {
      control(pid, '--instr=on');
      control(pid, '--zero');
    },
    stop(pid) {
      dumps += 1;
      const label = `step-${dumps}`;
      control(pid, '--dump', label);
      // Each dump is a file of its own; its `totals:` line counts every instruction since the zero.
      for (const file of readdirSync(dir)) {
        const text = readFileSync(join(dir, file), 'utf8');
        if (!text.includes(`\ndesc: Trigger: dump ${label}\n`)) continue;
        const totals = /^totals: (\d+)/m.exec(text);
        if (totals) return Number(totals[1]);
      }
      throw new Error(`callgrind wrote no dump ${label} in ${dir}`);
    },
  };
}

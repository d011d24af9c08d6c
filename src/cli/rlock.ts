#!/usr/bin/env node
/**
 * The `rlock` command: inspect, list, watch and repair locks in Redis (see `rlock --help`).
 */
import { version } from '../../package.json';
import { connect, ConnectError, type Target } from './connect';
import { describeFindings, doctor } from './doctor';
import { forceUnlock, NothingDone } from './force-unlock';
import { inspect } from './inspect';
import { describeListing, list } from './list';
import { isNoAnswer, NoAnswerError } from './no-answer';
import { HELP, parseCommandLine, UsageError, type CommandLine } from './usage';
import { watch } from './watch';

const EXIT = { done: 0, redis: 1, usage: 2, nothingDone: 3 } as const;

async function run(line: CommandLine, stop: AbortSignal): Promise<string | undefined> {
  if (line.command === 'help') return HELP;
  if (line.command === 'version') return version;
  const target = await connect(line.redis, line.keyPrefix, line.timeoutMs);
  const redis = target.connection;
  const name = line.argument as string;
  try {
    return await runOn(target, line, name, stop);
  } catch (error) {
    // ioredis says "Command timed out"; the operator is told what that means here.
    throw isNoAnswer(error) ? new NoAnswerError(target.where, line.timeoutMs) : error;
  } finally {
    redis.disconnect();
  }
}

async function runOn(
  target: Target,
  line: CommandLine,
  name: string,
  stop: AbortSignal,
): Promise<string | undefined> {
  const redis = target.connection;
  switch (line.command) {
    case 'inspect':
      return await inspect(redis, name, line.keyPrefix, line.json);
    case 'list': {
      const { locks, otherPrefixes } = await list(redis, line.argument ?? '*', line.keyPrefix, line.count);
      if (otherPrefixes.length > 0 && !line.json) {
        // Locks of services that set an ioredis keyPrefix are keys under it: say where to look.
        const where = otherPrefixes.map((prefix) => `--key-prefix '${prefix}'`).join(', ');
        process.stderr.write(`rlock: rlock clients also keep keys under a prefix; list them with ${where}\n`);
      }
      return line.json ? JSON.stringify(locks, null, 2) : describeListing(locks);
    }
    case 'watch':
      await watch(redis, name, line.keyPrefix, {
        json: line.json,
        intervalMs: line.intervalMs,
        timeoutMs: line.timeoutMs,
        stop,
        write: (text) => process.stdout.write(text),
        reconnect: async () => (await connect(line.redis, line.keyPrefix, line.timeoutMs)).connection,
      });
      return undefined;
    case 'force-unlock': {
      const unlocked = await forceUnlock(redis, name, line.keyPrefix, {
        yes: line.yes,
        json: line.json,
        timeoutMs: line.timeoutMs,
      });
      return line.json
        ? JSON.stringify(unlocked, null, 2)
        : unlocked.deleted
          ? `unlocked "${name}"; its waiters were woken`
          : `"${name}" was already free`;
    }
    case 'doctor': {
      const findings = await doctor(target);
      return line.json
        ? JSON.stringify({ where: target.where, findings }, null, 2)
        : describeFindings(findings);
    }
  }
}

/** One line for what went wrong, and the exit status it means. */
function failure(error: unknown): { message: string; status: number } {
  if (error instanceof UsageError) return { message: error.message, status: EXIT.usage };
  if (error instanceof NothingDone) return { message: error.message, status: EXIT.nothingDone };
  if (error instanceof ConnectError || error instanceof NoAnswerError) {
    return { message: error.message, status: EXIT.redis };
  }
  const text = error instanceof Error ? error.message : String(error);
  return { message: text.split('\n')[0] as string, status: EXIT.redis };
}

async function main(): Promise<void> {
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  const args = process.argv.slice(2);
  try {
    const output = await run(parseCommandLine(args, process.env), stop.signal);
    if (output !== undefined) process.stdout.write(`${output}\n`);
    process.exitCode = EXIT.done;
  } catch (error) {
    const { message, status } = failure(error);
    // A script that asked for JSON reads the failure as JSON too (even when the command line was
    // what failed to parse).
    process.stderr.write(
      args.includes('--json')
        ? `${JSON.stringify({ error: message, exitCode: status })}\n`
        : `rlock: ${message}\n`,
    );
    process.exitCode = status;
  }
}

void main();

import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const root = resolve(__dirname, '..');

export interface UserProject {
  readonly dir: string;
  remove(): void;
}

/**
 * A throwaway ES-module app outside this repository that depends on rlock the way a user's does:
 * its node_modules links to this package (so `rlock` resolves through package.json `exports` to
 * the built dist/) and to the ioredis, OpenTelemetry and Node types it was developed against.
 */
export function createUserProject(): UserProject {
  const dir = mkdtempSync(join(tmpdir(), 'rlock-app-'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  for (const [name, target] of [
    ['rlock', root],
    ['ioredis', join(root, 'node_modules', 'ioredis')],
    ['@types/node', join(root, 'node_modules', '@types', 'node')],
    // For the OpenTelemetry examples (rlock/opentelemetry).
    ['@opentelemetry/api', join(root, 'node_modules', '@opentelemetry', 'api')],
    ['@opentelemetry/sdk-metrics', join(root, 'node_modules', '@opentelemetry', 'sdk-metrics')],
  ] as const) {
    const link = join(dir, 'node_modules', name);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(target, link, 'dir');
  }
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

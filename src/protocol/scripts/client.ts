import { defineScript } from '../define-script';

/** Writes what a client says about itself (host, process, ...) with a lifetime; returns 1. */
export const announceClient = defineScript<[entry: string], [lifetimeMs: number, ...facts: string[]], 1>(
  'client/announce.lua',
);

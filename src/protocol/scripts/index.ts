/**
 * One typed function per Lua script in lua/, one file per kind of object (the fenced lock's script with the lock's); how each is sent is in
 * ../define-script.ts.
 */
export type { PublishCommand, ReleaseAnnouncement, Script } from '../define-script';
export * from './client';
export * from './expirable-semaphore';
export * from './fair';
export * from './latch';
export * from './lock';
export * from './read-write-lock';
export * from './request';
export * from './semaphore';

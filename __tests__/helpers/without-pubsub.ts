/**
 * redis-server arguments for a server without pub/sub: every pub/sub command renamed away
 * (rename-command on its command line), as the proxies and managed services the spin lock is for do.
 */
const PUBSUB_COMMANDS = [
  'PUBLISH',
  'SPUBLISH',
  'SUBSCRIBE',
  'SSUBSCRIBE',
  'PSUBSCRIBE',
  'UNSUBSCRIBE',
  'SUNSUBSCRIBE',
  'PUNSUBSCRIBE',
  'PUBSUB',
];

export const WITHOUT_PUBSUB = PUBSUB_COMMANDS.flatMap((command) => ['--rename-command', command, '']);

import type { Connection } from './connect';
import { clientIdOf, readState, type ClientEntry, type NameState } from './state';

/** `rlock inspect <name>`: the state of one name, as text or JSON. */
export async function inspect(
  redis: Connection,
  name: string,
  keyPrefix: string,
  json: boolean,
): Promise<string> {
  const state = await readState(redis, name, keyPrefix);
  return json ? JSON.stringify(state, null, 2) : describeState(state);
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** Who is behind an owner id, in words. */
export function describeOwner(ownerId: string, client: ClientEntry | undefined): string {
  if (client) {
    const who = client.label ? `${client.label}, ` : '';
    const what = [client.script, client.node && `node ${client.node}`].filter(Boolean).join(', ');
    const since = client.started ? `, since ${client.started}` : '';
    return `${who}pid ${client.pid ?? '?'} on ${client.host ?? '?'}${what ? ` (${what}${since})` : since}`;
  }
  return clientIdOf(ownerId) === undefined
    ? 'an explicit owner id'
    : 'no rlock client entry: a Redisson client, or an rlock client that has exited';
}

/** The text view of a name's state. */
export function describeState(state: NameState): string {
  const lines = [`${state.name}  ${state.kinds.length > 0 ? state.kinds.join(', ') : 'nothing here (free)'}`];
  const row = (label: string, text: string): void => {
    lines.push(`  ${label.padEnd(11)}${text}`);
  };
  if (state.mode !== undefined) row('mode', state.mode);
  if (state.ttlMs !== undefined && state.ttlMs >= -1) {
    row('ttl', state.ttlMs === -1 ? 'none (never expires)' : seconds(state.ttlMs));
  }
  if (state.kinds.includes('lock') || state.kinds.includes('read-write lock')) {
    if (state.holders.length === 0) row('held by', 'nobody');
    state.holders.forEach((holder, index) => {
      const holds = `${holder.holds} hold${holder.holds === 1 ? '' : 's'}${holder.write ? ' (write)' : ''}`;
      row(
        index === 0 ? 'held by' : '',
        `${holder.ownerId}  ${holds}  ${describeOwner(holder.ownerId, holder.client)}`,
      );
    });
  }
  if (state.counter !== undefined) row('value', `${state.counter} (available permits, or the latch's count)`);
  for (const [index, permit] of (state.expirablePermits ?? []).entries()) {
    const expiry =
      permit.expiresInMs === undefined ? 'never expires' : `returns in ${seconds(permit.expiresInMs)}`;
    row(index === 0 ? 'permits' : '', `${permit.id}  ${expiry}`);
  }
  state.queue.forEach((waiter, index) => {
    const place =
      waiter.placeExpiresInMs === undefined
        ? 'no deadline'
        : waiter.placeExpiresInMs < 0
          ? `place overdue by ${seconds(-waiter.placeExpiresInMs)} (its client stopped refreshing it)`
          : `place kept for ${seconds(waiter.placeExpiresInMs)} more`;
    const passed = waiter.passedOver ? ', passed over (its hand-off ran out unconfirmed)' : '';
    const deaf =
      waiter.hearsOn !== undefined && !state.listeners[waiter.hearsOn]
        ? ', nobody listens on its channel (a hand-off to it comes back after fairLockHandoffTimeout)'
        : '';
    row(
      index === 0 ? 'fair queue' : '',
      `${index + 1}. ${waiter.ownerId}  ${place}${passed}${deaf}  ${describeOwner(waiter.ownerId, waiter.client)}`,
    );
  });
  if (state.writerPreference) row('preference', 'writers (new readers queue behind waiting writers)');
  (state.waitingWriters ?? []).forEach((writer, index) => {
    const place =
      (writer.placeExpiresInMs ?? 0) < 0
        ? 'place lapsed'
        : `place kept for ${seconds(writer.placeExpiresInMs ?? 0)} more`;
    row(
      index === 0 ? 'writers' : '',
      `${writer.ownerId}  waiting, ${place}  ${describeOwner(writer.ownerId, writer.client)}`,
    );
  });
  if (state.handoffTo !== undefined) row('hand-off', `to ${state.handoffTo}, not confirmed yet`);
  if (state.fencingToken !== undefined) row('token', `${state.fencingToken} (the last fencing token issued)`);
  for (const [index, [channel, count]] of Object.entries(state.listeners).entries()) {
    row(index === 0 ? 'listening' : '', `${count} client${count === 1 ? '' : 's'} on ${channel}`);
  }
  return lines.join('\n');
}

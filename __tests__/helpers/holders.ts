import { isHoldMark } from '../../src/protocol/keys';

interface HashReader {
  hgetall(key: string): Promise<Record<string, string>>;
}

/** The owners of a lock hash and their hold counts, without the marks of their holds. */
export async function holdCounts(redis: HashReader, lock: string): Promise<Record<string, string>> {
  const hash = await redis.hgetall(lock);
  return Object.fromEntries(Object.entries(hash).filter(([field]) => !isHoldMark(field)));
}

/** The owner ids holding a lock (one for an exclusive lock that is held, none when free). */
export async function holderIds(redis: HashReader, lock: string): Promise<string[]> {
  return Object.keys(await holdCounts(redis, lock));
}

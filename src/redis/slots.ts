/**
 * Redis Cluster's hash slots, computed on the client: the watchdog groups its batched renewals by
 * slot (one script call may only touch one slot), and protocol/keys.ts checks that every key of a lock lands
 * in the slot of the lock's name.
 */

export const SLOT_COUNT = 16_384;

/** CRC16-CCITT (XMODEM), the checksum Redis Cluster hashes keys with. */
const CRC16_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte += 1) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
    table[byte] = crc & 0xffff;
  }
  return table;
})();

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) ^ (CRC16_TABLE[((crc >> 8) ^ byte) & 0xff] as number)) & 0xffff;
  return crc;
}

/**
 * The part of a key that Redis Cluster hashes: the text between the first '{' and the first '}'
 * after it, when that text is not empty; otherwise the whole key.
 */
export function hashTagOf(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}

export function hashSlot(key: string): number {
  return crc16(Buffer.from(hashTagOf(key) ?? key, 'utf8')) % SLOT_COUNT;
}

const tagsBySlot = new Map<number, string>();

/**
 * A short brace-free text whose slot is `slot`: the hash tag that puts keys into a slot chosen
 * by another key. Found by counting upwards, about 16 000 tries the first time for each slot.
 */
export function tagForSlot(slot: number): string {
  let tag = tagsBySlot.get(slot);
  for (let n = 0; tag === undefined; n += 1) {
    const candidate = n.toString(36);
    if (hashSlot(candidate) === slot) tag = candidate;
  }
  tagsBySlot.set(slot, tag);
  return tag;
}

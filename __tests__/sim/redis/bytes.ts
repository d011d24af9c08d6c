/**
 * The simulated server keeps strings as bytes, one per character (latin1), as Redis keeps bytes.
 * Clients speak JavaScript strings, which ioredis sends as UTF-8 and reads back as UTF-8: these
 * two turn one into the other at the connection (for ASCII, the text itself).
 */
export function toBytes(text: string): string {
  // eslint-disable-next-line no-control-regex
  return /^[\x00-\x7f]*$/.test(text) ? text : Buffer.from(text, 'utf8').toString('latin1');
}

export function fromBytes(bytes: string): string {
  // eslint-disable-next-line no-control-regex
  return /^[\x00-\x7f]*$/.test(bytes) ? bytes : Buffer.from(bytes, 'latin1').toString('utf8');
}

import { LockOwnerMap, type PerLockOwner } from '../../src/ownership/lock-owner-map';

class Value implements PerLockOwner<Value> {
  nextOwner: Value | undefined = undefined;
  constructor(
    readonly ownerId: string,
    readonly label = ownerId,
  ) {}
}

const labels = (values: Value[]): string[] => values.map((value) => value.label).sort();

describe('LockOwnerMap (values per lock and owner, without key strings)', () => {
  test('finds each owner of each lock, and nothing for an owner or lock it does not have', () => {
    const map = new LockOwnerMap<Value>();
    map.set('orders', new Value('a'));
    map.set('orders', new Value('b'));
    map.set('orders', new Value('c'));
    map.set('stock', new Value('a', 'stock-a'));
    expect(map.get('orders', 'a')?.label).toBe('a');
    expect(map.get('orders', 'b')?.label).toBe('b');
    expect(map.get('orders', 'c')?.label).toBe('c');
    expect(map.get('stock', 'a')?.label).toBe('stock-a');
    expect(map.get('stock', 'b')).toBeUndefined();
    expect(map.get('payments', 'a')).toBeUndefined();
    expect(labels(map.ofLock('orders'))).toEqual(['a', 'b', 'c']);
    expect(labels(map.values())).toEqual(['a', 'b', 'c', 'stock-a']);
  });

  test('a value set for an owner replaces the one it had, wherever it stood in the list', () => {
    const map = new LockOwnerMap<Value>();
    const first = new Value('a', 'first a');
    const middle = new Value('b', 'first b');
    map.set('orders', first);
    map.set('orders', middle);
    map.set('orders', new Value('c'));
    map.set('orders', new Value('b', 'second b'));
    map.set('orders', new Value('a', 'second a'));
    expect(labels(map.ofLock('orders'))).toEqual(['c', 'second a', 'second b']);
    // The replaced values link to nothing any more (they would keep others alive).
    expect(first.nextOwner).toBeUndefined();
    expect(middle.nextOwner).toBeUndefined();
  });

  test('delete removes only the value stored, from the head, the middle or the end of a list', () => {
    const map = new LockOwnerMap<Value>();
    const [a, b, c] = [new Value('a'), new Value('b'), new Value('c')];
    for (const value of [a, b, c]) map.set('orders', value);
    expect(map.delete('orders', new Value('b'))).toBe(false);
    expect(map.delete('orders', b)).toBe(true);
    expect(labels(map.ofLock('orders'))).toEqual(['a', 'c']);
    expect(map.delete('orders', b)).toBe(false);
    expect(map.delete('orders', a)).toBe(true);
    expect(map.get('orders', 'c')).toBe(c);
    expect(map.delete('orders', c)).toBe(true);
    expect(map.ofLock('orders')).toEqual([]);
    expect(map.values()).toEqual([]);
    expect(map.get('orders', 'c')).toBeUndefined();
  });
});

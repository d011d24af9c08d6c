/** A value kept per (lock, owner): it links to the next owner's value of the same lock. */
export interface PerLockOwner<T> {
  readonly ownerId: string;
  nextOwner: T | undefined;
}

/**
 * Values per (lock name, owner id), found without making a key string. A key made of both names
 * is a new string per lookup, which the map must then hash in full; the names themselves are
 * strings the lock handle keeps, hashed once. Most locks have one owner in a process at a time, so
 * the values of one lock form a short list.
 */
export class LockOwnerMap<T extends PerLockOwner<T>> {
  private readonly byName = new Map<string, T>();

  get(name: string, ownerId: string): T | undefined {
    let value = this.byName.get(name);
    while (value !== undefined && value.ownerId !== ownerId) value = value.nextOwner;
    return value;
  }

  /** Stores `value` for (name, value.ownerId), in place of what was there. */
  set(name: string, value: T): void {
    const first = this.byName.get(name);
    if (first === undefined || first.ownerId === value.ownerId) {
      value.nextOwner = first?.nextOwner;
      if (first !== undefined && first !== value) first.nextOwner = undefined;
      this.byName.set(name, value);
      return;
    }
    let previous = first;
    while (previous.nextOwner !== undefined && previous.nextOwner.ownerId !== value.ownerId) {
      previous = previous.nextOwner;
    }
    const replaced = previous.nextOwner;
    value.nextOwner = replaced?.nextOwner;
    if (replaced !== undefined && replaced !== value) replaced.nextOwner = undefined;
    previous.nextOwner = value;
  }

  /** Removes `value` if it is the one stored for its (name, owner); true when it was. */
  delete(name: string, value: T): boolean {
    const first = this.byName.get(name);
    if (first === value) {
      if (value.nextOwner === undefined) this.byName.delete(name);
      else this.byName.set(name, value.nextOwner);
      value.nextOwner = undefined;
      return true;
    }
    for (let previous = first; previous !== undefined; previous = previous.nextOwner) {
      if (previous.nextOwner === value) {
        previous.nextOwner = value.nextOwner;
        value.nextOwner = undefined;
        return true;
      }
    }
    return false;
  }

  /** The values of every owner of lock `name`. */
  ofLock(name: string): T[] {
    const found: T[] = [];
    for (let value = this.byName.get(name); value !== undefined; value = value.nextOwner) found.push(value);
    return found;
  }

  values(): T[] {
    const found: T[] = [];
    for (const first of this.byName.values()) {
      for (let value: T | undefined = first; value !== undefined; value = value.nextOwner) found.push(value);
    }
    return found;
  }
}

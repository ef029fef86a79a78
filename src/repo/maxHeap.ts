/** A binary max-heap: the walks of history that take commits by decreasing generation. */
export class MaxHeap<T> {
  private readonly items: T[] = [];

  constructor(private readonly compare: (a: T, b: T) => number) {}

  get size(): number {
    return this.items.length;
  }

  /** The items, in no particular order (not to be changed). */
  peekAll(): readonly T[] {
    return this.items;
  }

  push(item: T): void {
    const items = this.items;
    items.push(item);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.compare(items[i], items[parent]) <= 0) break;
      [items[i], items[parent]] = [items[parent], items[i]];
      i = parent;
    }
  }

  pop(): T | undefined {
    const items = this.items;
    if (items.length === 0) return undefined;
    const top = items[0];
    const last = items.pop()!;
    if (items.length > 0) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let largest = i;
        if (left < items.length && this.compare(items[left], items[largest]) > 0) largest = left;
        if (right < items.length && this.compare(items[right], items[largest]) > 0) largest = right;
        if (largest === i) break;
        [items[i], items[largest]] = [items[largest], items[i]];
        i = largest;
      }
    }
    return top;
  }
}

// The owner tokens a service released itself, so restore (and release by owner) can answer
// ALREADY_RELEASED rather than NOT_FOUND. Every release records one and only those two rare
// calls read, so the record is a ring: a release costs one array store (no hashing, no set
// growing and being replaced), and a read scans the ring, which next to the backend round trip
// of a restore is nothing.

/** How many released owner tokens are remembered: the latest this many releases. */
const REMEMBERED = 2_048;

/** A bounded memory of released owner tokens. */
export class ReleasedOwners {
  readonly #ring: (string | undefined)[] = new Array<string | undefined>(REMEMBERED).fill(undefined);
  #next = 0;

  /** Remembers that `owner`'s lock was released here. */
  add(owner: string): void {
    this.#ring[this.#next] = owner;
    this.#next = (this.#next + 1) % REMEMBERED;
  }

  /** Whether `owner`'s lock was released here recently (the last 2,048 releases). */
  has(owner: string): boolean {
    return this.#ring.includes(owner);
  }
}

// The owner tokens a service released itself, so restore can answer ALREADY_RELEASED rather
// than NOT_FOUND. Bounded, in two generations (the current one becomes the old one when full):
// a release costs one Set add and nothing is ever deleted one by one.

/** How many released owner tokens are remembered at least (at most twice this). */
const GENERATION = 1_024;

/** A bounded memory of released owner tokens. */
export class ReleasedOwners {
  #current = new Set<string>();
  #before = new Set<string>();

  /** Remembers that `owner`'s lock was released here. */
  add(owner: string): void {
    if (this.#current.size >= GENERATION) {
      this.#before = this.#current;
      this.#current = new Set();
    }
    this.#current.add(owner);
  }

  /** Whether `owner`'s lock was released here recently (the last 1,024 releases at least). */
  has(owner: string): boolean {
    return this.#current.has(owner) || this.#before.has(owner);
  }
}

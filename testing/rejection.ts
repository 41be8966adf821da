// What a call rejected with, for the contract cases that check a code.
import { LockhostError } from "../kit/errors.js";

/** The LockhostError `p` rejects with; throws when it resolves or rejects with something else. */
export async function rejection(p: Promise<unknown>): Promise<LockhostError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof LockhostError) return err;
    throw err;
  }
  throw new Error("expected a rejection");
}

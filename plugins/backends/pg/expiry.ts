// Moved to host/locking/deadline-queue.ts (the renewal manager uses the same queue).
export * from "../../../host/locking/deadline-queue.js";

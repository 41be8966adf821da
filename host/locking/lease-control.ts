// The one holder of the LeaseControl: the modules of host/locking change leases through it, and
// nothing outside host/locking may import this file (host/index.ts does not export it).
import { takeLeaseControl, type LeaseControl } from "./lease.js";

/** Internal to host/locking: changes a Lease's state, deadline, keepalive flag and renewal slot. */
export const leases: LeaseControl = takeLeaseControl();

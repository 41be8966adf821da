// The http capability's host side: what the ABI glue and the config schema import.
export type { GuestHttpRequest, GuestHttpResponse, HttpClient, HttpGrant, HttpRequestOptions } from "./types.js";
export { createHttpClient } from "./client.js";
export { hostPatternProblem } from "./host-pattern.js";
export { cidrProblem } from "./address-policy.js";
export { headerProblem, methodProblem, HOST_CONTROLLED_HEADERS } from "./header-rules.js";
export { MAX_GUEST_HEADERS } from "./guest-request.js";
export { HTTP_SCHEMA, type HttpInput } from "./config.js";

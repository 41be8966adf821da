// The admin listener's route list (docs/operators.md), written from its route table
// (host/admin/routes.ts): method, path, who may use it, and what it answers.
import { markdownTable } from "./blocks.js";
import { ADMIN_ROUTES, type RouteAccess } from "../admin/routes.js";

const WHO: Record<RouteAccess, string> = {
  open: "anyone",
  read: 'the token with `auth = "all"`, else anyone',
  metrics: 'the token with `auth = "all"` unless `metrics_open`, else anyone',
  write: "the token",
};

/** The routes as a Markdown table. */
export function adminRoutesTable(): string {
  return markdownTable(
    ["route", "who", "what"],
    ADMIN_ROUTES.map((r) => [`\`${r.method} ${r.path}\``, WHO[r.access], r.doc.replaceAll("|", "\\|")]),
  );
}

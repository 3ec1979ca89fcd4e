// My string: what the service allots you (CPUs and memory at once, disk for kept results)
// and what you use of it now (GET /users/me).

import { words } from "./api.js";
import { byId, bytes, fillRows, say } from "./dom.js";

function limit(value, format) {
  return value === null || value === undefined ? "no limit" : format(value);
}

export function meView(ctx) {
  const message = byId("me-message");
  const tbody = byId("me-table").querySelector("tbody");
  const queued = byId("me-queued");
  const cpus = (value) => `${value} CPU${Number(value) === 1 ? "" : "s"}`;

  return {
    async show() {
      say(message, "");
      try {
        const me = await ctx.api.json("users/me");
        const quota = me.quota || {};
        const usage = me.usage || {};
        fillRows(tbody, [
          ["CPUs", limit(quota.cpus, cpus), cpus(usage.cpus ?? 0)],
          ["Memory", limit(quota.memory, bytes), bytes(usage.memory ?? 0)],
          ["Disk (kept results)", limit(quota.disk, bytes), bytes(usage.disk ?? 0)],
        ], (row) => row);
        queued.textContent = `${usage.runs_queued ?? 0} of your runs wait in the queue.`;
      } catch (error) {
        say(message, words(error), "error");
      }
    },
  };
}

// My string: what the service allots you (CPUs and memory at once, disk for kept results)
// and what you use of it now (GET /users/me); and your personal tokens (/users/me/tokens):
// make one (its secret shown once, here), list them, revoke one.

import { words } from "./api.js";
import { byId, bytes, fillRows, h, say } from "./dom.js";

function tokensPart(ctx) {
  const tbody = byId("token-table").querySelector("tbody");
  const made = byId("token-made");

  async function revoke(token) {
    try {
      await ctx.api.json(`users/me/tokens/${encodeURIComponent(token.id)}`, { method: "DELETE" });
      say(made, `Revoked ${token.name}.`);
      await list();
    } catch (error) {
      say(made, words(error), "error");
    }
  }

  async function list() {
    const { tokens } = await ctx.api.json("users/me/tokens");
    fillRows(tbody, tokens, (token) => [
      token.name,
      h("code", { text: token.id }),
      token.expires.slice(0, 10),
      token.revoked ? "revoked" : "active",
      token.revoked ? "" : h("button", { type: "button", class: "revoke", text: "Revoke", onclick: () => revoke(token) }),
    ], null, "No personal tokens yet.");
  }

  byId("token-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = byId("token-name").value.trim();
    const days = Number(byId("token-days").value);
    try {
      const token = await ctx.api.json("users/me/tokens", { method: "POST", json: { name, days } });
      say(made, "");
      made.append("Your new token (shown this once): ", h("code", { id: "token-secret", text: token.token }));
      byId("token-name").value = "";
      await list();
    } catch (error) {
      say(made, words(error), "error");
    }
  });
  return list;
}

function limit(value, format) {
  return value === null || value === undefined ? "no limit" : format(value);
}

export function meView(ctx) {
  const message = byId("me-message");
  const tbody = byId("me-table").querySelector("tbody");
  const queued = byId("me-queued");
  const cpus = (value) => `${value} CPU${Number(value) === 1 ? "" : "s"}`;
  const listTokens = tokensPart(ctx);

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
        await listTokens();
      } catch (error) {
        say(message, words(error), "error");
      }
    },
  };
}

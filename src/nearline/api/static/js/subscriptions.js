// Subscriptions: an algorithm run on the granules the current search finds as they are
// ingested, by a policy (each granule, batches of N, or once per period with a deadline).
// Listed, made, opened (its jobs and the granules it still waits for) and removed.

import { words } from "./api.js";
import { byId, clear, fillRows, h, pairs, say, shown, when } from "./dom.js";
import { dataInputs, inputSearch, parameterFields } from "./forms.js";
import { describeSearch } from "./search.js";

export function describePolicy(policy) {
  if (!policy) return "—";
  if (policy.each !== undefined) return "each granule";
  if (policy.batch !== undefined) return `batches of ${policy.batch}`;
  if (policy.period !== undefined) {
    return `once per ${policy.period}${policy.deadline ? `, deadline ${policy.deadline}` : ""}`;
  }
  return JSON.stringify(policy);
}

function radio(name, value, label, checked = false) {
  return h("label", { class: "check" }, h("input", { type: "radio", name, value, checked }), ` ${label}`);
}

export function subscriptionsView(ctx) {
  const message = byId("subscriptions-message");
  const tbody = byId("subscription-list").querySelector("tbody");
  const formPanel = byId("subscribe");
  const panel = byId("subscription");

  async function refresh() {
    try {
      const answer = await ctx.api.json("subscriptions");
      fillRows(
        tbody,
        answer.subscriptions || [],
        (item) => [item.id, item.process, item.input, describePolicy(item.policy), describeSearch(item.search), when(item.created)],
        (item) => open(item.id),
        "No subscriptions yet.",
      );
    } catch (error) {
      say(message, words(error), "error");
    }
  }

  async function buildForm(chosen) {
    clear(formPanel).append(h("h2", { text: "Subscribe" }));
    let processes = [];
    try {
      processes = (await ctx.api.json("processes")).processes || [];
    } catch (error) {
      formPanel.append(h("p", { class: "message error", text: words(error) }));
      return;
    }
    const select = h("select", { id: "subscribe-process" }, processes.map((p) => h("option", { value: p.id, text: `${p.id} ${p.version ?? ""}` })));
    if (chosen && processes.some((p) => p.id === chosen)) select.value = chosen;
    const details = h("div");
    const status = h("p", { class: "message", role: "alert" });
    const batch = h("input", { type: "number", min: 1, step: 1, value: "10", name: "batch-size" });
    const period = h("input", { type: "text", value: "P1D", name: "period", size: 6 });
    const deadline = h("input", { type: "text", value: "PT6H", name: "deadline", size: 6 });
    const form = h(
      "form",
      { id: "subscribe-form" },
      h("label", {}, "Algorithm ", select),
      details,
      h(
        "fieldset",
        {},
        h("legend", { text: "When to run" }),
        radio("policy", "each", "on each new granule", true),
        h("label", { class: "check" }, h("input", { type: "radio", name: "policy", value: "batch" }), " in batches of ", batch, " granules"),
        h(
          "label",
          { class: "check" },
          h("input", { type: "radio", name: "policy", value: "period" }),
          " once per ",
          period,
          " of data, deadline ",
          deadline,
        ),
      ),
      h("p", { class: "hint", text: `Granules: the current search (${describeSearch(ctx.state.search)}).` }),
      h("button", { type: "submit", disabled: processes.length === 0 }, "Subscribe"),
      status,
    );
    formPanel.append(processes.length ? form : h("p", { text: "No algorithms to subscribe to yet." }));
    let current = null;
    let asked = 0; // the latest choice: an earlier answer arriving late must not add its fields too

    async function describe() {
      const mine = ++asked;
      clear(details);
      current = null;
      try {
        const description = await ctx.api.json(`processes/${encodeURIComponent(select.value)}`);
        if (mine !== asked) return;
        const inputs = dataInputs(description);
        const input = h("select", { id: "subscribe-input" }, inputs.map(([name, spec]) => h("option", { value: name, text: `${name} (${spec["nearline:collection"]})` })));
        const parameters = parameterFields(description);
        details.append(h("label", {}, "Input ", input), parameters.element);
        current = { description, inputs, input, parameters };
      } catch (error) {
        if (mine === asked) details.append(h("p", { class: "message error", text: words(error) }));
      }
    }

    select.addEventListener("change", describe);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (!current) return;
      let body;
      try {
        const name = current.input.value;
        const spec = Object.fromEntries(current.inputs)[name];
        const kind = form.querySelector("input[name=policy]:checked").value;
        const policy =
          kind === "each"
            ? { each: 1 }
            : kind === "batch"
              ? { batch: Number(batch.value) }
              : { period: period.value.trim(), ...(deadline.value.trim() ? { deadline: deadline.value.trim() } : {}) };
        body = {
          process: current.description.id,
          input: name,
          search: inputSearch(spec["nearline:collection"], ctx.state.search),
          parameters: current.parameters.values(),
          policy,
        };
      } catch (error) {
        say(status, error.message, "error");
        return;
      }
      say(status, "Subscribing…");
      try {
        const made = await ctx.api.json("subscriptions", { method: "POST", json: body });
        say(status, `Subscribed: ${made.id}.`);
        await refresh();
        show(made);
      } catch (error) {
        say(status, words(error), "error");
      }
    });
    if (processes.length) await describe();
  }

  async function open(id) {
    try {
      show(await ctx.api.json(`subscriptions/${encodeURIComponent(id)}`));
    } catch (error) {
      say(message, words(error), "error");
    }
  }

  function show(item) {
    const status = h("p", { class: "message", role: "status" });
    const runs = item.runs || [];
    const waiting = item.waiting || [];
    clear(panel).hidden = false;
    panel.append(
      h(
        "div",
        { class: "row" },
        h("h2", { text: `Subscription ${item.id}` }),
        h("button", { type: "button", onclick: () => open(item.id) }, "Refresh"),
        h("button", { type: "button", class: "remove", onclick: () => remove(item.id, status) }, "Remove"),
      ),
      pairs([
        ["Algorithm", `${item.process}${item.version ? ` ${item.version}` : " (newest version)"}`],
        ["Input", item.input],
        ["Granules", describeSearch(item.search)],
        ["Parameters", shown(item.parameters)],
        ["When", describePolicy(item.policy)],
        ["Backfill", item.backfill ?? "—"],
        ["Created", when(item.created)],
      ]),
      status,
      h("h3", { text: "Jobs it made" }),
      h(
        "table",
        { class: "list runs" },
        h("thead", {}, h("tr", {}, ["Job", "Kind", "Status", "Granules", "Created", "Note"].map((t) => h("th", { text: t })))),
        h(
          "tbody",
          {},
          runs.length === 0
            ? h("tr", { class: "empty" }, h("td", { colSpan: 6, text: "No jobs yet." }))
            : runs.map((run) =>
                h(
                  "tr",
                  {},
                  h("td", {}, h("button", { type: "button", class: "link", onclick: () => ctx.go("jobs", { job: run.jobID }) }, run.jobID)),
                  h("td", { text: run.kind ?? "" }),
                  h("td", { text: run.status ?? "" }),
                  h("td", { text: (run.granules || []).join(", ") }),
                  h("td", { text: when(run.created) }),
                  h("td", { text: run.note ?? run.message ?? "" }),
                ),
              ),
        ),
      ),
      h("h3", { text: "Granules it waits for" }),
      waiting.length === 0
        ? h("p", { text: "None: every granule it matched has gone to a job." })
        : h(
            "ul",
            { class: "waiting" },
            waiting.map((group) =>
              h("li", {}, (group.granules || []).join(", "), group.until ? `: ${group.until}` : ""),
            ),
          ),
    );
  }

  async function remove(id, status) {
    say(status, "Removing…");
    try {
      await ctx.api.json(`subscriptions/${encodeURIComponent(id)}`, { method: "DELETE" });
      panel.hidden = true;
      say(message, `Removed subscription ${id}; its jobs stay.`);
      await refresh();
    } catch (error) {
      say(status, words(error), "error");
    }
  }

  return {
    async show(arg) {
      say(message, "");
      await Promise.all([refresh(), buildForm(arg && arg.process)]);
      if (arg && arg.subscription) await open(arg.subscription);
    },
  };
}

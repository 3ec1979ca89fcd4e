// Algorithms: the processes you may run (yours, and the public ones), one described (its data
// inputs, parameters and outputs), deploying a package zip, and the order form made from a
// process's description (POST .../execution with Prefer: respond-async).

import { words } from "./api.js";
import { byId, clear, fillRows, h, pairs, say, shown } from "./dom.js";
import { dataInputField, dataInputs, isDataInput, parameterFields } from "./forms.js";

function visibility(process) {
  if (process["nearline:public"] === undefined) return "—";
  return process["nearline:public"] ? "public" : "private";
}

export function processesView(ctx) {
  const message = byId("processes-message");
  const tbody = byId("process-list").querySelector("tbody");
  const panel = byId("process");
  const orderPanel = byId("order");
  const deployMessage = byId("deploy-message");

  async function refresh() {
    try {
      const answer = await ctx.api.json("processes");
      fillRows(
        tbody,
        answer.processes || [],
        (process) => [process.id, process.version ?? "", process.title ?? "", visibility(process)],
        (process) => describe(process.id),
        "No algorithms yet: deploy one.",
      );
    } catch (error) {
      say(message, words(error), "error");
    }
  }

  async function describe(id) {
    orderPanel.hidden = true;
    let description;
    try {
      description = await ctx.api.json(`processes/${encodeURIComponent(id)}`);
    } catch (error) {
      say(message, words(error), "error");
      return;
    }
    const inputs = Object.entries(description.inputs || {});
    clear(panel).hidden = false;
    panel.append(
      h(
        "div",
        { class: "row" },
        h("h2", { text: `${description.title || description.id} ${description.version ?? ""}` }),
        h("button", { type: "button", class: "order", onclick: () => orderForm(description) }, "Order…"),
        h(
          "button",
          { type: "button", class: "subscribe", onclick: () => ctx.go("subscriptions", { process: description.id }) },
          "Subscribe…",
        ),
      ),
      h("p", { text: description.description || "" }),
      pairs([
        ["Id", description.id],
        ["Visibility", visibility(description)],
        ["Owner", description["nearline:owner"] ?? "someone else (or the service)"],
        ["Outputs go to", description["nearline:collection"] ?? "—"],
      ]),
      h("h3", { text: "Data inputs" }),
      h(
        "ul",
        {},
        inputs
          .filter(([, input]) => isDataInput(input))
          .map(([name, input]) => h("li", {}, h("strong", { text: name }), `: ${input.description || ""}`)),
      ),
      h("h3", { text: "Parameters" }),
      h(
        "table",
        { class: "list parameters" },
        h("thead", {}, h("tr", {}, ["Name", "Type", "Default", "Choices", "Description"].map((t) => h("th", { text: t })))),
        h(
          "tbody",
          {},
          inputs
            .filter(([, input]) => !isDataInput(input))
            .map(([name, input]) => {
              const schema = input.schema || {};
              return h(
                "tr",
                {},
                h("td", { text: name }),
                h("td", { text: schema.type ?? "any" }),
                h("td", { text: schema.default === undefined ? "—" : shown(schema.default) }),
                h("td", { text: Array.isArray(schema.enum) ? schema.enum.map(shown).join(", ") : "" }),
                h("td", { text: input.description || "" }),
              );
            }),
        ),
      ),
      h("h3", { text: "Outputs" }),
      h(
        "ul",
        {},
        Object.entries(description.outputs || {}).map(([name, output]) =>
          h("li", {}, h("strong", { text: name }), `: ${output.title || ""} ${output.description || ""}`),
        ),
      ),
    );
  }

  function orderForm(description) {
    const fields = dataInputs(description).map(([name, input]) => [name, dataInputField(ctx, name, input)]);
    const parameters = parameterFields(description);
    const status = h("p", { class: "message", role: "alert" });
    const form = h(
      "form",
      { id: "order-form" },
      h("h2", { text: `Order ${description.title || description.id}` }),
      fields.map(([, field]) => field.element),
      parameters.element,
      h("button", { type: "submit" }, "Order"),
      status,
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      let inputs;
      try {
        inputs = Object.fromEntries(fields.map(([name, field]) => [name, field.value()]));
        Object.assign(inputs, parameters.values());
      } catch (error) {
        say(status, error.message, "error");
        return;
      }
      say(status, "Ordering…");
      try {
        const job = await ctx.api.json(`processes/${encodeURIComponent(description.id)}/execution`, {
          method: "POST",
          json: { inputs },
          headers: { Prefer: "respond-async" },
        });
        say(status, `Ordered: job ${job.jobID}.`);
        ctx.go("jobs", { job: job.jobID });
      } catch (error) {
        say(status, words(error), "error");
      }
    });
    clear(orderPanel).hidden = false;
    orderPanel.append(form);
    orderPanel.scrollIntoView({ block: "nearest" });
  }

  byId("deploy-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const file = byId("deploy-file").files[0];
    if (!file) {
      say(deployMessage, "Choose a zip first.", "error");
      return;
    }
    const public_ = byId("deploy-public").checked;
    say(deployMessage, `Deploying ${file.name}: the service builds it and runs its tests…`);
    try {
      const process = await ctx.api.json(`processes${public_ ? "?public=true" : ""}`, {
        method: "POST",
        body: file,
        headers: { "Content-Type": "application/zip" },
      });
      say(deployMessage, `Deployed ${process.id} ${process.version ?? ""}.`);
      event.target.reset();
      await refresh();
    } catch (error) {
      say(deployMessage, words(error), "error");
    }
  });

  return {
    async show() {
      say(message, "");
      await refresh();
    },
  };
}

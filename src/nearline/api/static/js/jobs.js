// Jobs: your jobs, newest first, and one watched while it goes: its status and progress, each
// run's station, why it waits and what it used, every station's queue (everyone's runs), the
// runs' logs, its results to download once it has succeeded, and dismissing it.

import { download, words } from "./api.js";
import { byId, bytes, clear, fillRows, h, pairs, say, seconds, when } from "./dom.js";

const ENDED = ["successful", "failed", "dismissed"];
const POLL_MS = 1000;

function usageCells(usage) {
  if (!usage) return ["—", "—", "—", "—", "—"];
  return [
    seconds(usage.cpu_seconds),
    bytes(usage.peak_memory),
    bytes(usage.bytes_read),
    bytes(usage.bytes_written),
    seconds(usage.wall_seconds),
  ];
}

export function jobsView(ctx) {
  const message = byId("jobs-message");
  const tbody = byId("job-list").querySelector("tbody");
  const panel = byId("job");
  let watched = null; // the job id shown, while its view is open
  let timer = null;

  async function refresh() {
    try {
      const answer = await ctx.api.json("jobs");
      fillRows(
        tbody,
        answer.jobs || [],
        (job) => [
          job.jobID,
          `${job.processID} ${job["nearline:version"] ?? ""}`,
          h("span", { class: `status ${job.status}`, text: job.status }),
          `${job.progress ?? 0}%`,
          when(job.created),
          job.message ?? "",
        ],
        (job) => ctx.go("jobs", { job: job.jobID }),
        "No jobs yet: order an algorithm.",
      );
    } catch (error) {
      say(message, words(error), "error");
    }
  }

  function stop() {
    clearTimeout(timer);
    timer = null;
    watched = null;
  }

  async function watch(id) {
    stop();
    watched = id;
    clear(panel).hidden = false;
    panel.append(h("p", { text: `Job ${id}…` }));
    await poll(id);
  }

  async function poll(id) {
    if (watched !== id) return;
    let job;
    let logs = "";
    try {
      job = await ctx.api.json(`jobs/${encodeURIComponent(id)}`);
      logs = await ctx.api.text(`jobs/${encodeURIComponent(id)}/logs`);
    } catch (error) {
      if (watched === id) clear(panel).append(h("p", { class: "message error", text: words(error) }));
      return;
    }
    if (watched !== id) return;
    let results = null;
    if (job.status === "successful") {
      try {
        results = await ctx.api.json(`jobs/${encodeURIComponent(id)}/results`);
      } catch (error) {
        results = words(error);
      }
    }
    render(job, logs, results);
    if (!ENDED.includes(job.status)) timer = setTimeout(() => poll(id), POLL_MS);
    else refresh();
  }

  function render(job, logs, results) {
    const status = h("p", { class: "message", role: "status" });
    const runs = job["nearline:runs"] || [];
    const stations = Object.entries(job["nearline:stations"] || {});
    clear(panel).append(
      h(
        "div",
        { class: "row" },
        h("h2", { text: `Job ${job.jobID}` }),
        job.status === "dismissed"
          ? null
          : h(
              "button",
              { type: "button", class: "dismiss", onclick: () => dismiss(job.jobID, status) },
              ENDED.includes(job.status) ? "Dismiss (deletes its results)" : "Dismiss",
            ),
        h("button", { type: "button", onclick: () => ctx.go("jobs") }, "Close"),
      ),
      pairs([
        ["Algorithm", `${job.processID} ${job["nearline:version"] ?? ""}`],
        ["Status", h("span", { class: `status ${job.status}`, id: "job-status", text: job.status })],
        ["Progress", h("span", {}, h("progress", { max: 100, value: job.progress ?? 0 }), ` ${job.progress ?? 0}%`)],
        ["Message", job.message ?? ""],
        ["Created", when(job.created)],
        ["Started", when(job.started)],
        ["Finished", when(job.finished)],
      ]),
      status,
      h("h3", { text: "Runs" }),
      h(
        "table",
        { class: "list runs" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["Run", "Station", "Waiting for", "Message", "Tries", "Inputs", "CPU", "Peak memory", "Read", "Written", "Wall"].map(
              (title) => h("th", { text: title }),
            ),
          ),
        ),
        h(
          "tbody",
          {},
          runs.map((run) =>
            h(
              "tr",
              {},
              [
                String(run.index),
                h("span", { class: `station ${run.station}`, text: run.station }),
                run.waiting ?? "",
                run.message ?? "",
                String(run.attempts ?? ""),
                String((run.inputs || []).length),
                ...usageCells(run.usage),
              ].map((cell) => h("td", {}, cell)),
            ),
          ),
        ),
      ),
      h("p", {}, "All runs: ", usageLine(job["nearline:usage"])),
      h("h3", { text: "Stations (everyone's runs)" }),
      h(
        "table",
        { class: "list stations" },
        h("thead", {}, h("tr", {}, stations.map(([name]) => h("th", { text: name })))),
        h("tbody", {}, h("tr", {}, stations.map(([, count]) => h("td", { text: String(count) })))),
      ),
      h("h3", { text: "Results" }),
      resultsList(results, status),
      h("h3", { text: "Logs" }),
      h("pre", { class: "logs", text: logs || "(nothing printed yet)" }),
    );
  }

  function usageLine(usage) {
    const [cpu, memory, read, written, wall] = usageCells(usage);
    return `CPU ${cpu}, peak memory ${memory}, read ${read}, written ${written}, wall ${wall}.`;
  }

  function resultsList(results, status) {
    if (results === null) return h("p", { text: "Results come once the job has succeeded." });
    if (typeof results === "string") return h("p", { class: "message error", text: results });
    const entries = Object.entries(results).flatMap(([output, links]) => links.map((link) => [output, link]));
    if (entries.length === 0) return h("p", { text: "The job made no files." });
    return h(
      "table",
      { class: "list results" },
      h("thead", {}, h("tr", {}, ["Output", "File", "Type", "Size", ""].map((t) => h("th", { text: t })))),
      h(
        "tbody",
        {},
        entries.map(([output, link]) =>
          h(
            "tr",
            {},
            h("td", { text: output }),
            h("td", { text: link.title ?? "" }),
            h("td", { text: link.type ?? "" }),
            h("td", { text: bytes(link["file:size"]) }),
            h("td", {}, h("button", { type: "button", class: "download", onclick: () => save(link.href, status) }, "Download")),
          ),
        ),
      ),
    );
  }

  async function save(href, status) {
    say(status, "Downloading…");
    try {
      say(status, `Saved ${await download(ctx.api, href)}.`);
    } catch (error) {
      say(status, words(error), "error");
    }
  }

  async function dismiss(id, status) {
    say(status, "Dismissing…");
    try {
      await ctx.api.json(`jobs/${encodeURIComponent(id)}`, { method: "DELETE" });
      say(status, "Dismissed.");
      ctx.go("jobs");
    } catch (error) {
      say(status, words(error), "error");
    }
  }

  return {
    async show(arg) {
      say(message, "");
      await refresh();
      if (arg && arg.job) await watch(arg.job);
      else {
        stop();
        panel.hidden = true;
      }
    },
    hide: stop,
  };
}

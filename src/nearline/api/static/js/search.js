// Search: the catalogue on a map. A box dragged on the map or typed, a time range and a
// collection make a STAC search (GET /search); results are listed and their footprints drawn,
// page by page along the `next` links; an item opens with its properties, assets and, where
// it has an image asset, a quicklook.

import { download, words } from "./api.js";
import { byId, bytes, clear, fillRows, h, pairs, say, shown, when } from "./dom.js";
import { compositeLayer } from "./composite.js";
import { WorldMap } from "./map.js";

const BOX = ["west", "south", "east", "north"];
const IMAGE_TYPES = ["image/png", "image/jpeg", "image/webp", "image/gif"];

/** A datetime-local value ("2012-12-12T00:00" or with seconds) as RFC 3339 UTC. */
function utc(value) {
  if (!value) return "..";
  return `${value.length === 16 ? `${value}:00` : value}Z`;
}

/** The STAC datetime of a from/to pair, open at an end left empty (or none at all). */
export function interval(from, to) {
  if (!from && !to) return null;
  return `${utc(from)}/${utc(to)}`;
}

/** What a search asks, in words. */
export function describeSearch(search) {
  if (!search) return "no search yet";
  const parts = [search.collections.length ? search.collections.join(", ") : "every collection"];
  parts.push(search.bbox ? `box ${search.bbox.join(", ")}` : "the whole world");
  if (search.datetime) parts.push(search.datetime);
  return parts.join("; ");
}

export function searchView(ctx) {
  const message = byId("search-message");
  const summary = byId("search-summary");
  const tbody = byId("search-results").querySelector("tbody");
  const itemPanel = byId("item");
  const previous = byId("search-previous");
  const next = byId("search-next");
  const select = byId("search-collection");
  const inputs = Object.fromEntries(BOX.map((side) => [side, byId(`bbox-${side}`)]));
  let pages = []; // the URLs of the pages seen, the shown one last
  let page = { features: [], links: [] };

  const map = new WorldMap(byId("map"), {
    image: "world.png",
    onBox: (bbox) => {
      BOX.forEach((side, index) => {
        inputs[side].value = bbox[index];
      });
      search();
    },
    onPick: (index) => openItem(index),
  });
  const composite = compositeLayer(ctx, map);

  function typedBox() {
    const values = BOX.map((side) => inputs[side].value.trim());
    if (values.every((value) => value === "")) return null;
    if (values.some((value) => value === "")) throw new Error("give all four sides of the box, or none");
    const box = values.map(Number);
    if (box.some((value) => !Number.isFinite(value))) throw new Error("the box's sides are numbers");
    return box;
  }

  for (const input of Object.values(inputs)) {
    input.addEventListener("change", () => {
      try {
        map.setBox(typedBox());
      } catch {
        map.setBox(null);
      }
    });
  }

  byId("bbox-clear").addEventListener("click", () => {
    for (const input of Object.values(inputs)) input.value = "";
    map.setBox(null);
  });

  byId("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    search();
  });

  previous.addEventListener("click", () => {
    if (pages.length > 1) {
      pages.pop();
      show(pages.pop());
    }
  });

  next.addEventListener("click", () => {
    const link = page.links.find((candidate) => candidate.rel === "next");
    if (link) show(link.href);
  });

  async function search() {
    say(message, "");
    let bbox;
    try {
      bbox = typedBox();
    } catch (error) {
      say(message, `The box: ${error.message}.`, "error");
      return;
    }
    map.setBox(bbox);
    const collections = select.value ? [select.value] : [];
    const datetime = interval(byId("search-from").value, byId("search-to").value);
    ctx.state.search = { collections, bbox, datetime };
    const url = ctx.api.url("search");
    if (collections.length) url.searchParams.set("collections", collections.join(","));
    if (bbox) url.searchParams.set("bbox", bbox.join(","));
    if (datetime) url.searchParams.set("datetime", datetime);
    url.searchParams.set("limit", byId("search-limit").value);
    pages = [];
    await show(url.href);
  }

  async function show(href) {
    summary.textContent = "Searching…";
    try {
      page = await ctx.api.json(href);
    } catch (error) {
      say(message, words(error), "error");
      summary.textContent = "The search failed.";
      return;
    }
    pages.push(href);
    const items = page.features || [];
    const first = (pages.length - 1) * Number(byId("search-limit").value);
    summary.textContent = items.length
      ? `Items ${first + 1} to ${first + items.length}${page.numberMatched ? ` of ${page.numberMatched}` : ""}.`
      : "No items match this search.";
    fillRows(
      tbody,
      items,
      (item) => [
        item.id,
        shown(item.properties?.title ?? ""),
        item.collection ?? "—",
        when(item.properties?.start_datetime ?? item.properties?.datetime),
        when(item.properties?.end_datetime),
      ],
      (item) => openItem(items.indexOf(item)),
      "No items match this search.",
    );
    map.setFootprints(items);
    previous.hidden = pages.length < 2;
    next.hidden = !page.links?.some((link) => link.rel === "next");
    itemPanel.hidden = true;
  }

  async function openItem(index) {
    const item = (page.features || [])[index];
    if (!item) return;
    map.highlight(index);
    for (const [row, tr] of [...tbody.rows].entries()) tr.classList.toggle("selected", row === index);
    clear(itemPanel).hidden = false;
    const status = h("p", { class: "message", role: "status" });
    const assets = Object.entries(item.assets || {});
    itemPanel.append(
      h("div", { class: "row" }, h("h2", { text: item.id }), h("button", { type: "button", onclick: close }, "Close")),
      h("p", {}, `Collection ${item.collection ?? "—"}; bbox ${shown(item.bbox)}`),
      h("div", { class: "quicklook" }),
      h("h3", { text: "Assets" }),
      h(
        "table",
        { class: "list" },
        h("thead", {}, h("tr", {}, ["Key", "Title", "Type", "Roles", "Size", ""].map((t) => h("th", { text: t })))),
        h(
          "tbody",
          {},
          assets.map(([key, asset]) =>
            h(
              "tr",
              {},
              h("td", { text: key }),
              h("td", { text: asset.title ?? "" }),
              h("td", { text: asset.type ?? "" }),
              h("td", { text: (asset.roles || []).join(", ") }),
              h("td", { text: bytes(asset["file:size"]) }),
              h(
                "td",
                {},
                h("button", { type: "button", class: "download", onclick: () => save(asset.href, status) }, "Download"),
              ),
            ),
          ),
        ),
      ),
      status,
      h("h3", { text: "Properties" }),
      pairs(Object.entries(item.properties || {}).map(([name, value]) => [name, shown(value)])),
    );
    itemPanel.scrollIntoView({ block: "nearest" });
    const look = assets.find(([, asset]) => IMAGE_TYPES.includes(asset.type) || (asset.roles || []).includes("thumbnail"));
    if (look) quicklook(look[1], itemPanel.querySelector(".quicklook"));
  }

  function close() {
    itemPanel.hidden = true;
    map.highlight(null);
  }

  async function quicklook(asset, frame) {
    try {
      const { blob } = await ctx.api.blob(asset.href);
      const picture = h("img", { alt: `Quicklook: ${asset.title ?? asset.href}` });
      picture.src = URL.createObjectURL(blob);
      picture.addEventListener("load", () => URL.revokeObjectURL(picture.src), { once: true });
      frame.append(picture);
    } catch (error) {
      frame.append(h("p", { class: "message error", text: `No quicklook: ${words(error)}` }));
    }
  }

  async function save(href, status) {
    say(status, "Downloading…");
    try {
      say(status, `Saved ${await download(ctx.api, href)}.`);
    } catch (error) {
      say(status, words(error), "error");
    }
  }

  return {
    async show() {
      try {
        const answer = await ctx.api.json("collections");
        const chosen = select.value;
        clear(select).append(h("option", { value: "", text: "every collection" }));
        for (const collection of answer.collections || []) {
          const label = collection.title && collection.title !== collection.id ? `${collection.title} (${collection.id})` : collection.id;
          select.append(h("option", { value: collection.id, text: label }));
        }
        if ([...select.options].some((option) => option.value === chosen)) select.value = chosen;
        composite.offer(answer.collections || []);
      } catch (error) {
        say(message, words(error), "error");
      }
    },
  };
}

// The day's composite under the footprints: a gridded collection's map tiles (OGC API -
// Tiles, WorldCRS84Quad, whose degrees are the map's own) fetched with the token and laid on
// the map, switchable by day and band; the legend gives the bands and the colours' range.

import { words } from "./api.js";
import { byId, clear, h, say } from "./dom.js";

const TILESETS = "http://www.opengis.net/def/rel/ogc/1.0/tilesets-map";
const MATRIX = 1; // WorldCRS84Quad's matrix 1: 4 x 2 tiles of 90 degrees, 1024 x 512 pixels
const COLUMNS = 4;
const ROWS = 2;
const SPAN = 90; // degrees a tile of that matrix spans

/** The ids of the collections that have map tiles, from /collections' documents. */
export function griddedCollections(collections) {
  return collections.filter((c) => (c.links || []).some((link) => link.rel === TILESETS));
}

export function compositeLayer(ctx, map) {
  const select = byId("composite-collection");
  const day = byId("composite-day");
  const band = byId("composite-band");
  const message = byId("composite-message");
  let drawn = 0; // which drawing is the latest: an older one's tiles are dropped

  for (const input of [select, day, band]) input.addEventListener("change", () => draw());

  async function draw() {
    const shown = ++drawn;
    say(message, "");
    if (!select.value) {
      map.setTiles([], "");
      return;
    }
    const base = `collections/${encodeURIComponent(select.value)}/map`;
    const query = { datetime: day.value || null, band: band.value || null };
    try {
      const legend = await ctx.api.json(`${base}/legend`, { query });
      fillBands(legend.bands, legend.band);
      const tiles = [];
      for (let row = 0; row < ROWS; row++) {
        for (let col = 0; col < COLUMNS; col++) {
          const path = `${base}/tiles/WorldCRS84Quad/${MATRIX}/${row}/${col}`;
          tiles.push(
            ctx.api.blob(ctx.api.url(path) + search(query)).then(({ blob }) => ({
              href: URL.createObjectURL(blob),
              west: -180 + col * SPAN,
              north: 90 - row * SPAN,
              span: SPAN,
            })),
          );
        }
      }
      const ready = await Promise.all(tiles);
      if (shown !== drawn) return ready.forEach((tile) => URL.revokeObjectURL(tile.href));
      map.setTiles(ready, [select.value, day.value, legend.band].join("|"));
      say(message, `${legend.title}: ${legend.range[0]} to ${legend.range[1]} ${legend.units}, ${legend.colormap}.`);
    } catch (error) {
      if (shown === drawn) {
        map.setTiles([], "");
        say(message, words(error), "error");
      }
    }
  }

  function fillBands(bands, chosen) {
    clear(band);
    for (const name of bands) band.append(h("option", { value: name, text: name }));
    band.value = chosen;
  }

  return {
    /** Offer the gridded ones of these collections (the search view's list). */
    offer(collections) {
      const chosen = select.value;
      clear(select).append(h("option", { value: "", text: "none" }));
      for (const collection of griddedCollections(collections)) {
        select.append(h("option", { value: collection.id, text: collection.title || collection.id }));
      }
      if ([...select.options].some((option) => option.value === chosen)) select.value = chosen;
    },
  };
}

function search(query) {
  const params = new URLSearchParams(Object.entries(query).filter(([, value]) => value));
  const text = params.toString();
  return text ? `?${text}` : "";
}

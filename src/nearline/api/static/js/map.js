// The world map: the server's equirectangular land and sea image under an SVG in degrees
// (x = longitude, y = -latitude), where footprints and the search box are drawn. A box is
// drawn by dragging; a click on a footprint picks its item.

import { s } from "./dom.js";

const DRAG_MIN = 0.5; // degrees: a smaller drag is a click

function round(value) {
  return Math.round(value * 100) / 100;
}

/** Longitudes of a ring made continuous (no jump over 180°), for a ring that was not split.
 * In a split footprint a step along the cut (from one side of ±180 to the other) or along a
 * pole (a polar cap's edge, which is a line on this map) is the map's own edge: drawn as it
 * is, not unwrapped. */
function unwrap(ring) {
  const out = [];
  let shift = 0;
  let previous = null;
  let previousLat = null;
  for (const [lon, lat] of ring) {
    const alongCut = Math.abs(previous) === 180 && Math.abs(lon) === 180;
    const alongPole = Math.abs(previousLat) === 90 && previousLat === lat;
    if (previous !== null && !alongCut && !alongPole) {
      if (lon - previous > 180) shift -= 360;
      else if (previous - lon > 180) shift += 360;
    }
    out.push([lon + shift, lat]);
    previous = lon;
    previousLat = lat;
  }
  return out;
}

function ringPath(ring, offset) {
  return (
    ring.map(([lon, lat], index) => `${index ? "L" : "M"}${round(lon + offset)},${round(-lat)}`).join("") + "Z"
  );
}

/** The SVG path data of a GeoJSON Polygon or MultiPolygon; a ring crossing 180° unsplit is
 * drawn on both sides. */
export function geometryPath(geometry) {
  if (!geometry) return "";
  let polygons = [];
  if (geometry.type === "Polygon") polygons = [geometry.coordinates];
  else if (geometry.type === "MultiPolygon") polygons = geometry.coordinates;
  const parts = [];
  for (const polygon of polygons) {
    for (const raw of polygon) {
      const ring = unwrap(raw);
      const lons = ring.map(([lon]) => lon);
      parts.push(ringPath(ring, 0));
      if (Math.max(...lons) > 180) parts.push(ringPath(ring, -360));
      if (Math.min(...lons) < -180) parts.push(ringPath(ring, 360));
    }
  }
  return parts.join("");
}

export class WorldMap {
  constructor(container, { image, onBox, onPick }) {
    this.onBox = onBox;
    this.onPick = onPick;
    const picture = document.createElement("img");
    picture.src = image;
    picture.alt = "World map: land and sea";
    picture.draggable = false;
    this.svg = s("svg", {
      viewBox: "-180 -90 360 180",
      preserveAspectRatio: "none",
      role: "img",
      "aria-label": "Footprints and search box",
    });
    this.tiles = s("g", { class: "tiles" }); // a composite's map tiles, under everything
    this.svg.append(this.tiles, this.graticule());
    this.footprints = s("g", { class: "footprints" });
    this.box = s("g", { class: "box" });
    this.svg.append(this.footprints, this.box);
    container.append(picture, this.svg);
    this.svg.addEventListener("pointerdown", (event) => this.start(event));
    this.svg.addEventListener("pointermove", (event) => this.move(event));
    this.svg.addEventListener("pointerup", (event) => this.end(event));
  }

  graticule() {
    const group = s("g", { class: "graticule" });
    for (let lon = -150; lon < 180; lon += 30) group.append(s("line", { x1: lon, y1: -90, x2: lon, y2: 90 }));
    for (let lat = -60; lat <= 60; lat += 30) {
      group.append(s("line", { x1: -180, y1: lat, x2: 180, y2: lat, class: lat === 0 ? "equator" : null }));
    }
    return group;
  }

  /** Degrees under a pointer event. */
  where(event) {
    const frame = this.svg.getBoundingClientRect();
    const lon = -180 + (360 * (event.clientX - frame.left)) / frame.width;
    const lat = 90 - (180 * (event.clientY - frame.top)) / frame.height;
    return [Math.min(180, Math.max(-180, lon)), Math.min(90, Math.max(-90, lat))];
  }

  start(event) {
    if (event.button !== 0) return;
    this.drag = { from: this.where(event), target: event.target };
    this.svg.setPointerCapture(event.pointerId);
    event.preventDefault();
  }

  move(event) {
    if (!this.drag) return;
    this.drag.to = this.where(event);
    const box = this.dragged();
    if (box) this.setBox(box);
  }

  end(event) {
    if (!this.drag) return;
    this.drag.to = this.where(event);
    const box = this.dragged();
    const { target } = this.drag;
    this.drag = null;
    if (box) this.onBox(box);
    else if (target.dataset && target.dataset.index) this.onPick(Number(target.dataset.index));
  }

  dragged() {
    const { from, to } = this.drag;
    if (!to || Math.abs(to[0] - from[0]) < DRAG_MIN || Math.abs(to[1] - from[1]) < DRAG_MIN) return null;
    return [
      round(Math.min(from[0], to[0])),
      round(Math.min(from[1], to[1])),
      round(Math.max(from[0], to[0])),
      round(Math.max(from[1], to[1])),
    ];
  }

  /** Draw the search box [west, south, east, north] (west > east: two pieces), or none. */
  setBox(bbox) {
    this.box.replaceChildren();
    if (!bbox) return;
    const [west, south, east, north] = bbox;
    const spans = west <= east ? [[west, east]] : [[west, 180], [-180, east]];
    for (const [from, to] of spans) {
      this.box.append(s("rect", { x: from, y: -north, width: to - from, height: north - south }));
    }
  }

  /** Lay map tiles on the map: each {href, west, north, span} an image `span` degrees wide
   * and high from its north-west corner (blob URLs: the ones laid before are revoked);
   * `shows` says what they show (the layer's data-shows). */
  setTiles(tiles, shows) {
    this.tiles.dataset.shows = shows;
    for (const image of this.tiles.querySelectorAll("image")) URL.revokeObjectURL(image.getAttribute("href"));
    this.tiles.replaceChildren(
      ...tiles.map(({ href, west, north, span }) =>
        s("image", { href, x: west, y: -north, width: span, height: span, preserveAspectRatio: "none" }),
      ),
    );
  }

  /** Draw each item's footprint (one path per item, tagged with its id and place in the list). */
  setFootprints(items) {
    this.footprints.replaceChildren();
    for (const [index, item] of items.entries()) {
      const d = geometryPath(item.geometry);
      if (!d) continue;
      const path = s("path", { d, class: "footprint", "fill-rule": "evenodd" });
      path.dataset.item = item.id;
      path.dataset.index = String(index);
      path.append(s("title", {}, item.id));
      this.footprints.append(path);
    }
  }

  /** Mark the footprint of the item at `index` in the list (null: none). */
  highlight(index) {
    for (const path of this.footprints.querySelectorAll("path")) {
      path.classList.toggle("selected", path.dataset.index === String(index));
    }
  }
}

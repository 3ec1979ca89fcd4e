// Building the page from data without ever parsing it as HTML: every value the API gives
// (item ids, titles, messages: users write them) goes in as text, through textContent or
// text nodes, never through the HTML parser.

const SVG_NS = "http://www.w3.org/2000/svg";

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function apply(node, props) {
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") {
      node.addEventListener(key.slice(2), value);
    } else if (key in node && !key.includes("-") && typeof value !== "string") {
      node[key] = value; // properties such as checked, disabled, value
    } else node.setAttribute(key, value === true ? "" : String(value));
  }
  return node;
}

/** An HTML element: h("td", {class: "x"}, "text", otherNode). */
export function h(tag, props, ...children) {
  return append(apply(document.createElement(tag), props), children);
}

/** An SVG element with attributes. */
export function s(tag, attributes, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attributes || {})) {
    if (value !== null && value !== undefined) node.setAttribute(key, String(value));
  }
  return append(node, children);
}

export function clear(node) {
  node.replaceChildren();
  return node;
}

export function byId(id) {
  const node = document.getElementById(id);
  if (!node) throw new Error(`the page has no #${id}`);
  return node;
}

/** Put `message` in a message element; `kind` "error" colours it. */
export function say(node, message, kind = "info") {
  node.textContent = message || "";
  node.classList.toggle("error", kind === "error" && Boolean(message));
}

/** Fill a table body with rows; `onOpen(row)` makes each row a button. */
export function fillRows(tbody, rows, cells, onOpen, empty = "Nothing here yet.") {
  clear(tbody);
  if (rows.length === 0) {
    const columns = tbody.closest("table").querySelectorAll("thead th").length || 1;
    tbody.append(h("tr", { class: "empty" }, h("td", { colSpan: columns, text: empty })));
    return;
  }
  for (const row of rows) {
    const tr = h("tr", {}, cells(row).map((cell) => h("td", {}, cell)));
    if (onOpen) {
      tr.classList.add("open");
      tr.tabIndex = 0;
      tr.addEventListener("click", () => onOpen(row));
      tr.addEventListener("keydown", (event) => {
        if (event.key === "Enter") onOpen(row);
      });
    }
    tbody.append(tr);
  }
}

/** A two-column table of name and value. */
export function pairs(entries, className = "pairs") {
  return h(
    "table",
    { class: className },
    h("tbody", {}, entries.map(([name, value]) => h("tr", {}, h("th", { text: name }), h("td", {}, value)))),
  );
}

export function bytes(count) {
  if (count === null || count === undefined) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = Number(count);
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

export function seconds(value) {
  return value === null || value === undefined ? "—" : `${Number(value).toFixed(2)} s`;
}

/** A time as the API gives it (RFC 3339), shown short and in UTC. */
export function when(stamp) {
  if (!stamp) return "—";
  return String(stamp).replace("T", " ").replace(/(\.\d+)?(Z|\+00:00)$/, "Z");
}

/** Any JSON value in words: strings as they are, the rest as compact JSON. */
export function shown(value) {
  if (value === null || value === undefined) return "—";
  if (typeof value === "string") return value;
  return JSON.stringify(value);
}

// Forms made from a process description: its data inputs (granules, by the current search or
// by item ids) and its parameters (each a JSON Schema: enum → a choice, numbers, strings,
// booleans, defaults filled in). Shared by orders and subscriptions.

import { h } from "./dom.js";
import { describeSearch } from "./search.js";

export function isDataInput(input) {
  return Boolean(input && input["nearline:collection"]);
}

export function dataInputs(description) {
  return Object.entries(description.inputs || {}).filter(([, input]) => isDataInput(input));
}

function parameterField(name, input) {
  const schema = input.schema || {};
  const required = (input.minOccurs ?? 0) > 0;
  const hasDefault = schema.default !== undefined;
  const label = `${input.title || name}${required ? " (required)" : ""}`;
  const note = [input.description, schema.minimum !== undefined ? `at least ${schema.minimum}` : null,
    schema.maximum !== undefined ? `at most ${schema.maximum}` : null].filter(Boolean).join("; ");
  let control;
  let read;
  if (Array.isArray(schema.enum)) {
    control = h("select", { name });
    if (!required && !hasDefault) control.append(h("option", { value: "", text: "(not given)" }));
    schema.enum.forEach((choice, index) => {
      control.append(h("option", { value: String(index), text: typeof choice === "string" ? choice : JSON.stringify(choice) }));
    });
    if (hasDefault) {
      const at = schema.enum.findIndex((choice) => JSON.stringify(choice) === JSON.stringify(schema.default));
      if (at >= 0) control.value = String(at);
    }
    read = () => (control.value === "" ? undefined : schema.enum[Number(control.value)]);
  } else if (schema.type === "number" || schema.type === "integer") {
    control = h("input", { name, type: "number", step: schema.type === "integer" ? "1" : "any" });
    if (schema.minimum !== undefined) control.min = String(schema.minimum);
    if (schema.maximum !== undefined) control.max = String(schema.maximum);
    if (hasDefault) control.value = String(schema.default);
    read = () => {
      if (control.value.trim() === "") return undefined;
      const value = Number(control.value);
      if (!Number.isFinite(value) || (schema.type === "integer" && !Number.isInteger(value))) {
        throw new Error(`${name}: expected ${schema.type === "integer" ? "a whole number" : "a number"}`);
      }
      return value;
    };
  } else if (schema.type === "boolean") {
    control = h("input", { name, type: "checkbox" });
    control.checked = Boolean(schema.default);
    read = () => control.checked;
  } else if (schema.type === "string" || schema.type === undefined) {
    control = h("input", { name, type: "text" });
    if (hasDefault) control.value = String(schema.default);
    read = () => (control.value === "" ? undefined : control.value);
  } else {
    control = h("textarea", { name, rows: 2, placeholder: `JSON (${schema.type})` });
    if (hasDefault) control.value = JSON.stringify(schema.default);
    read = () => {
      if (control.value.trim() === "") return undefined;
      try {
        return JSON.parse(control.value);
      } catch {
        throw new Error(`${name}: expected JSON`);
      }
    };
  }
  const element = h("label", { class: "parameter" }, h("span", { text: label }), control, note ? h("small", { text: note }) : null);
  return {
    element,
    value() {
      const value = read();
      if (value === undefined && required) throw new Error(`${name} is required`);
      return value;
    },
  };
}

/** The parameters' fields: `element` to show, `values()` the chosen ones (throws on a bad one). */
export function parameterFields(description) {
  const fields = Object.entries(description.inputs || {})
    .filter(([, input]) => !isDataInput(input))
    .map(([name, input]) => [name, parameterField(name, input)]);
  const element = h(
    "fieldset",
    { class: "parameters" },
    h("legend", { text: "Parameters" }),
    fields.length ? fields.map(([, field]) => field.element) : h("p", { text: "This algorithm takes no parameters." }),
  );
  return {
    element,
    values() {
      const chosen = {};
      for (const [name, field] of fields) {
        const value = field.value();
        if (value !== undefined) chosen[name] = value;
      }
      return chosen;
    },
  };
}

/** A data input's search: the current search, limited to the input's collection. */
export function inputSearch(collection, search) {
  const body = { collections: [collection] };
  if (search && search.bbox) body.bbox = search.bbox;
  if (search && search.datetime) body.datetime = search.datetime;
  return body;
}

/** The field of one data input: granules by the current search, or by item ids. */
export function dataInputField(ctx, name, input) {
  const collection = input["nearline:collection"];
  const counts = input["nearline:granules"] || {};
  const most = counts.max === null || counts.max === undefined ? "no maximum" : `at most ${counts.max}`;
  const bySearch = h("input", { type: "radio", name: `source-${name}`, value: "search", checked: true });
  const byIds = h("input", { type: "radio", name: `source-${name}`, value: "ids" });
  const ids = h("textarea", { rows: 2, placeholder: "item ids, separated by spaces or commas", name: `ids-${name}` });
  ids.addEventListener("focus", () => {
    byIds.checked = true;
  });
  const element = h(
    "fieldset",
    { class: "data-input" },
    h("legend", { text: `${name}: granules of ${collection} (${counts.min ?? 1} or more a run, ${most})` }),
    h("label", { class: "check" }, bySearch, ` the current search (${describeSearch(ctx.state.search)}), in ${collection}`),
    h("label", { class: "check" }, byIds, " these items:"),
    ids,
  );
  return {
    element,
    value() {
      if (bySearch.checked) return inputSearch(collection, ctx.state.search);
      const named = ids.value.split(/[\s,]+/).filter(Boolean);
      if (named.length === 0) throw new Error(`${name}: name at least one item`);
      return { collections: [collection], ids: named };
    },
  };
}

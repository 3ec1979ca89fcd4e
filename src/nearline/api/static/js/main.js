// The page: sign in through the operator's OpenID Connect provider (the server runs the code
// flow and hands the page a token of this sign-in once, through POST signin/session) or with
// a pasted token; the token is kept in this tab's sessionStorage and sent only in the
// Authorization header. Then one view at a time, chosen by the address's #fragment:
// #search, #processes, #jobs[/ID], #subscriptions[/ID], #me.

import { Api, ApiError, words } from "./api.js";
import { byId, say } from "./dom.js";
import { jobsView } from "./jobs.js";
import { meView } from "./me.js";
import { processesView } from "./processes.js";
import { searchView } from "./search.js";
import { subscriptionsView } from "./subscriptions.js";

const TOKEN_KEY = "nearline-token";
const ROOT = new URL("../", window.location.href).href; // the page is served at ROOT + "app/"

const ctx = {
  api: null,
  state: { search: null },
  go,
};
const views = {
  search: searchView(ctx),
  processes: processesView(ctx),
  jobs: jobsView(ctx),
  subscriptions: subscriptionsView(ctx),
  me: meView(ctx),
};
let current = null;
let pending = null; // what go() passes to the next view beyond its #fragment

function fragment(view, arg) {
  if (view === "jobs" && arg && arg.job) return `#jobs/${encodeURIComponent(arg.job)}`;
  if (view === "subscriptions" && arg && arg.subscription) {
    return `#subscriptions/${encodeURIComponent(arg.subscription)}`;
  }
  return `#${view}`;
}

/** Open `view` with `arg` ({job}, {subscription} or {process}). */
function go(view, arg = null) {
  pending = arg;
  const target = fragment(view, arg);
  if (window.location.hash === target) route();
  else window.location.hash = target;
}

function showSection(name) {
  for (const section of document.querySelectorAll("main > section")) {
    section.hidden = section.id !== `view-${name}`;
  }
  for (const link of document.querySelectorAll("#nav a")) {
    if (link.dataset.view === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

async function route() {
  if (!ctx.api) {
    showSection("signin");
    return;
  }
  const [name, id] = window.location.hash.slice(1).split("/");
  const view = name in views ? name : "search";
  let arg = pending;
  pending = null;
  if (!arg && id) arg = view === "jobs" ? { job: decodeURIComponent(id) } : { subscription: decodeURIComponent(id) };
  if (current && current !== view && views[current].hide) views[current].hide();
  current = view;
  showSection(view);
  await views[view].show(arg);
}

function signedOut(message) {
  ctx.api = null;
  sessionStorage.removeItem(TOKEN_KEY);
  if (current && views[current].hide) views[current].hide();
  current = null;
  byId("nav").hidden = true;
  byId("who").hidden = true;
  byId("signin-token").value = "";
  say(byId("signin-message"), message, message ? "error" : "info");
  showSection("signin");
}

async function signIn(token) {
  const api = new Api(ROOT, token, {
    onUnauthorized: () => signedOut("Your token is no longer accepted: sign in again."),
  });
  let me;
  try {
    me = await new Api(ROOT, token).json("users/me");
  } catch (error) {
    const refused = error instanceof ApiError && error.status === 401;
    say(byId("signin-message"), refused ? `That token was refused (${error.words}).` : words(error), "error");
    sessionStorage.removeItem(TOKEN_KEY);
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  ctx.api = api;
  say(byId("signin-message"), "");
  byId("who-name").textContent = `Signed in as ${me.name}`;
  byId("who").hidden = false;
  byId("nav").hidden = false;
  await route();
}

byId("signin-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = byId("signin-token").value.trim();
  if (token) signIn(token);
});
/** The token of a provider sign-in that has just come back to the page, if one has. */
async function providerSession() {
  try {
    const answer = await fetch(new URL("signin/session", ROOT), { method: "POST", credentials: "same-origin" });
    return answer.ok ? (await answer.json()).token : null;
  } catch {
    return null;
  }
}

/** Show the "Sign in" button when the service has a provider. */
async function offerProvider() {
  try {
    const answer = await fetch(new URL("signin/config", ROOT), { credentials: "omit" });
    byId("signin-provider").hidden = !answer.ok;
  } catch {
    byId("signin-provider").hidden = true;
  }
}

/** Sign out: the service revokes this sign-in's token; then the provider ends its session. */
async function signOut() {
  let ended = null;
  try {
    ended = await ctx.api.json("signout", { method: "POST" });
  } catch {
    ended = null;
  }
  signedOut("");
  if (ended && ended.end_session) window.location.assign(ended.end_session);
}

byId("sign-out").addEventListener("click", () => signOut());
window.addEventListener("hashchange", () => route());

async function start() {
  offerProvider();
  const token = (await providerSession()) || sessionStorage.getItem(TOKEN_KEY);
  if (token) await signIn(token);
  else await route();
}
start();

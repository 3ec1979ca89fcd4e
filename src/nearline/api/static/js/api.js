// The service's API, called with the user's token in the Authorization header (never in a
// URL). Errors come back as OGC exception documents; ApiError carries their words.

export class ApiError extends Error {
  constructor(status, title, detail) {
    super(detail || title || `the service answered ${status}`);
    this.status = status;
    this.title = title;
    this.detail = detail;
  }

  /** The error as a user should read it. */
  get words() {
    if (this.status === 0) return this.message;
    const title = this.title || `Error ${this.status}`;
    return this.detail ? `${title}: ${this.detail}` : title;
  }
}

export class Api {
  /** `root` is the API's root URL (the page lives at root + "app/"). */
  constructor(root, token, { onUnauthorized } = {}) {
    this.root = new URL(root);
    this.token = token;
    this.onUnauthorized = onUnauthorized;
  }

  /** The URL of `path` (relative to the root, or an absolute link the API gave); a link to
   * another origin is refused, so the token is never sent anywhere else. */
  url(path) {
    const url = new URL(path, this.root);
    if (url.origin !== this.root.origin) {
      throw new ApiError(0, "Refused", `a link to another site (${url.origin}) was not followed`);
    }
    return url;
  }

  async request(path, { method = "GET", json, body, headers = {}, query } = {}) {
    const url = this.url(path);
    for (const [key, value] of Object.entries(query || {})) {
      if (value !== undefined && value !== null && value !== "") url.searchParams.set(key, value);
    }
    const sent = { Authorization: `Bearer ${this.token}`, Accept: "application/json", ...headers };
    let payload = body;
    if (json !== undefined) {
      sent["Content-Type"] = "application/json";
      payload = JSON.stringify(json);
    }
    let response;
    try {
      response = await fetch(url, { method, headers: sent, body: payload, credentials: "omit" });
    } catch (error) {
      throw new ApiError(0, "No answer", `the service did not answer (${error.message})`);
    }
    if (!response.ok) {
      const error = await problem(response);
      if (response.status === 401 && this.onUnauthorized) this.onUnauthorized(error);
      throw error;
    }
    return response;
  }

  async json(path, options) {
    const response = await this.request(path, options);
    if (response.status === 204) return null;
    return response.json();
  }

  async text(path, options) {
    return (await this.request(path, { ...options, headers: { Accept: "text/plain" } })).text();
  }

  /** A file's bytes and its name (from Content-Disposition, else the URL's last part). */
  async blob(path) {
    const response = await this.request(path, { headers: { Accept: "*/*" } });
    const disposition = response.headers.get("Content-Disposition") || "";
    const named = /filename\*=UTF-8''([^;]+)|filename="?([^";]+)"?/i.exec(disposition);
    const last = decodeURIComponent(new URL(response.url).pathname.split("/").pop() || "download");
    const name = named ? decodeURIComponent(named[1] || named[2]) : last;
    return { blob: await response.blob(), name };
  }
}

async function problem(response) {
  let title = response.statusText;
  let detail = "";
  try {
    const body = await response.json();
    title = body.title || title;
    detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail ?? "");
  } catch {
    detail = "";
  }
  return new ApiError(response.status, title, detail);
}

/** Save a file the API serves: fetched with the token (a link cannot carry it), then handed
 * to the browser as a download from a blob URL. */
export async function download(api, href) {
  const { blob, name } = await api.blob(href);
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  return name;
}

/** The text of any error, for a message line. */
export function words(error) {
  return error instanceof ApiError ? error.words : `The page failed: ${error.message}`;
}

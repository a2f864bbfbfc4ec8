// arca's pages: the forms send the same requests an API client would (POST, PATCH, DELETE
// on the resource's URL); the server's status and message are shown on every failure.
"use strict";

function show(out, ok, text) {
  out.textContent = text;
  out.className = "result " + (ok ? "ok" : "failed");
}

async function send(method, url, headers, body) {
  const r = await fetch(url, { method, headers, body, credentials: "same-origin" });
  const text = await r.text();
  return { r, text };
}

// RFC 6266: a file name as a Content-Disposition parameter (filename* for non-ASCII).
function disposition(name) {
  const ascii = /^[\x20-\x7e]*$/.test(name) && !/["\\]/.test(name);
  if (ascii) return 'attachment; filename="' + name + '"';
  const plain = name.replace(/[^\x20-\x7e]|["\\]/g, "_");
  return 'attachment; filename="' + plain + "\"; filename*=UTF-8''" + encodeURIComponent(name);
}

function request(form) {
  const kind = form.dataset.kind;
  const url = form.dataset.url;
  const field = (name) => form.elements.namedItem(name);
  const headers = {};
  switch (kind) {
    case "container": {
      const slug = field("slug").value.trim();
      if (slug) headers["Slug"] = slug;
      headers["Content-Type"] = "text/turtle";
      return ["POST", url, headers, field("turtle").value];
    }
    case "upload": {
      const file = field("file").files[0];
      if (!file) throw new Error("choose a file first");
      const slug = field("slug").value.trim();
      if (slug) headers["Slug"] = slug;
      headers["Content-Type"] = field("type").value.trim() || file.type || "application/octet-stream";
      headers["Content-Disposition"] = disposition(field("filename").value.trim() || file.name);
      headers["Link"] = '<http://www.w3.org/ns/ldp#NonRDFSource>; rel="type"';
      return ["POST", url, headers, file];
    }
    case "patch":
      headers["Content-Type"] = "application/sparql-update";
      return ["PATCH", url, headers, field("sparql").value];
    case "version":
      return ["POST", url, headers, null];
    case "delete":
      return ["DELETE", url, headers, null];
  }
  throw new Error("unknown form " + kind);
}

async function submit(form, event) {
  event.preventDefault();
  const out = form.closest("section").querySelector("output.result");
  if (form.dataset.kind === "delete" && !window.confirm("Delete this resource?")) return;
  let method, url, headers, body;
  try {
    [method, url, headers, body] = request(form);
  } catch (e) {
    show(out, false, e.message);
    return;
  }
  show(out, true, "Working…");
  try {
    const { r, text } = await send(method, url, headers, body);
    if (!r.ok) {
      show(out, false, r.status + " " + r.statusText + ": " + text);
      return;
    }
    show(out, true, r.status + " " + r.statusText);
    const location = r.headers.get("Location");
    if (form.dataset.kind === "delete") {
      window.location.href = form.dataset.next;
    } else if (location && form.dataset.kind === "upload") {
      window.location.href = location + "/fcr:metadata";
    } else if (location && form.dataset.kind === "container") {
      window.location.href = location;
    } else {
      window.location.reload();
    }
  } catch (e) {
    show(out, false, "the request failed: " + e.message);
  }
}

async function fixity(button) {
  const out = button.parentElement.querySelector("output.result");
  show(out, true, "Checking…");
  try {
    const { r, text } = await send("GET", button.dataset.fixity, { Accept: "text/turtle" }, null);
    if (!r.ok) {
      show(out, false, r.status + " " + r.statusText + ": " + text);
      return;
    }
    const ok = text.includes("SUCCESS");
    show(out, ok, (ok ? "Fixity: SUCCESS\n\n" : "Fixity: FAILED\n\n") + text);
  } catch (e) {
    show(out, false, "the request failed: " + e.message);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  for (const el of document.querySelectorAll("[data-js]")) el.hidden = false;
  for (const form of document.querySelectorAll("form[data-kind]")) {
    form.addEventListener("submit", (e) => submit(form, e));
  }
  for (const b of document.querySelectorAll("button[data-fixity]")) {
    b.hidden = false;
    b.addEventListener("click", () => fixity(b));
  }
});

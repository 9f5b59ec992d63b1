// agentrt console: WebAuthn ceremonies and live updates. No framework, no
// build step, no inline script: the page's CSP allows this file alone.
"use strict";

const csrf = () => document.querySelector('meta[name="csrf"]').content;

async function post(url, body, ceremony) {
  const headers = { "Content-Type": "application/json", "X-CSRF-Token": csrf() };
  if (ceremony) headers["X-Ceremony"] = ceremony;
  const r = await fetch(url, { method: "POST", headers, body: JSON.stringify(body), credentials: "same-origin" });
  const j = await r.json().catch(() => ({ error: "the server's answer is not JSON", code: "internal" }));
  if (!r.ok) throw new Error(j.error || r.statusText);
  return j;
}

function say(id, text, bad) {
  const el = document.getElementById(id);
  if (!el) return;
  el.textContent = text;
  el.className = bad ? "problem" : "ok";
}

async function enroll() {
  const token = location.hash.slice(1);
  if (!token) { say("status", "This page needs the invitation's URL, with its token after #.", true); return; }
  try {
    const b = await post("/api/enroll/begin", { token });
    const options = PublicKeyCredential.parseCreationOptionsFromJSON(b.options.publicKey);
    const cred = await navigator.credentials.create({ publicKey: options });
    const done = await post("/api/enroll/finish", cred.toJSON(), b.ceremony);
    history.replaceState(null, "", "/enroll");
    say("status", "Enrolled as " + done.name + ".");
    location.assign(done.next);
  } catch (e) { say("status", "Not enrolled: " + e.message, true); }
}

async function login() {
  try {
    const b = await post("/api/login/begin", {});
    const options = PublicKeyCredential.parseRequestOptionsFromJSON(b.options.publicKey);
    const cred = await navigator.credentials.get({ publicKey: options });
    const done = await post("/api/login/finish", cred.toJSON(), b.ceremony);
    location.assign(done.next);
  } catch (e) { say("status", "Not signed in: " + e.message, true); }
}

async function decide(ev) {
  const form = document.getElementById("decide");
  const decision = ev.currentTarget.dataset.decision;
  for (const b of form.querySelectorAll("button")) b.disabled = true;
  try {
    const b = await post("/api/decide/begin", {
      run_id: form.dataset.run, approval_id: form.dataset.approval, hash: form.dataset.hash,
      decision, note: document.getElementById("note").value,
    });
    const options = PublicKeyCredential.parseRequestOptionsFromJSON(b.options.publicKey);
    const cred = await navigator.credentials.get({ publicKey: options });
    const done = await post("/api/decide/finish", cred.toJSON(), b.ceremony);
    if (done.status === "voted") {
      say("result", "Vote recorded and signed by " + done.by + ". Still needed: " + done.remaining);
      return;
    }
    say("result", (done.status === "approve" ? "Approved" : "Rejected") + " and signed by " + done.by + ".");
    document.getElementById("status-value").textContent = done.status === "approve" ? "approved" : "rejected";
  } catch (e) {
    say("result", "Nothing was decided: " + e.message, true);
    for (const b of form.querySelectorAll("button")) b.disabled = false;
  }
}

// Live pages follow the event log: on each new event the page is fetched
// again and its main element replaced. The HTML is the server's, rendered
// by html/template; a parsed document runs no script. The stream counts
// from the chain's head when it opens, so the page is also fetched once
// when it opens (and reopens): what was committed between rendering the
// page and opening the stream shows too (data-synced says that fetch is
// done). A change that arrives while a
// fetch is under way is fetched after it, never dropped.
let stream = null; // the live page's EventSource, while it follows

function live() {
  if (!document.body.dataset.live) return;
  const es = new EventSource("/events");
  stream = es;
  let busy = false, again = false;
  const refresh = async () => {
    if (busy) { again = true; return; }
    busy = true;
    try {
      do {
        again = false;
        const r = await fetch(location.href, { credentials: "same-origin" });
        if (r.ok) {
          const doc = new DOMParser().parseFromString(await r.text(), "text/html");
          const next = doc.getElementById("main"), main = document.getElementById("main");
          // An unchanged page is left as it is: nothing under the reader's
          // pointer is replaced for nothing.
          if (next && next.innerHTML !== main.innerHTML) {
            // A raw record the reader opened stays open.
            const open = [...main.querySelectorAll("details[open][id]")].map(d => d.id);
            main.replaceChildren(...next.childNodes);
            for (const id of open) { const d = document.getElementById(id); if (d) d.open = true; }
            document.body.dataset.updated = String(Number(document.body.dataset.updated || 0) + 1);
          }
        }
      } while (again && stream === es);
    } finally { busy = false; }
  };
  es.addEventListener("open", async () => {
    document.body.dataset.following = "1";
    await refresh();
    document.body.dataset.synced = "1"; // caught up with the log once
  });
  // The session ended (signed out, idle, past its lifetime, or the
  // approver removed): the stream says so and the page goes with it.
  // A page that is already leaving (a form it posted) does not navigate
  // again.
  const ended = () => {
    es.close();
    if (stream !== es) return;
    stream = null;
    document.body.dataset.following = "0";
    location.assign("/login");
  };
  es.addEventListener("ended", ended);
  es.addEventListener("error", () => { if (es.readyState === EventSource.CLOSED) ended(); });
  es.addEventListener("change", refresh);
}

// Forms post through fetch: under Referrer-Policy no-referrer a browser
// sends "Origin: null" with a plain form post, and the console refuses any
// state change whose Origin is not its own.
async function submitForm(ev) {
  const form = ev.target;
  if (form.method !== "post") return;
  ev.preventDefault();
  // The page is about to be replaced: stop following, so a stream that
  // ends with the session (signing out) does not navigate a second time.
  if (stream) { stream.close(); stream = null; }
  const r = await fetch(form.action, { method: "POST", body: new URLSearchParams(new FormData(form)),
    headers: { "X-CSRF-Token": csrf() }, credentials: "same-origin" });
  if (r.ok) { location.assign(r.url); return; }
  const j = await r.json().catch(() => ({ error: r.statusText }));
  live(); // the page stays: follow again
  alert("Refused: " + j.error);
}

document.addEventListener("DOMContentLoaded", () => {
  document.addEventListener("submit", submitForm);
  const on = (id, fn) => { const el = document.getElementById(id); if (el) el.addEventListener("click", fn); };
  on("enroll", enroll);
  on("login", login);
  on("approve", decide);
  on("reject", decide);
  live();
});

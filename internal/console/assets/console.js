// wps console: small enhancements. Every page works without this file,
// except importing records, adding TABLE rows beyond the first, and
// keeping unsaved entries as drafts.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // TABLE fields: add and remove rows (new rows take the next free number).
  document.querySelectorAll(".table-field").forEach((box) => {
    const body = box.querySelector("tbody");
    const tpl = box.querySelector("template");
    let next = body.rows.length;
    box.querySelector(".add-row").addEventListener("click", () => {
      const html = tpl.innerHTML.replaceAll("__ROW__", String(next++));
      body.insertAdjacentHTML("beforeend", html);
      body.lastElementChild.querySelector("input")?.focus();
    });
    box.addEventListener("click", (e) => {
      if (e.target.classList.contains("remove-row")) e.target.closest("tr").remove();
    });
  });

  // ENTITY pickers: narrow the options to those whose label matches.
  document.querySelectorAll(".picker-search").forEach((input) => {
    const select = document.getElementById(input.dataset.for);
    input.addEventListener("input", () => {
      const q = input.value.trim().toLowerCase();
      for (const o of select.options) o.hidden = q !== "" && o.value !== "" && !o.text.toLowerCase().includes(q);
    });
  });

  // Records grid: sort the rows shown by a column (click its header again to reverse).
  document.querySelectorAll("table.sortable").forEach((table) => {
    table.querySelectorAll("th .sort").forEach((btn, col) => {
      btn.addEventListener("click", () => {
        const th = btn.closest("th");
        const asc = th.getAttribute("aria-sort") !== "ascending";
        table.querySelectorAll("th").forEach((h) => h.removeAttribute("aria-sort"));
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        const rows = [...table.tBodies[0].rows];
        const key = (r) => r.cells[col].textContent.trim();
        const cmp = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });
        rows.sort((a, b) => (asc ? 1 : -1) * cmp.compare(key(a), key(b)));
        table.tBodies[0].append(...rows);
      });
    });
  });

  // Records import: the file goes to the API's import, all or nothing. A
  // large one is a job (202): its progress is shown until it ends.
  document.querySelectorAll("form.import").forEach((form) => {
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const status = form.querySelector(".import-status");
      const file = form.querySelector("input[type=file]").files[0];
      // The words come from the page (data-msg-*), in its language.
      const msg = (name, vars) => (form.dataset["msg" + name] || "").replace(/\{(\w+)\}/g, (_, k) => (vars && vars[k] !== undefined ? vars[k] : ""));
      if (!file) { status.textContent = msg("Choose"); return; }
      const xlsx = /\.xlsx$/i.test(file.name);
      status.textContent = msg("Importing");
      const res = await fetch(`/v1/entities/${encodeURIComponent(form.dataset.entity)}/records:import`, {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": xlsx ? "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" : "text/csv", "X-CSRF-Token": form.dataset.csrf }, body: file,
      });
      let body = await res.json().catch(() => ({}));
      let ok = res.ok, why = res.statusText;
      if (res.status === 202) {
        const job = res.headers.get("Location");
        while (body.status !== "SUCCEEDED" && body.status !== "FAILED") {
          status.textContent = msg("Progress", { done: body.processed || 0, total: body.total });
          await new Promise((done) => setTimeout(done, 1000));
          const poll = await fetch(job, { credentials: "same-origin" });
          body = await poll.json().catch(() => ({}));
          if (!poll.ok) { ok = false; why = poll.statusText; break; }
        }
        if (body.status === "FAILED") { ok = false; body = { detail: body.error && body.error.detail, errors: body.errors }; }
      }
      if (ok) { location.search = "?done=imported"; return; }
      const fields = (body.errors || []).map((x) => `${x.location || x.field}: ${x.message}`).join("; ");
      status.textContent = msg("Failed", { why: (body.detail || why) + (fields ? " (" + fields + ")" : "") });
    });
  });

  // Copy fields select their text on focus.
  document.querySelectorAll("input.copy").forEach((i) => i.addEventListener("focus", () => i.select()));

  drafts();
});

// Drafts: what a person types in a step's form is kept in the browser
// (localStorage, keyed by user, measurement and step) until it is saved, so
// a reload or a lost connection loses nothing. Files cannot be kept. A
// form sent is remembered for the tab (sessionStorage): the page the save
// leads to (?done=...) clears its draft; a failed send keeps it.
const draftPrefix = "wps-draft:";
const store = {
  get(k) { try { return JSON.parse(localStorage.getItem(k)); } catch { return null; } },
  set(k, v) { try { localStorage.setItem(k, JSON.stringify(v)); } catch { /* full or off: no draft */ } },
  del(k) { try { localStorage.removeItem(k); } catch { /* off */ } },
};

// notKept are the controls a draft never keeps: files (they cannot be),
// hidden fields and buttons, and passwords (a signature's password must
// never be written to the browser's storage).
const notKept = ["file", "hidden", "submit", "button", "reset", "password"];

// draftValues are a form's values a draft keeps: every named control but
// notKept; checkboxes and multiple selects as lists. A file's Keep box
// (k.NAME) is kept by the files unticked ("-k.NAME"): a file the draft
// never saw stays kept, as unticking one now removes it.
function draftValues(form) {
  const v = {};
  for (const el of form.elements) {
    if (!el.name || notKept.includes(el.type)) continue;
    if (el.type === "checkbox" && el.name.startsWith("k.")) {
      v["-" + el.name] ||= [];
      if (!el.checked) v["-" + el.name].push(el.value);
    } else if (el.type === "checkbox" || el.type === "radio") {
      v[el.name] ||= [];
      if (el.checked) v[el.name].push(el.value);
    } else if (el.tagName === "SELECT" && el.multiple) {
      v[el.name] = [...el.selectedOptions].map((o) => o.value);
    } else {
      v[el.name] = el.value;
    }
  }
  return v;
}

// restoreRows adds the TABLE rows a draft has and the page has not.
function restoreRows(form, values) {
  const wanted = new Set(Object.keys(values).filter((n) => n.startsWith("t.")).map((n) => n.split(".").slice(0, 3).join(".")));
  for (const box of form.querySelectorAll(".table-field")) {
    const add = box.querySelector(".add-row");
    const rows = [...wanted].filter((r) => r.startsWith(`t.${box.dataset.table}.`));
    const has = (r) => box.querySelector(`tbody [name^="${CSS.escape(r)}."]`);
    const added = [];
    for (let i = 0; i < 100 && rows.some((r) => !has(r)); i++) {
      add.click();
      added.push(box.querySelector("tbody").lastElementChild);
    }
    for (const tr of added) { // rows made only to reach a later number
      const name = tr.querySelector("[name]")?.name || "";
      if (!wanted.has(name.split(".").slice(0, 3).join("."))) tr.remove();
    }
  }
}

function drafts() {
  const sent = sessionStorage.getItem("wps-draft-sent");
  sessionStorage.removeItem("wps-draft-sent");
  if (sent && new URLSearchParams(location.search).has("done")) store.del(sent);

  document.querySelectorAll("form[data-draft]").forEach((form) => {
    const key = draftPrefix + form.dataset.draft;
    const saved = store.get(key);
    const initial = JSON.stringify(draftValues(form)); // the page's own values: no draft needed
    if (saved && saved.values) {
      restoreRows(form, saved.values);
      let changed = false;
      for (const el of form.elements) {
        if (el.type === "checkbox" && el.name.startsWith("k.")) {
          const on = !(saved.values["-" + el.name] || []).includes(el.value);
          if (el.checked !== on) { el.checked = on; changed = true; }
          continue;
        }
        if (!(el.name in saved.values) || notKept.includes(el.type)) continue;
        const want = saved.values[el.name];
        if (el.type === "checkbox" || el.type === "radio") {
          const on = want.includes(el.value);
          if (el.checked !== on) { el.checked = on; changed = true; }
        } else if (el.tagName === "SELECT" && el.multiple) {
          for (const o of el.options) {
            if (o.selected !== want.includes(o.value)) { o.selected = want.includes(o.value); changed = true; }
          }
        } else if (el.value !== want) {
          el.value = want;
          changed = true;
        }
      }
      if (changed) form.querySelector(".draft-restored")?.removeAttribute("hidden");
    }
    const keep = () => {
      const now = JSON.stringify(draftValues(form));
      if (now === initial) store.del(key);
      else store.set(key, { values: JSON.parse(now), at: new Date().toISOString() });
    };
    form.addEventListener("input", keep);
    form.addEventListener("change", keep);
    form.addEventListener("click", (e) => { if (e.target.closest(".add-row, .remove-row")) keep(); });
    form.addEventListener("submit", () => { keep(); sessionStorage.setItem("wps-draft-sent", key); });
  });

  // Signing out clears the person's drafts: the next person on this device does not see them.
  document.querySelectorAll("form.signout[data-user]").forEach((form) => {
    form.addEventListener("submit", () => {
      const mine = draftPrefix + form.dataset.user + "/";
      try {
        for (const k of Object.keys(localStorage)) if (k.startsWith(mine)) localStorage.removeItem(k);
      } catch { /* off */ }
    });
  });
}

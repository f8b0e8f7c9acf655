// wps console: small enhancements. Every page works without this file,
// except importing records and adding TABLE rows beyond the first.
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
});

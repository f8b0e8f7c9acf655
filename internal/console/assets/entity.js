// wps console: the entity designer and the records grid's changes in place.
// Every page works without this file, except adding parameters and option
// rows beyond those shown, and the keys (Enter to edit, Escape to cancel).
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("form[data-designer]").forEach(designer);
  records();
});

// designer: parameters added and removed, the controls of other types
// hidden, and an "unsaved changes" mark while the form differs from what
// was loaded (its undo link goes back to what is saved).
function designer(form) {
  const list = form.querySelector(".params");
  const tpl = form.querySelector("#param-template");
  const shown = () => [...list.querySelectorAll("fieldset.param")].filter((f) => !f.hidden);
  let next = list.querySelectorAll("fieldset.param").length;

  const byType = (box) => {
    const type = box.querySelector("select.ptype").value;
    box.querySelectorAll(".only[data-types]").forEach((el) => { el.hidden = !el.dataset.types.split(" ").includes(type); });
  };
  const wire = (box) => {
    byType(box);
    box.querySelector("select.ptype").addEventListener("change", () => byType(box));
  };
  list.querySelectorAll("fieldset.param").forEach(wire);

  form.querySelector(".add-param").addEventListener("click", () => {
    const key = String(next++);
    const html = tpl.innerHTML.replaceAll("__P__", key).replaceAll("__N__", String(shown().length + 1));
    list.insertAdjacentHTML("beforeend", html);
    const box = list.lastElementChild;
    wire(box);
    box.querySelector("input[name$='.name']").focus();
    dirty();
  });
  form.addEventListener("click", (e) => {
    const rm = e.target.closest(".remove-param");
    if (rm) {
      const box = rm.closest("fieldset.param");
      box.querySelector("input.removed").value = "true";
      box.hidden = true;
      form.querySelector(".add-param").focus();
      dirty();
    }
    const add = e.target.closest(".add-option");
    if (add) {
      const table = add.closest("fieldset").querySelector("table.opts");
      const body = table.tBodies[0];
      const row = body.rows[body.rows.length - 1].cloneNode(true);
      const n = String(body.rows.length + 1);
      row.querySelectorAll("input").forEach((i) => {
        i.value = "";
        i.removeAttribute("aria-invalid");
        const kind = i.name.split(".").pop();
        const label = table.dataset[kind + "Label"];
        if (label) i.setAttribute("aria-label", label.replaceAll("__O__", n));
      });
      row.querySelectorAll(".error").forEach((s) => s.remove());
      body.append(row);
      row.querySelector("input:not([type=hidden])").focus();
    }
  });

  const state = () => JSON.stringify([...new FormData(form)].filter(([k]) => k !== "csrf"));
  const initial = state();
  const mark = form.ownerDocument.querySelector(".unsaved");
  const undo = form.querySelector(".undo");
  const always = form.hasAttribute("data-dirty"); // a refused save: the form is not what is saved
  function dirty() {
    const on = always || state() !== initial;
    if (mark) mark.hidden = !on;
    if (undo) undo.hidden = !on;
  }
  form.addEventListener("input", dirty);
  form.addEventListener("change", dirty);
}

// records: Enter on a row edits it in place, Escape leaves the row being
// edited (or the deletion being confirmed) as it is saved.
function records() {
  document.querySelectorAll("tr[data-edit]").forEach((tr) => {
    tr.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && e.target === tr) { e.preventDefault(); location.assign(tr.dataset.edit); }
    });
    tr.addEventListener("dblclick", () => location.assign(tr.dataset.edit));
  });
  const form = document.querySelector("form.record-form");
  if (form) {
    form.addEventListener("keydown", (e) => {
      if (e.key === "Escape") { e.preventDefault(); location.assign(form.dataset.cancel); }
    });
    const first = form.querySelector("[aria-invalid=true]") || form.querySelector("input:not([type=hidden]), select, textarea, button");
    first?.focus();
  } else if (location.hash.startsWith("#r-")) {
    document.getElementById(location.hash.slice(1))?.focus();
  }
}

// wps process designer: small enhancements of the designer's form (every
// button works without this file, posting the form back to the server).
// It marks the form unsaved at the first edit, redraws the flow diagram
// from the form after each change, asks before a removal, and inserts the
// name a formula picker offers at the formula's cursor; a field shows the
// controls of its type only.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("designer");
  if (form) designer(form);
  // Deleting a whole process asks first too.
  document.querySelectorAll("form.delete [data-confirm]").forEach((b) => {
    b.addEventListener("click", (e) => { if (!window.confirm(b.dataset.confirm)) e.preventDefault(); });
  });
});

function designer(form) {
  form.elements.js.value = "1";
  const mark = document.querySelector(".unsaved");
  const undo = form.querySelector("button.undo");
  const edited = () => {
    form.elements.changed.value = "1";
    mark?.removeAttribute("hidden");
    if (undo) undo.disabled = false;
  };
  let timer = 0, asked = 0;
  const redraw = async () => {
    const n = ++asked;
    const body = new FormData(form);
    const res = await fetch(form.dataset.diagram, { method: "POST", body, credentials: "same-origin" }).catch(() => null);
    if (!res || !res.ok || n !== asked) return;
    document.getElementById("d-diagram").innerHTML = await res.text();
  };
  const later = () => { edited(); clearTimeout(timer); timer = setTimeout(redraw, 300); };
  form.addEventListener("input", later);
  form.addEventListener("change", later);

  // A field's controls for other types than its own are hidden (they are still sent).
  const fit = (box) => {
    const type = box.querySelector("select.dtype")?.value;
    box.querySelectorAll("[data-types]").forEach((el) => { el.hidden = !el.dataset.types.split(" ").includes(type); });
  };
  form.querySelectorAll(".dparam").forEach((box) => {
    fit(box);
    box.querySelector("select.dtype")?.addEventListener("change", () => fit(box));
  });

  form.addEventListener("click", (e) => {
    const b = e.target.closest("button");
    if (!b) return;
    if (b.dataset.confirm && !window.confirm(b.dataset.confirm)) { e.preventDefault(); return; }
    if (b.dataset.insert) { // a formula picker: the name at the cursor, with spaces around it
      const input = document.getElementById(b.dataset.for);
      const at = input.selectionStart ?? input.value.length;
      const before = input.value.slice(0, at), after = input.value.slice(input.selectionEnd ?? at);
      const pad = (s) => (s === "" || s.endsWith(" ") ? "" : " ");
      input.value = before + pad(before) + b.dataset.insert + (after.startsWith(" ") || after === "" ? "" : " ") + after;
      input.focus();
      input.dispatchEvent(new Event("input", { bubbles: true }));
    }
  });
}

// Progressive enhancement only: the playground works without this file.
"use strict";

document.documentElement.classList.add("js");

function showFieldsForTool(form) {
  const checked = form.querySelector("input[name=tool]:checked");
  const tool = checked ? checked.value : "";
  for (const element of form.querySelectorAll("[data-tools]")) {
    element.hidden = !element.dataset.tools.split(" ").includes(tool);
  }
}

function syncLatest(filter) {
  const latest = filter.querySelector("input[type=checkbox][name$=_latest]");
  if (!latest) return;
  for (const input of filter.querySelectorAll("input[type=date]")) {
    input.disabled = latest.checked;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  for (const select of document.querySelectorAll("select[data-autosubmit]")) {
    select.addEventListener("change", () => select.form.submit());
  }
  const form = document.getElementById("pg-form");
  if (form) {
    showFieldsForTool(form);
    form.addEventListener("change", (event) => {
      if (event.target.name === "tool") showFieldsForTool(form);
    });
    for (const filter of form.querySelectorAll(".pg-filter[data-field-type=date]")) {
      syncLatest(filter);
      filter.addEventListener("change", () => syncLatest(filter));
    }
  }
  for (const button of document.querySelectorAll("button[data-copy]")) {
    button.addEventListener("click", async () => {
      const source = document.getElementById(button.dataset.copy);
      try {
        await navigator.clipboard.writeText(source.textContent);
        button.textContent = "Copied";
      } catch {
        // No clipboard access (plain http, permissions): select it instead.
        const range = document.createRange();
        range.selectNodeContents(source);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        button.textContent = "Selected: press Ctrl+C";
      }
    });
  }
});

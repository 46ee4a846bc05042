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
});

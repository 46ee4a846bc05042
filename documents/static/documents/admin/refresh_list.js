// The documents list refreshes itself while a document on it is pending or
// processing: every few seconds it fetches the same list (its filters, search
// and page) and swaps in the rows' status, reason and counts, never the whole
// page (a ticked checkbox or a half-typed search stays). It stops once nothing
// on the page is waiting.
(() => {
  "use strict";
  const EVERY_MS = 4000;
  const CELLS = ["status_badge", "reason", "page_count", "chunk_count", "display_title"];
  const table = document.getElementById("result_list");
  if (!table) {
    return;
  }
  const waiting = (root) =>
    root.querySelector("[data-status='pending'], [data-status='processing']") !== null;

  const rowsById = (root) => {
    const rows = new Map();
    root.querySelectorAll("#result_list tbody tr").forEach((row) => {
      const box = row.querySelector("input.action-select");
      if (box) {
        rows.set(box.value, row);
      }
    });
    return rows;
  };

  const refresh = async () => {
    const response = await fetch(window.location.href, {
      credentials: "same-origin",
      headers: { "X-Requested-With": "refresh" },
    });
    if (!response.ok) {
      return false;
    }
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    const now = rowsById(fresh);
    rowsById(document).forEach((row, id) => {
      const update = now.get(id);
      if (!update) {
        return;
      }
      CELLS.forEach((name) => {
        const cell = row.querySelector(`.field-${name}`);
        const next = update.querySelector(`.field-${name}`);
        if (cell && next && cell.innerHTML !== next.innerHTML) {
          cell.innerHTML = next.innerHTML;
        }
      });
    });
    return waiting(document);
  };

  const tick = async () => {
    let again = false;
    try {
      again = await refresh();
    } catch {
      again = true; // a dropped connection: try again next time
    }
    if (again) {
      window.setTimeout(tick, EVERY_MS);
    }
  };

  if (waiting(document)) {
    window.setTimeout(tick, EVERY_MS);
  }
})();

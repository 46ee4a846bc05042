// Every page view: the browser's own back when no same-site page is known,
// the quote scrolled to the middle of the screen, and the page image zoomed
// by its buttons, Ctrl + wheel (a touchpad's pinch) or two fingers, keeping
// the quote in view.
(() => {
  "use strict";
  const MIN = 0.5;
  const MAX = 6;
  const STEP = 1.25;

  const back = document.querySelector("[data-pageview-back]");
  if (back && history.length > 1) {
    back.hidden = false;
    back.addEventListener("click", () => history.back());
  }

  const marked = document.getElementById("quote");
  const viewer = document.querySelector("[data-pageview-zoom]");
  const sheet = viewer && viewer.querySelector("[data-zoom-sheet]");
  // The quote on the image when its lines are known, else in the text.
  const quote = sheet && sheet.contains(marked) ? marked : null;
  if (marked && !quote) marked.scrollIntoView({ block: "center" });
  if (!viewer) return;
  const box = viewer.querySelector("[data-zoom-scroll]");
  const level = viewer.querySelector("[data-zoom-level]");
  let zoom = 1;

  // The point of the sheet to keep in view, as fractions of its size: the
  // quote's centre when there is one, else the middle of what is shown.
  const focus = () => {
    if (quote) {
      const sheetBox = sheet.getBoundingClientRect();
      const markBox = quote.getBoundingClientRect();
      return {
        x: (markBox.left + markBox.width / 2 - sheetBox.left) / sheetBox.width,
        y: (markBox.top + markBox.height / 2 - sheetBox.top) / sheetBox.height,
      };
    }
    return {
      x: (box.scrollLeft + box.clientWidth / 2) / sheet.offsetWidth,
      y: (box.scrollTop + box.clientHeight / 2) / sheet.offsetHeight,
    };
  };

  const centre = (point) => {
    box.scrollLeft = point.x * sheet.offsetWidth - box.clientWidth / 2;
    box.scrollTop = point.y * sheet.offsetHeight - box.clientHeight / 2;
  };

  const apply = (next) => {
    const point = focus();
    zoom = Math.min(MAX, Math.max(MIN, next));
    sheet.style.width = `${zoom * 100}%`;
    level.textContent = `${Math.round(zoom * 100)}%`;
    centre(point);
  };

  viewer.querySelectorAll("[data-zoom]").forEach((button) => {
    button.addEventListener("click", () => {
      const action = button.dataset.zoom;
      apply(action === "in" ? zoom * STEP : action === "out" ? zoom / STEP : 1);
    });
  });

  box.addEventListener(
    "wheel",
    (event) => {
      if (!event.ctrlKey) return;
      event.preventDefault();
      apply(zoom * Math.exp(-event.deltaY / 300));
    },
    { passive: false },
  );

  const touches = new Map();
  let pinch = null;
  const spread = () => {
    const [a, b] = [...touches.values()];
    return Math.hypot(a.x - b.x, a.y - b.y);
  };
  box.addEventListener("pointerdown", (event) => {
    if (event.pointerType !== "touch") return;
    touches.set(event.pointerId, { x: event.clientX, y: event.clientY });
    if (touches.size === 2) pinch = { distance: spread(), zoom };
  });
  box.addEventListener("pointermove", (event) => {
    if (!touches.has(event.pointerId)) return;
    touches.set(event.pointerId, { x: event.clientX, y: event.clientY });
    if (pinch && touches.size === 2) apply(pinch.zoom * (spread() / pinch.distance));
  });
  const lift = (event) => {
    touches.delete(event.pointerId);
    if (touches.size < 2) pinch = null;
  };
  box.addEventListener("pointerup", lift);
  box.addEventListener("pointercancel", lift);

  const image = sheet.querySelector("img");
  const start = () => {
    if (quote) centre(focus());
  };
  if (image.complete) start();
  else image.addEventListener("load", start, { once: true });
})();

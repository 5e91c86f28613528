/* A table that does not fit the text column shows each row as a card: one cell per line, each headed
   by its column's name (book.css, "Stacked tables"). A table does not fit when it is wider than the
   column (it would scroll sideways), when the column squeezes one of its cells so narrow (under 7 em)
   that the cell's text breaks into two or more lines more than it holds (a value over the paper's is
   two lines by design; on a phone, under 10 em), and on a phone (a window under 600 px) whenever it has
   more than four columns. A table of three or four columns that fits a phone stays a table: cards would
   make it several times taller.
   The column names come from the table's head; a table whose head is not one plain row of names (or
   that has none) is left as it is and scrolls in its box. The choice is made again when the window
   changes width. tests/book/test_site_browser.py checks every table of the book at 400 px and 1280 px. */
(function () {
  "use strict";
  const PHONE = 600;  // CSS pixels: a narrower window is a phone's

  function columnNames(table) {
    const head = table.tHead;
    if (!head || head.rows.length !== 1) return null;
    const names = Array.from(head.rows[0].cells, (cell) => (cell.colSpan === 1 ? cell.textContent.trim() : null));
    return names.every((name) => name !== null) ? names : null;
  }

  /* Each body cell gets its column's name (shown, and read, only while the table is stacked, when
     its head is hidden) and its content in one box beside it. */
  function label(table, names) {
    if (table.dataset.cxLabelled) return table.dataset.cxLabelled === "yes";
    const rows = Array.from(table.tBodies, (body) => Array.from(body.rows)).flat();
    const fits = rows.every((row) => row.cells.length === names.length);
    table.dataset.cxLabelled = fits ? "yes" : "no";
    if (!fits) return false;
    for (const row of rows) {
      Array.from(row.cells).forEach((cell, i) => {
        const name = document.createElement("span"), content = document.createElement("span");
        name.className = "cx-column";
        name.textContent = names[i];
        content.className = "cx-cell";
        content.append(...cell.childNodes);
        cell.append(name, content);
      });
    }
    return true;
  }

  /* The number of lines the content of `node` takes on the page. */
  function lines(node) {
    const range = document.createRange();
    range.selectNodeContents(node);
    const boxes = Array.from(range.getClientRects()).filter((r) => r.height > 0).sort((a, b) => a.top - b.top);
    let count = 0, bottom = -Infinity;
    for (const box of boxes) {
      if (box.top >= bottom - 1) { count += 1; bottom = box.bottom; } else bottom = Math.max(bottom, box.bottom);
    }
    return count;
  }

  function squeezed(table) {
    const em = parseFloat(getComputedStyle(document.documentElement).fontSize);
    const narrow = (window.innerWidth < PHONE ? 10 : 7) * em;  // as tests/book/test_site_browser.py counts
    return Array.from(table.querySelectorAll("td, th")).some((cell) => {
      const style = getComputedStyle(cell);
      const width = cell.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
      return width < narrow && lines(cell) > cell.querySelectorAll("br").length + 2;
    });
  }

  function arrange() {
    for (const table of document.querySelectorAll("article.bd-article table")) {
      if (table.closest(".cx-explorer")) continue;
      const names = columnNames(table);
      if (!names || !label(table, names)) continue;
      table.classList.remove("cx-stacked");
      const box = table.parentElement;
      const phone = window.innerWidth < PHONE && names.length > 4;
      if (phone || table.offsetWidth > box.clientWidth + 1 || squeezed(table)) table.classList.add("cx-stacked");
    }
  }

  // The line count is shared with tests/book/test_site_browser.py, which checks the tables the same way.
  window.cxBook = { lines };

  let pending = null;
  function later() {
    clearTimeout(pending);
    pending = setTimeout(arrange, 100);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", arrange);
  else arrange();
  window.addEventListener("resize", later);
  // Formulas change the width of the cells that hold them once MathJax has typeset them.
  window.addEventListener("load", () => {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(arrange);
  });
})();

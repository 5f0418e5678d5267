// The practice page's marking: every value it needs is in the JSON block #answers.
// A step is marked against what the student's own earlier steps on the page give,
// when those are filled in, so one slip costs one step only.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("answers").textContent);

  function parseEntry(text) {
    const t = text.trim().replace(/\u2212/g, "-").replace(/,/g, ".");
    if (t === "") return NaN;
    if (/^-(inf|infinity|\u221e)$/i.test(t)) return -Infinity;
    const fraction = t.match(/^(-?[0-9.]+)\s*\/\s*([0-9.]+)$/);
    if (fraction) return Number(fraction[1]) / Number(fraction[2]);
    return /^-?[0-9]*\.?[0-9]+(e-?[0-9]+)?$/i.test(t) ? Number(t) : NaN;
  }

  // A grid's values; masked cells (no input) read as -Infinity. null if any entry is missing.
  function readGrid(table) {
    const rows = [];
    for (const tr of table.querySelectorAll("tr")) {
      const row = [];
      for (const td of tr.querySelectorAll("td")) {
        const input = td.querySelector("input");
        const value = input ? parseEntry(input.value) : -Infinity;
        if (Number.isNaN(value)) return null;
        row.push(value);
      }
      rows.push(row);
    }
    return rows;
  }

  const transpose = (m) => m[0].map((_, j) => m.map((row) => row[j]));
  const matmul = (a, b) => a.map((row) => transpose(b).map((col) => row.reduce((s, x, k) => s + x * col[k], 0)));
  const softmaxRows = (m) => m.map((row) => {
    const top = Math.max(...row);
    const e = row.map((x) => (x === -Infinity ? 0 : Math.exp(x - top)));
    const sum = e.reduce((s, x) => s + x, 0);
    return e.map((x) => x / sum);
  });

  // Each op of the step registry, as the engine computes it (on the student's numbers).
  const OPS = {
    product: (step, a, b) => matmul(a, step.transpose ? transpose(b) : b),
    scaling: (step, a) => a.map((row) => row.map((x) => x * step.factor)),
    masking: (step, a) => a.map((row, i) => row.map((x, j) => (j > i ? -Infinity : x))),
    softmax: (step, a) => (step.by_columns ? transpose(softmaxRows(transpose(a))) : softmaxRows(a)),
    blend: (step, a, b) => matmul(a, b),
    add: (step, a, b) => a.map((row, i) => row.map((x, j) => x + b[i][j])),
    concat: (step, ...parts) => parts[0].map((_, i) => [].concat(...parts.map((p) => p[i]))),
  };

  // What a step should be, from the student's own earlier values: the problem's step graph
  // names each step's op and inputs; an input is the student's grid of that name (a head's
  // are head1.scores, ...) or a given matrix. null when an input is neither, or not filled
  // in: then the key's values count.
  function fromOwnValues(section, problem, name) {
    const step = problem.graph[name];
    if (!step) return null;
    const args = step.inputs.map((input) => {
      const table = section.querySelector(`table.grid[data-name="${input}"]`);
      if (table) return readGrid(table);
      return problem.given[input] || null;
    });
    if (args.some((m) => m === null)) return null;
    return OPS[step.op](step, ...args);
  }

  function close(value, expected) {
    if (expected === null || expected === -Infinity) return value === -Infinity;
    return Math.abs(value - expected) <= data.tolerance + 1e-3 * Math.abs(expected) + 1e-12;
  }

  function checkGrid(section, problem, table) {
    const step = problem.steps[table.dataset.step];
    const expected = fromOwnValues(section, problem, step.name) || step.values;
    let right = 0, total = 0;
    table.querySelectorAll("tr").forEach((tr, i) => {
      tr.querySelectorAll("td").forEach((td, j) => {
        const input = td.querySelector("input");
        if (!input) return;
        total += 1;
        const ok = close(parseEntry(input.value), expected[i][j]);
        right += ok ? 1 : 0;
        input.classList.toggle("right", ok);
        input.classList.toggle("wrong", !ok);
        input.setAttribute("aria-invalid", ok ? "false" : "true");
      });
    });
    return [right, total];
  }

  function checkChoice(part, problem, index) {
    const chosen = part.querySelector("input[type=radio]:checked");
    const answer = part.dataset.task === "mistake-find" ? problem.wrong_step : String(problem.choices[index]);
    return [chosen && chosen.value === answer ? 1 : 0, 1];
  }

  function check(part) {
    const section = part.closest("section");
    const problem = data.problems[section.dataset.problem];
    const grids = part.querySelectorAll("table.grid");
    let right = 0, total = 0;
    if (grids.length) {
      grids.forEach((table) => { const [r, t] = checkGrid(section, problem, table); right += r; total += t; });
    } else if (part.querySelector("input[type=radio]")) {
      [right, total] = checkChoice(part, problem, "abcdefghijklmnopqrstuvwxyz".indexOf(part.dataset.part));
    }
    const marks = part.querySelector(".marks");
    marks.textContent = total ? `${right} of ${total} right` + (right === total ? " \u2713" : "") : "";
  }

  for (const part of document.querySelectorAll(".part")) {
    part.querySelector("button.check").addEventListener("click", () => check(part));
    part.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && event.target.matches("input")) { event.preventDefault(); check(part); }
    });
    const reveal = part.querySelector("button.reveal");
    reveal.addEventListener("click", () => {
      const working = part.querySelector(".working");
      working.hidden = !working.hidden;
      reveal.setAttribute("aria-expanded", String(!working.hidden));
      reveal.textContent = working.hidden ? "Reveal" : "Hide";
    });
  }
})();

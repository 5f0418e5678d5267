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

  // What a step should be, from the student's own earlier grids on the page. A head's
  // grids are named head1.scores, ...: its steps follow from that head's own grids.
  function fromOwnValues(section, problem, fullName) {
    const dot = fullName.indexOf(".");
    const prefix = fullName.slice(0, dot + 1), name = fullName.slice(dot + 1);
    const own = (n, scope = prefix) => {
      const table = section.querySelector(`table.grid[data-name="${scope}${n}"]`);
      return table ? readGrid(table) : null;
    };
    if (name === "concat") {
      const heads = [own("output", "head1."), own("output", "head2.")];
      return heads.includes(null) ? null : heads[0].map((row, i) => row.concat(heads[1][i]));
    }
    if (name === "projected") {
      const concat = own("concat");
      return concat && problem.given.W_O ? matmul(concat, problem.given.W_O) : null;
    }
    const scale = problem.scale === null ? 1 / Math.sqrt(problem.d_k) : problem.scale;
    const inputs = {
      scores: () => [own("Q"), own("K")], scaled: () => [own("scores")],
      masked: () => [own(problem.unscaled ? "scores" : "scaled")],
      weights: () => [own(problem.mask === "causal" ? "masked" : problem.unscaled ? "scores" : "scaled")],
      output: () => [own("weights"), own("V")],
    }[name];
    if (!inputs) return null;
    const args = inputs();
    if (args.some((m) => m === null)) return null;
    if (name === "scores") return matmul(args[0], transpose(args[1]));
    if (name === "scaled") return args[0].map((row) => row.map((x) => x * scale));
    if (name === "masked") return args[0].map((row, i) => row.map((x, j) => (j > i ? -Infinity : x)));
    if (name === "weights") return softmaxRows(args[0]);
    return matmul(args[0], args[1]);
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

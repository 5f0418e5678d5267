// The practice page's marking: every value it needs is in the JSON block #answers.
// An entry is right when it is the key's within the chain tolerance (as Moodle and Canvas
// mark it), or when it follows from the student's own earlier values on the page by the
// problem's step graph, so one slip costs one step only; a blank earlier step counts as
// the key's. The tolerances come from the generator's marking rule (generator/maths/marking.py):
// "local" when every input is the student's own (or as shown), "chain" when some is the key's.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("answers").textContent);
  document.documentElement.classList.add("js");  // shows what needs the script (Check, Clear)

  // The page's language (the JSON block #language, absent in English): its decimal mark, and
  // its messages, the catalogue's of context "page" (scripts/make_catalogue.py gathers every
  // t("...") of this script). t(message, values) says a message in the page's language, each
  // {name} in it filled from values; num(text) writes a number with the page's decimal mark.
  const language = (() => {
    const block = document.getElementById("language");
    return block ? JSON.parse(block.textContent) : { decimal: ".", messages: {} };
  })();
  const fill = (text, values) => text.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole));
  const t = (message, values = {}) => fill(language.messages[message] || message, values);
  // A message with a plural (tn("{n} answer", "{n} answers", n)): the catalogue's forms, in the
  // order of its Plural-Forms (one; many; other, as CLDR names them), picked by the language's
  // own rule (Intl.PluralRules): French says "0 réponse juste", English "0 answers right".
  const pluralRule = new Intl.PluralRules(language.tag || "en");
  const FORMS = { 1: ["other"], 2: ["one", "other"], 3: ["one", "many", "other"] };
  function tn(singular, plural, n, values = {}) {
    const forms = language.messages[singular];
    if (!Array.isArray(forms)) return fill(n === 1 ? singular : plural, { ...values, n });
    const at = FORMS[forms.length] ? FORMS[forms.length].indexOf(pluralRule.select(n)) : -1;
    return fill(forms[at < 0 ? forms.length - 1 : at], { ...values, n });
  }
  const num = (value) => String(value).replace(".", language.decimal);

  // A typed entry: {value, places} or {error}; "" is blank. Accepts 0.5, +0.5, 1., .5, -inf, 1/3,
  // and 0,5 as 0.5 in every language (a decimal comma or a decimal point, whichever the page's);
  // and arithmetic as a student writes it on paper: 16*sqrt(2), 16√2, 3×784, 2^10, exp(-1), π/4.
  // Grouped thousands, only where the grid's answers are whole numbers (a count): the mark that
  // is not the page's decimal mark, each followed by exactly three digits, groups (1,024 and
  // 1,048,576 where the decimal mark is a point; 1.024 where it is a comma); elsewhere a comma is
  // a decimal comma, in every language (1,5 is 1.5, and 1,024 in a grid of decimals is 1.024).
  // places: the decimals typed, for a plain number (22.627: 3), else null.
  const grouping = language.decimal === "," ? "." : ",";
  const grouped = new RegExp(`(^|[^\\d.,])(\\d{1,3}(?:\\${grouping}\\d{3})+)(?![\\d.,])`, "g");
  function parseEntry(text, whole) {
    let typed = text.trim().replace(/[\u2212\u2013]/g, "-").replace(/\s+/g, "");
    if (whole) typed = typed.replace(grouped, (_, before, n) => before + n.split(grouping).join(""));
    typed = typed.replace(/,/g, ".");
    const entry = text.trim();
    if (typed === "") return { blank: true };
    if (typed.length > 200) return { error: t("can't read \"{entry}\": too long for one entry", { entry }) };
    if (/^-(inf|infinity|\u221e)$/i.test(typed)) return { value: -Infinity, places: null };
    const plain = typed.match(/^[-+]?(\d+\.?(\d*)|\.(\d+))$/);
    const value = arithmetic(typed);
    if (Number.isFinite(value)) return { value, places: plain ? (plain[2] || plain[3] || "").length : null };
    return { error: t("can't read \"{entry}\": type a number such as 0.25, -1.5 or 1/4, "
      + "or arithmetic such as 3*784, 16*sqrt(2), \u221a512, 2^10, exp(-1), pi/4", { entry }) };
  }

  // The value of an entry's arithmetic, by recursive descent (never eval): sums of products of
  // powers; a power is a number, (…), √…, sqrt(…), exp(…), e or π, signed; a product may leave
  // its × out (16√2, 2π). NaN for anything else (a letter, a missing bracket, nesting past 40).
  function arithmetic(text) {
    const token = /\d+\.?\d*(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?|sqrt|exp|pi|e|[\u03c0\u221a+\-*\u00d7x\u00b7\u22c5/\u00f7^()]/iy;
    const tokens = [];
    for (let m; token.lastIndex < text.length;) {
      if (!(m = token.exec(text))) return NaN;
      tokens.push(m[0].toLowerCase());
    }
    let at = 0, depth = 0;
    const peek = () => tokens[at];
    const take = (t) => (tokens[at] === t ? (at += 1, true) : false);
    const fail = () => { throw new SyntaxError("unreadable"); };
    const sum = () => {
      let v = product();
      for (;;) { if (take("+")) v += product(); else if (take("-")) v -= product(); else return v; }
    };
    const product = () => {
      let v = signed();
      for (;;) {
        if (["*", "\u00d7", "x", "\u00b7", "\u22c5"].some(take)) v *= signed();
        else if (take("/") || take("\u00f7")) v /= signed();
        else if (peek() !== undefined && /^[(\u221a\u03c0a-z]/.test(peek()) && peek() !== "x") v *= power();
        else return v;
      }
    };
    const signed = () => (take("-") ? -signed() : take("+") ? signed() : power());
    const power = () => {
      const base = atom();
      return take("^") ? base ** signed() : base;  // 2^-1, and 2^3^2 = 2^9
    };
    const bracketed = () => {
      if (!take("(") || (depth += 1) > 40) fail();
      const v = sum();
      if (!take(")")) fail();
      depth -= 1;
      return v;
    };
    const atom = () => {
      const t = peek();
      if (t === undefined) fail();
      if (/^[\d.]/.test(t)) { at += 1; return Number(t); }
      if (t === "(") return bracketed();
      at += 1;
      const argument = () => (peek() === "(" ? bracketed() : power());  // √2, sqrt2, sqrt(2)
      if (t === "\u221a" || t === "sqrt") return Math.sqrt(argument());
      if (t === "exp") return Math.exp(argument());
      if (t === "e") return Math.E;
      if (t === "pi" || t === "\u03c0") return Math.PI;
      return fail();
    };
    try {
      const v = sum();
      return at === tokens.length ? v : NaN;
    } catch (e) { return NaN; }
  }

  // A grid's entries (masked cells, which have no input, read as -Infinity); null if any is
  // blank or unreadable: the step then counts as not given.
  function readGrid(table, problem) {
    const whole = wholeGrid(problem, table);
    const rows = [];
    for (const tr of table.querySelectorAll("tr")) {
      const row = [];
      for (const td of tr.querySelectorAll("td")) {
        const input = td.querySelector("input");
        const entry = input ? parseEntry(input.value, whole) : { value: -Infinity };
        if (entry.value === undefined) return null;
        row.push(entry.value);
      }
      rows.push(row);
    }
    return rows;
  }

  const transpose = (m) => m[0].map((_, j) => m.map((row) => row[j]));
  // null where the shapes do not fit: a slip (below) may ask for a product that cannot be taken
  const matmul = (a, b) => (a[0].length !== b.length ? null
    : a.map((row) => transpose(b).map((col) => row.reduce((s, x, k) => s + x * col[k], 0))));
  const softmaxRows = (m) => m.map((row) => {
    const top = Math.max(...row);
    const e = row.map((x) => (x === -Infinity ? 0 : Math.exp(x - top)));
    const sum = e.reduce((s, x) => s + x, 0);
    return e.map((x) => x / sum);
  });
  const exponentials = (m) => m.map((row) => row.map((x) => Math.exp(x)));

  // Each op of the step graph, as the engine computes it (on the student's numbers); a slip's
  // change may set a flag the engine never does (rowsum: false, the softmax backward row's
  // dot product left out; divided: false, a softmax's exponentials not divided by their sum;
  // off_diagonal_sign: 1 and diagonal: false, a Jacobian's slips).
  const OPS = {
    /* the registered ops' own functions (each op's script face: web.practice_script) */
    // a matrix read off another, its rows and columns picked: a head's block of Q, A' = PAP^T
    pick: (step, a) => step.rows.map((i) => step.columns.map((j) => (a[i] && j in a[i] ? a[i][j] : NaN))),
  };

  const asMatrix = (m) => m && m.map((row) => row.map((x) => (x === null ? -Infinity : x)));

  // Whether every answer of a grid is a whole number (a count: its digits may come grouped).
  function wholeGrid(problem, table) {
    const step = problem.steps[table.dataset.step];
    return Boolean(step) && step.values.every((row) => row.every((v) => v === null || Number.isInteger(v)));
  }

  // An input of a step as the student has it: their grid of that name when it is filled in,
  // else the matrix as the page shows it (given, or shown in the statement), else the key's
  // (a step left blank or not asked). "own" when it is theirs or as shown: then only the
  // step's own rounding can move its result (the local tolerance), else the chain's.
  function inputOf(section, problem, name) {
    const table = section.querySelector(`table.grid[data-name="${CSS.escape(name)}"]`);
    const mine = table && readGrid(table, problem);
    if (mine) return { values: mine, own: true };
    if (name in problem.given) return { values: asMatrix(problem.given[name]), own: true };
    const pick = !table && problem.graph[name];  // a row read off the student's own grid (RoPE's q, k)
    const picked = pick && pick.op === "pick" && fromOwnValues(section, problem, pick);
    if (picked) return picked;
    return { values: asMatrix(problem.known[name]), own: false };
  }

  // What a step of the problem's step graph gives from the student's own values: {values,
  // own}; null for no step, or where an input is missing or the shapes do not fit.
  function fromOwnValues(section, problem, step) {
    if (!step || !OPS[step.op]) return null;
    const args = step.inputs.map((input) => inputOf(section, problem, input));
    if (args.some((a) => !a.values)) return null;
    const values = OPS[step.op](step, ...args.map((a) => a.values));
    return values ? { values, own: args.every((a) => a.own) } : null;
  }

  // Whether a typed value is the expected one, within a tolerance (masked: -inf only).
  const within = (x, expected, tolerance) => (expected === null || expected === -Infinity ? x === -Infinity
    : Number.isFinite(expected) && Math.abs(x - expected) <= (tolerance || 0) + 1e-12);

  // A message repeats what was typed: a 5,000-character entry is cut, not shown whole.
  const cut = (text, most = 160) => (text.length > most ? text.slice(0, most - 1) + "\u2026" : text);

  function setMark(td, input, mark, message, off) {
    message = cut(message || "");
    input.classList.remove("right", "wrong", "unread");
    if (off) input.dataset.off = off; else delete input.dataset.off;  // "high" or "low": sayHighAndLow
    if (mark) { input.classList.add(mark); td.dataset.mark = mark; } else { delete td.dataset.mark; }
    input.setAttribute("aria-invalid", mark === "wrong" || mark === "unread" ? "true" : "false");
    input.title = message;
    if (message) input.setAttribute("aria-description", message); else input.removeAttribute("aria-description");
  }

  // One rule, as in Moodle and Canvas and more: an entry is right when it is the key's value
  // within the chain tolerance (a student who keeps full precision), or when it follows from
  // the student's own values on the page within the local tolerance (the chain's where an
  // input is the key's): a student who rounds every step and works on from what they wrote,
  // or who carries an early slip forward, loses marks for the slip only.
  function checkGrid(section, problem, table, messages) {
    const step = problem.steps[table.dataset.step];
    const graph = problem.graph[step.name];
    const mine = fromOwnValues(section, problem, graph);
    const expected = mine ? mine.values : step.values;
    const tolerance = !(mine && mine.own) ? step.chain
      : graph.op === "softmax" && !graph.by_columns ? softmaxReach(section, problem, graph, expected, step.local)
      : step.local;
    const whole = wholeGrid(problem, table);
    let right = 0, total = 0, unread = 0, short = false;
    table.querySelectorAll("tr").forEach((tr, i) => {
      tr.querySelectorAll("td").forEach((td, j) => {
        const input = td.querySelector("input");
        if (!input) return;
        total += 1;
        const entry = parseEntry(input.value, whole);
        if (entry.blank) { setMark(td, input, null); return; }
        if (entry.error) { unread += 1; setMark(td, input, "unread", entry.error); messages.add(entry.error); return; }
        const ok = within(entry.value, step.values[i][j], step.chain[i][j])
          || (mine !== null && within(entry.value, expected[i][j], tolerance[i][j]));
        const target = Number.isFinite(expected[i][j]) ? expected[i][j] : step.values[i][j];
        const off = entry.value - target;
        right += ok ? 1 : 0;
        // a count typed 9,408 on a page whose decimal mark is a comma reads as 9.408: say so
        if (!ok && whole && !Number.isInteger(entry.value) && /\d,\d{3}(?!\d)/.test(input.value)) {
          messages.add(t("read as {value}: write thousands without a separator or with a space",
            { value: num(entry.value) }));
        }
        short = short || (!ok && !whole && [target, step.values[i][j]].some((v) => cutShort(entry, v)));
        setMark(td, input, ok ? "right" : "wrong", ok ? "" : (off > 0 ? t("too high") : t("too low")),
          ok ? null : (off > 0 ? "high" : "low"));
      });
    });
    if (right < total && !unread) {
      const typed = readGrid(table, problem);
      const why = typed && diagnosis(section, problem, graph, typed, expected, tolerance);
      if (why) messages.add(why);
    }
    if (short) messages.add(t("give {places} decimal places", { places: data.decimals }));  // after a slip's name: it says more
    return [right, total, unread];
  }

  // Whether a number typed to fewer places than the page's decimals is the right one rounded
  // there, or cut short there (22.627 or 22.62 for 22.6274): it wants more places, not other
  // working. (Said only where the grid is not a count of whole numbers.)
  function cutShort(entry, right) {
    if (entry.places === null || entry.places >= data.decimals || !Number.isFinite(right)) return false;
    const unit = 10 ** -entry.places, near = (v) => Math.abs(entry.value - v) <= 1e-9 * Math.max(1, Math.abs(v));
    return near(Math.round(right / unit) * unit) || near(Math.trunc(right / unit) * unit);
  }

  // A row's exponentials each written to the shown decimals move its weights by up to
  // h (1 + n a_j) / S (h half a unit): where the student's own scores make the sum S small
  // (every score negative), more than the key's own local tolerance allows.
  function softmaxReach(section, problem, graph, weights, tolerance) {
    const scores = inputOf(section, problem, graph.inputs[0]).values;
    if (!scores || scores.length !== weights.length) return tolerance;
    const h = 0.5 * 10 ** -data.decimals;
    return weights.map((row, i) => {
      const e = scores[i].filter(Number.isFinite).map(Math.exp);
      const sum = e.reduce((total, x) => total + x, 0);
      return row.map((a, j) => Math.max(tolerance[i][j], h * (1 + e.length * a) / sum + h));
    });
  }

  // What a wrong grid most likely is: one of its step's common slips (the step graph's
  // "slips", each a change to the step, worked from the same values as the step itself and
  // said in the paper's symbols), else a pattern any step can show. A slip that makes the
  // grid's numbers larger (times √d_k, exponentials not divided) widens the tolerance so.
  function diagnosis(section, problem, step, typed, expected, tolerance) {
    const largest = (m) => Math.max(0, ...m.flat().filter(Number.isFinite).map(Math.abs));
    const fits = (values) => {
      const widen = Math.max(1, largest(values) / (largest(expected) || Infinity));
      return values.length === typed.length && values.every((row, i) => row.length === typed[i].length
        && row.every((x, j) => within(typed[i][j], x, tolerance[i][j] * widen
          + (values.reach ? values.reach[i][j] * 0.5 * 10 ** -data.decimals : 0))));  // an op's own rounding
    };
    for (const slip of (step && step.slips) || []) {
      const theirs = fromOwnValues(section, problem, { ...step, ...slip.change });
      if (theirs && fits(theirs.values)) return slip.says;
    }
    return pattern(typed, expected, tolerance);
  }

  // A whole grid that is the right one transposed, or with every sign turned, or the right
  // one times one factor, says what went wrong better than its red cells do.
  function pattern(typed, expected, tolerance) {
    const slack = (i, j, factor = 1) => (tolerance[i][j] || 0) * Math.max(1, Math.abs(factor)) + 1e-9;
    const pairs = typed.flatMap((row, i) => row.map((x, j) => [x, expected[i][j], i, j]))
      .filter(([x, e]) => Number.isFinite(x) && Number.isFinite(e));
    const times = (factor) => pairs.every(([x, e, i, j]) => Math.abs(x - factor * e) <= slack(i, j, factor));
    const square = typed.length === typed[0].length && typed.length > 1;
    if (square && typed.every((row, i) => row.every((x, j) => !Number.isFinite(expected[j][i])
        || Math.abs(x - expected[j][i]) <= slack(j, i)))) {
      return t("this is the right matrix transposed: check which side multiplies, and what is transposed");
    }
    if (permuted(pairs, tolerance)) return t("the entries are in the wrong order: check which goes where");
    if (pairs.filter(([, e]) => Math.abs(e) > 1e-6).length < 2) return null;
    if (times(-1)) return t("every entry has the wrong sign: check the signs in the formula");
    const ratio = pairs.reduce((s, [x, e]) => s + x * e, 0) / pairs.reduce((s, [, e]) => s + e * e, 0);
    return Math.abs(ratio - 1) > 1e-2 && times(ratio)
      ? t("every entry is {factor} times the right one: check the scaling", { factor: num(ratio.toFixed(3)) }) : null;
  }

  // Whether the typed entries are the right ones in another order (a row reversed, two
  // swapped): each matched to a right entry within the larger of the two places' tolerances.
  function permuted(pairs, tolerance) {
    if (pairs.length < 2 || pairs.every(([x, e, i, j]) => Math.abs(x - e) <= (tolerance[i][j] || 0) + 1e-9)) return false;
    const left = pairs.map(([, e, i, j]) => [e, tolerance[i][j] || 0]);
    return pairs.every(([x, , i, j]) => {
      const k = left.findIndex(([e, t]) => Math.abs(x - e) <= Math.max(t, tolerance[i][j] || 0) + 1e-9);
      return k >= 0 && left.splice(k, 1);
    });
  }

  // The right choices of a part: its answer; or, where it asks which key gets the most
  // attention and the student has typed the weights, the largest of their own (carried forward).
  function rightChoices(section, part, problem) {
    const grid = (problem.top_of || {})[part.dataset.part];
    const table = grid && section.querySelector(`table.grid[data-name="${CSS.escape(grid)}"]`);
    const mine = table && readGrid(table, problem);
    if (!mine) return [problem.answers[part.dataset.part]];
    const top = Math.max(...mine[0]);
    return mine[0].flatMap((x, k) => (x === top ? [k] : []));
  }

  // A choice is marked on the option chosen: a ✓ or ✗ beside it (in green or red, bold), said
  // to screen readers too (data-chosen, not data-mark: that one draws a box's corner mark).
  function markChoice(label, mark) {
    let badge = label.querySelector(".choice-mark");
    if (!mark) { if (badge) badge.remove(); delete label.dataset.chosen; return; }
    if (!badge) { badge = document.createElement("span"); badge.className = "choice-mark"; label.append(badge); }
    label.dataset.chosen = mark;
    badge.style.fontWeight = "700";
    badge.style.color = mark === "right" ? "#1b5e20" : "#b71c1c";
    badge.textContent = "";
    const said = document.createElement("span");
    said.className = "visually-hidden";
    said.textContent = " " + (mark === "right" ? t("your choice: right") : t("your choice: wrong"));
    badge.append(mark === "right" ? " \u2713" : " \u2717", said);
    label.querySelector("input").setAttribute("aria-description", said.textContent.trim());
  }

  function unmarkChoices(part) {
    part.querySelectorAll("fieldset label").forEach((label) => {
      markChoice(label, null);
      label.querySelector("input").removeAttribute("aria-description");
    });
  }

  // A wrong choice says so, and why where the key knows the slip behind it (its .slip, the
  // key's "where the others go wrong" for that option), in the part's message.
  function checkChoice(section, part, problem, messages) {
    const chosen = part.querySelector("input[type=radio]:checked");
    const ok = chosen !== null && rightChoices(section, part, problem).includes(Number(chosen.value));
    unmarkChoices(part);
    if (chosen) markChoice(chosen.closest("label"), ok ? "right" : "wrong");
    if (chosen && !ok) {
      const letter = "ABCDEFGHIJKL"[Number(chosen.value)];
      const slip = chosen.closest("label").querySelector(".slip");
      const why = slip ? slip.textContent.trim() : "";
      messages.add(why ? t("your choice ({letter}) is wrong: {why}", { letter, why })
        : t("your choice ({letter}) is wrong", { letter }));
    }
    return [ok ? 1 : 0, 1];
  }

  function check(part, quiet) {
    const section = part.closest("section");
    const problem = data.problems[section.dataset.problem];
    const messages = new Set();
    let right = 0, total = 0, unread = 0;
    part.querySelectorAll("table.grid").forEach((table) => {
      const [r, t, u] = checkGrid(section, problem, table, messages);
      right += r; total += t; unread += u;
    });
    if (part.querySelector("input[type=radio]")) {
      const [r, t] = checkChoice(section, part, problem, messages);
      right += r; total += t;
    }
    part.querySelectorAll("input.shape").forEach((input) => {
      const ok = checkShape(input);
      right += ok ? 1 : 0; total += 1;
    });
    part.querySelectorAll("table.grid").forEach(sayHighAndLow);
    part.dataset.score = total ? String(Number(part.dataset.marks) * right / total) : "0";
    const marks = part.querySelector(".marks");
    // the tally counts answers (boxes, shapes, a choice), not marks: [3 marks] may have 2 boxes
    // (English agrees with the total, "0 of 9 answers"; French with the answers right, "0 réponse
    // juste sur 9": the plural's forms are picked by the count right, English's two the same)
    marks.textContent = total ? (total === 1 ? t("{right} of 1 answer right", { right })
      : tn("{right} of {total} answers right", "{right} of {total} answers right", right, { right, total }))
      + (right === total ? " \u2713" : "") : "";
    noteOf(part).textContent = cut([...messages][0] || "", 300);
    if (!quiet) announce(part);
    part.dataset.state = "checked";
    remember(section, part, true);
    if (!quiet) { recheckAfter(section, part); updateScores(); }
  }

  function noteOf(part) {
    let note = part.querySelector(".message");
    if (!note) {
      note = document.createElement("p"); note.className = "message"; note.id = idOf(part, "message");
      part.querySelector(".actions").before(note);
      describe(part.querySelectorAll("table.grid, fieldset"), note.id);
    }
    return note;
  }

  // An element's id, made from its part's (problem id and letter): a grid's note, a part's message.
  const idOf = (part, what, k = "") => `${part.closest("section").dataset.problem}-${part.dataset.part}-${what}${k}`;

  // Elements described by a note too (aria-describedby): a grid by its note and its part's message.
  function describe(elements, id) {
    elements.forEach((element) => {
      const ids = (element.getAttribute("aria-describedby") || "").split(" ").filter(Boolean);
      if (!ids.includes(id)) element.setAttribute("aria-describedby", [...ids, id].join(" "));
    });
  }

  // What Check found, said by a screen reader (the part's live region, .said): the tally, where
  // each grid is too high or too low (named, where the part has several), and the first
  // message (a slip's explanation, why a choice is wrong). Said on Check only: an edit
  // changes the visible tally, silently.
  function announce(part) {
    const said = part.querySelector(".said");
    if (!said) return;
    const several = part.querySelectorAll("table.grid").length > 1;
    const notes = [...part.querySelectorAll(".grid-note")].map((note) => {
      const text = note.textContent.replace(/^\u2717\s*/, "").trim();
      const label = note.previousElementSibling.querySelector("table.grid").dataset.label;
      return text && several ? `${label}: ${text}` : text;
    });
    const text = [part.querySelector(".marks").textContent, ...notes, noteOf(part).textContent]
      .map((s) => s.replace(/[.\u3002]\s*$/, "").trim()).filter(Boolean).join(". ");
    said.textContent = "";  // a second Check with the same result is said again
    window.setTimeout(() => { said.textContent = text; }, 50);
  }

  // A shape typed as 3x4, 3×4, 3 by 4 or (3, 4): right when it is its grid's rows by columns.
  function checkShape(input) {
    const table = input.closest(".part").querySelector(`table.grid[data-step="${input.dataset.grid}"]`);
    const rows = table.querySelectorAll("tr").length, columns = table.querySelector("tr").children.length;
    const typed = input.value.trim().match(/^\(?\s*(\d+)\s*(?:x|\u00d7|\*|,|by|\s)\s*(\d+)\s*\)?$/i);
    if (!input.value.trim()) { setMark(input.parentElement, input, null); return false; }
    const ok = typed && Number(typed[1]) === rows && Number(typed[2]) === columns;
    setMark(input.parentElement, input, ok ? "right" : (typed ? "wrong" : "unread"),
      ok ? "" : (typed ? t("not this matrix's shape") : t("type the shape as rows×columns, such as 2×5")));
    return ok;
  }

  // "too high" and "too low", said under the grid, not only in a tooltip.
  function sayHighAndLow(table) {
    const said = { high: [], low: [] };
    const first = Number(table.dataset.firstRow || 0);  // a row question's one row is row 3
    table.querySelectorAll("tr").forEach((tr, i) => tr.querySelectorAll("td").forEach((td, j) => {
      const input = td.querySelector("input.wrong");
      if (input && said[input.dataset.off]) said[input.dataset.off].push(t("row {row}, column {column}", { row: first + i + 1, column: j + 1 }));
    }));
    const one = table.querySelectorAll("input").length === 1;  // a one-box grid: no place to say
    const text = Object.entries(said).filter(([, cells]) => cells.length)
      .map(([off, cells]) => {
        const how = off === "high" ? t("too high") : t("too low");
        if (one) return how;
        const more = cells.length > 6 ? " " + t("and {count} more", { count: cells.length - 6 }) : "";
        return `${how}: ${cells.slice(0, 6).join("; ")}${more}`;
      })
      .join(". ");
    let note = table.closest(".scroll").nextElementSibling;
    if (!note || !note.classList.contains("grid-note")) {
      if (!text) return;
      note = document.createElement("p"); note.className = "grid-note"; table.closest(".scroll").after(note);
      const part = table.closest(".part");
      note.id = idOf(part, "note", [...part.querySelectorAll("table.grid")].indexOf(table));
      describe([table], note.id);
    }
    note.textContent = text ? `\u2717 ${text}.` : "";
  }

  function updateScores() {
    let pageScore = 0, pageMarks = 0;
    for (const section of document.querySelectorAll("section.problem")) {
      let score = 0, marks = 0;
      section.querySelectorAll(".part").forEach((part) => {
        score += Number(part.dataset.score || 0);
        marks += Number(part.dataset.marks);
      });
      setText(section.querySelector("h2 .score"), t("score {score} of {marks}", { score: num(score.toFixed(1)), marks }));
      pageScore += score; pageMarks += marks;
    }
    setText(document.getElementById("page-score"), t("Your score: {score} of {marks} marks", { score: num(pageScore.toFixed(1)), marks: pageMarks }));
  }

  // A live region's text changed only when it says something new: a screen reader may say
  // again a text set anew, as every keystroke of an edit would.
  function setText(element, text) { if (element.textContent !== text) element.textContent = text; }

  // Marks follow the answers: an edit takes back its grid's marks, and those of every grid
  // that was marked against it (a later step carries the student's own values forward);
  // Check then marks again the later parts that an edit left unmarked.
  function feeds(problem, sources, name, seen = new Set()) {
    const step = problem.graph[name];
    if (!step || seen.has(name)) return false;
    seen.add(name);
    return step.inputs.some((input) => sources.has(input) || feeds(problem, sources, input, seen));
  }

  function unmark(table) {
    table.querySelectorAll("td input").forEach((input) => setMark(input.closest("td"), input, null));
    const note = table.closest(".scroll").nextElementSibling;
    if (note && note.classList.contains("grid-note")) note.textContent = "";
  }

  function setStale(section, part, why) {
    if (!part.dataset.state) return;  // never checked: no marks to take back
    part.dataset.state = part.dataset.state === "edited" ? "edited" : why;
    part.dataset.score = "0";
    unmarkChoices(part);
    part.querySelector(".marks").textContent = part.dataset.state === "edited" ? t("changed since Check")
      : t("an earlier answer changed: press Check again");
    noteOf(part).textContent = "";
    remember(section, part, false);
  }

  function edited(section, input) {
    const part = input.closest(".part");
    const table = input.closest("td") && input.closest("table.grid");
    if (input.classList.contains("shape")) setMark(input.parentElement, input, null);
    if (table) {
      const problem = data.problems[section.dataset.problem];
      const sources = new Set([table.dataset.name]);
      unmark(table);
      section.querySelectorAll("table.grid").forEach((later) => {
        if (!feeds(problem, sources, later.dataset.name)) return;
        unmark(later);
        if (later.closest(".part") !== part) setStale(section, later.closest(".part"), "earlier");
      });
    }
    setStale(section, part, "edited");
    updateScores();
  }

  function recheckAfter(section, part) {
    const problem = data.problems[section.dataset.problem];
    const sources = new Set([...part.querySelectorAll("table.grid")].map((t) => t.dataset.name));
    section.querySelectorAll(".part[data-state=earlier]").forEach((later) => {
      if ([...later.querySelectorAll("table.grid")].some((t) => feeds(problem, sources, t.dataset.name))) check(later, true);
    });
  }

  // Entries, choices and which parts were checked stay in this browser (localStorage),
  // keyed by the page's set (a fingerprint of its key: seed, types, version) and the problem.
  const storage = (() => { try { return window.localStorage; } catch (e) { return null; } })();
  const pageSet = (() => {
    const text = document.getElementById("answers").textContent;
    let hash = 0x811c9dc5;  // FNV-1a
    for (let k = 0; k < text.length; k += 1) hash = Math.imul(hash ^ text.charCodeAt(k), 0x01000193);
    return (hash >>> 0).toString(36);
  })();
  const prefix = `gen-problems:${pageSet}:`;
  const keyOf = (section, input) => `${prefix}${section.dataset.problem}:${input.name || input.getAttribute("aria-label")}:${input.type === "radio" ? input.value : ""}`;
  const checkedKey = (section, part) => `${prefix}${section.dataset.problem}:checked:${part.dataset.part}`;

  function store(key, value) {
    if (!storage) return;
    try {
      if (value === null) storage.removeItem(key); else storage.setItem(key, value);
    } catch (e) { /* a full or blocked storage only loses persistence */ }
  }

  function remember(section, part, checked) { store(checkedKey(section, part), checked ? "1" : null); }

  function save(section, input) {
    if (input.type === "radio") {
      section.querySelectorAll(`input[name="${input.name}"]`).forEach((r) => store(keyOf(section, r), null));
      if (input.checked) store(keyOf(section, input), "1");
    } else store(keyOf(section, input), input.value || null);
  }

  function restore(section) {
    if (!storage) return;
    section.querySelectorAll("input").forEach((input) => {
      const stored = storage.getItem(keyOf(section, input));
      if (stored === null) return;
      if (input.type === "radio") input.checked = true; else input.value = stored;
    });
    // only the parts that were checked, and not changed since, show marks again
    section.querySelectorAll(".part").forEach((part) => {
      if (storage.getItem(checkedKey(section, part)) !== null) check(part, true);
    });
  }

  // A box that scrolls sideways (a wide matrix on a phone) fades on each side that has more
  // to see; it is looked at again as it scrolls and as its size changes (a Reveal opened).
  function cueScroll(box) {
    const more = box.scrollWidth - box.clientWidth;
    box.classList.toggle("more-right", more > 1 && box.scrollLeft < more - 1);
    box.classList.toggle("more-left", more > 1 && box.scrollLeft > 1);
    // a box that scrolls (maths wider than a phone) is reached by the keyboard too, whose
    // arrows scroll it (WCAG 2.1.1); a grid's boxes already are
    if (!box.querySelector("input")) {
      if (more > 1) box.tabIndex = 0; else box.removeAttribute("tabindex");
    }
  }
  const sized = "ResizeObserver" in window ? new ResizeObserver((seen) => seen.forEach((e) => cueScroll(e.target))) : null;
  for (const box of document.querySelectorAll(".scroll, .m")) {
    box.addEventListener("scroll", () => cueScroll(box), { passive: true });
    if (sized) sized.observe(box); else cueScroll(box);
  }

  for (const section of document.querySelectorAll("section.problem")) {
    section.addEventListener("input", (event) => {
      if (event.target.type === "radio") return;
      save(section, event.target); edited(section, event.target);
    });
    section.addEventListener("change", (event) => {
      if (event.target.type !== "radio") return;
      save(section, event.target); edited(section, event.target);
    });
    restore(section);
  }

  for (const part of document.querySelectorAll(".part")) {
    part.querySelector("button.check").addEventListener("click", () => check(part));
    part.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && event.target.matches("input")) { event.preventDefault(); check(part); }
    });
  }

  document.getElementById("clear").addEventListener("click", () => {
    if (!window.confirm(t("Clear every answer and mark on this page? This cannot be undone."))) return;
    if (storage) {
      const mine = [];
      for (let k = 0; k < storage.length; k += 1) if (storage.key(k).startsWith(prefix)) mine.push(storage.key(k));
      mine.forEach((key) => store(key, null));
    }
    document.querySelectorAll("section.problem input").forEach((input) => {
      if (input.type === "radio") input.checked = false; else input.value = "";
    });
    document.querySelectorAll("[data-mark]").forEach((cell) => setMark(cell, cell.querySelector("input"), null));
    document.querySelectorAll(".message, .grid-note").forEach((note) => { note.textContent = ""; });
    document.querySelectorAll(".part").forEach((part) => {
      delete part.dataset.state;
      unmarkChoices(part);
      part.dataset.score = "0";
      part.querySelector(".marks").textContent = "";
    });
    updateScores();
  });
  updateScores();
})();

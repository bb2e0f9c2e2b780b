/* chunkmark report: renders the data embedded in #report-data. Every data string is written with
   textContent (never as HTML); statistics come precomputed from Python. */
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("report-data").textContent);
  const METRICS = Object.fromEntries(DATA.metrics.map((m) => [m.name, m]));
  const OPTS = DATA.meta.options;
  const RETRIEVALS = Object.fromEntries(DATA.retrievals.map((r, i) => [r.spec, Object.assign({ order: i }, r)]));
  const SCORED = DATA.scorings.length > 1;  // several scorings: rows say which
  const PLOT_CONFIG = { displaylogo: false, responsive: true };

  // ---------------------------------------------------------------- helpers
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  // An optional section and its link shown only when the run has its part: its body, emptied, or null.
  function optionalSection(name, part) {
    document.getElementById(`nav-${name}`).hidden = !part;
    document.getElementById(name).hidden = !part;
    return part ? clear(document.getElementById(`${name}-body`)) : null;
  }
  function isNum(v) { return typeof v === "number" && isFinite(v); }
  function pct(v, digits) { return isNum(v) ? (100 * v).toFixed(digits) : "–"; }
  function mpct(metric, v) { return pct(v, METRICS[metric].digits); }
  function points(v, digits) { return isNum(v) ? (v >= 0 ? "+" : "") + (100 * v).toFixed(digits) : "–"; }
  function int(v) { return isNum(v) ? Math.round(v).toLocaleString("en-US") : "–"; }
  function fixed(v, digits) { return isNum(v) ? v.toFixed(digits) : "–"; }
  function pval(p) {
    if (!isNum(p)) return "n/a";  // a test that cannot be computed (one question, NaN)
    if (p < 0.001) return p.toExponential(1);
    return p.toPrecision(2);
  }
  function dollars(x) {
    if (!isNum(x)) return "unknown";
    if (x === 0) return "$0";
    if (x < 0.01) return "$" + x.toPrecision(2);
    return "$" + x.toFixed(2);
  }
  function rShort(spec) { return RETRIEVALS[spec] ? RETRIEVALS[spec].short : spec; }
  function rOrder(spec) { return RETRIEVALS[spec] ? RETRIEVALS[spec].order : 1e9; }
  function kOrder(k) { return /^\d+$/.test(k) ? Number(k) : 1e9; }
  function cellOf(i) { return DATA.cells[i]; }
  function rowOf(cell, retrieval, scoring) {
    return DATA.rows.findIndex((r) => r.cell === cell && r.retrieval === retrieval && r.scoring === scoring);
  }
  function sameOption(a, b) { return a.cell === b.cell && a.retrieval === b.retrieval && a.scoring === b.scoring; }
  function select(id, label, options, value, onChange) {
    const s = el("select", { id: id, onchange: (e) => onChange(e.target.value) });
    for (const [v, text] of options) {
      const o = el("option", { value: v, text: text });
      if (v === value) o.selected = true;
      s.append(o);
    }
    return el("label", {}, label, s);
  }
  function unique(values) { return Array.from(new Set(values)); }
  function metricLabel(m) { return METRICS[m].label; }
  function directionWord(m) { return METRICS[m].direction === "higher" ? "higher is better" : "lower is better"; }
  function datasetsKeys() { return DATA.datasets.map((d) => d.key); }

  // ---------------------------------------------------------------- header
  function renderHeader() {
    document.title = DATA.meta.title;
    document.getElementById("title").textContent = DATA.meta.title;
    const runs = DATA.meta.runs.map((r) => r.path).join(", ");
    const ds = DATA.datasets.map((d) => `${d.key} (${int(d.documents)} documents, ${int(d.questions)} questions)`).join("; ");
    document.getElementById("subtitle").textContent =
      `${DATA.cells.length} cells from ${DATA.meta.runs.length} run(s): ${runs}. Dataset(s): ${ds}.`;
    const p = DATA.meta.prices;
    const priced = Object.entries(p.per_million).map(([m, v]) => `${m} $${v} / 1M tokens`).join(", ");
    document.getElementById("footer").textContent =
      `chunkmark ${DATA.meta.version}, report generated ${DATA.meta.generated}. ` +
      `Embedding prices (US dollars, list prices as of ${p.date || "an unknown date"}, from ${p.sources.join(" + ")}): ` +
      `${priced}; local embedders (${p.local.join(", ")}) cost 0. ` +
      `Tests: ${OPTS.permutations.toLocaleString("en-US")} sign flips, ${OPTS.bootstrap.toLocaleString("en-US")} bootstrap resamples, seed ${OPTS.seed}, α = ${OPTS.alpha}.`;
  }

  // ---------------------------------------------------------------- recommendation
  function cellName(i) { const c = cellOf(i); return c ? c.label : "?"; }
  function optionName(o) { return `${cellName(o.cell)} with ${rShort(o.retrieval)}`; }

  function pickLine(pick) {
    const c = cellOf(pick.cell);
    const m = pick.metric;
    const ci = isNum(pick.ciLow) ? ` [${mpct(m, pick.ciLow)}, ${mpct(m, pick.ciHigh)}]` : "";
    return el("p", {},
      el("span", { class: "value", text: `${c.label}` }), ` with ${rShort(pick.retrieval)}: ${metricLabel(m)} ${mpct(m, pick.mean)}%${ci}`,
      isNum(pick.ciLow) ? " (95% bootstrap interval)" : "",
      `; ${int(c.tokens)} tokens embedded, ${int(c.nChunks)} chunks, ${dollars(c.cost)} to embed, ${int(pick.retrievedTokens)} tokens retrieved per question on average.`);
  }

  function testLine(pick, rec, what) {
    const cmp = pick.comparison;
    if (!cmp || !pick.versus) return el("p", { class: "test", text: `No other ${what} to compare with: no test.` });
    const m = pick.metric, d = METRICS[m].digits;
    const level = Math.round(100 * cmp.level);
    const role = pick.isBest ? "the runner-up, " : "the best, ";
    return el("p", { class: "test" },
      `Test: ${rec.test} of the ${metricLabel(m)} difference (best − other) with ${role}${optionName(pick.versus)}, over ${int(cmp.n)} paired questions: ` +
      `${points(cmp.difference, d)} points [${points(cmp.ciLow, d)}, ${points(cmp.ciHigh, d)}] (${level}% paired bootstrap), ` +
      `p = ${pval(cmp.p)}; Holm-adjusted over the ${pick.compared} comparison(s) with the best: p = ${pval(pick.pAdjusted)}` +
      (isNum(pick.pAdjusted) ? (pick.pAdjusted >= OPTS.alpha ? ` ≥ ${OPTS.alpha}, no detectable difference` : ` < ${OPTS.alpha}, a detectable difference`) : "") +
      ` (t-test p = ${pval(cmp.pTtest)}, Wilcoxon p = ${pval(cmp.pWilcoxon)}; the best wins ${cmp.wins}, ties ${cmp.ties}, loses ${cmp.losses} questions).`);
  }

  function tiedList(pick, intro) {
    if (!pick.tied || pick.tied.length <= 1) return null;
    const names = pick.tied.map((o) => optionName(o) + (sameOption(o, pick) ? " (the pick)" : "")).sort();
    return el("div", {},
      el("p", { text: `${intro}: ${names.length} options, the pick included, each with Holm-adjusted p ≥ ${OPTS.alpha} against the best (no detectable difference: a group, not an order):` }),
      el("ul", { class: "tied-group" }, names.map((n) => el("li", { text: n }))));
  }

  function pBestOf(rec, o) {
    const found = (rec.pBest || []).find((e) => sameOption(e, o));
    return found ? found.p : null;
  }

  function separationText(sep, rec) {
    if (!sep) return "";
    const pair = `${optionName(sep.a)} and ${optionName(sep.b)}`;
    const gap = `${pct(Math.abs(sep.difference), METRICS[rec.metric].digits)} points apart`;
    if (sep.n === null) return `No realistic number of questions would separate ${pair} (${gap}; ${sep.reason}): decide on cost.`;
    return `Separating ${pair} (${gap}) would take about ${int(sep.n)} questions for ${Math.round(100 * sep.power)}% power at α = ${sep.alpha} (${sep.method}; this run has ${int(rec.n)}).`;
  }

  function verdictBox(rec) {
    const share = pBestOf(rec, rec.best);
    const shareText = `P(best) = ${fixed(share, 2)} (its share of ${OPTS.bootstrap.toLocaleString("en-US")} bootstrap resamples of the questions in which it is best)`;
    const box = el("div", { class: "rec-verdict" });
    if (rec.winner) {
      box.append(el("p", {}, el("b", { text: `Single winner: ${optionName(rec.winner)}` }),
        `: ${shareText}, at least ${rec.minPBest}, and no cell is tied with it after Holm.`));
      return box;
    }
    if (!rec.best.versus) return box;
    const others = rec.best.tied.length - 1;
    box.append(el("p", {}, el("b", { text: rec.verdict === "inconclusive" ? "No single winner (inconclusive)" : "No single winner" }),
      `: ${rec.reason}. The best by mean is ${optionName(rec.best)}, with ${shareText}.`));
    if (others > 0 && rec.cheapestTied) {
      box.append(el("p", { text: `Choose on cost within the group: the cheapest to index is ${optionName(rec.cheapestTied)}` +
        (sameOption(rec.cheapestTied, rec.best) ? " (the best itself)." : ".") }));
    }
    const shares = (rec.pBest || []).filter((e) => e.p > 0).map((e) => `${optionName(e)}: ${fixed(e.p, 2)}`);
    if (shares.length) box.append(el("p", { class: "muted", text: `P(best): ${shares.join("; ")} (the others 0).` }));
    const sep = separationText(rec.topTwo, rec);
    if (sep) box.append(el("p", { text: sep }));
    const cheapSep = separationText(rec.cheapestSeparation, rec);
    if (cheapSep && !(rec.topTwo && sameOption(rec.cheapestSeparation.b, rec.topTwo.b))) box.append(el("p", { text: cheapSep }));
    return box;
  }

  function renderFailures() {
    const box = clear(document.getElementById("failures"));
    if (!DATA.failures.length) { box.hidden = true; return; }
    box.hidden = false;
    const n = DATA.failures.length;
    box.append(el("p", {}, el("b", { text: `${n} cell${n === 1 ? "" : "s"} failed` }),
      ` and ${n === 1 ? "has" : "have"} no rows on this page (fix the error and run again: finished cells are kept):`));
    box.append(el("ul", {}, DATA.failures.map((f) => el("li", { class: "failure" },
      el("span", { title: `${f.chunker} × ${f.embedder}`, text: `${f.dataset}: ${f.chunkerShort} × ${f.embedderShort}` }),
      el("span", { class: "muted", text: ` — ${f.error}` })))));
  }

  function renderRecommendation() {
    const body = clear(document.getElementById("recommendation-body"));
    body.append(el("p", { class: "muted", id: "recommendation-setting",
      text: `Cells compared with retrieval ${OPTS.retrieval}, scored with ${OPTS.scoringLabel}` +
        (SCORED ? ` (the runs hold ${DATA.scorings.length} scorings; the leaderboard shows the others).` : ".") }));
    for (const rec of DATA.recommendations) {
      const m = rec.metric;
      const card = el("div", { class: "card", "data-dataset": rec.dataset });
      card.append(el("h3", { text: `${rec.dataset}: ${metricLabel(m)} with ${rShort(rec.retrieval)} (${directionWord(m)}), ${int(rec.n)} questions` }));
      if (!rec.best) {
        card.append(el("p", { text: `No cell of this dataset was scored with ${rec.retrieval} (${rec.scoringLabel}).` }));
        body.append(card);
        continue;
      }
      card.append(verdictBox(rec));
      const best = el("div", { class: "rec-best" }, el("h4", { text: `Best ${metricLabel(m)}` }), pickLine(rec.best), testLine(rec.best, rec, "cell"),
        tiedList(rec.best, "The group tied with the best"));
      card.append(best);
      const cheap = rec.cheapestTied;
      const cheapBox = el("div", { class: "rec-cheapest" }, el("h4", { text: "Cheapest cell statistically tied with the best" }));
      if (sameOption(cheap, rec.best)) {
        const c = cellOf(cheap.cell);
        const others = rec.best.tied.length - 1;
        cheapBox.append(el("p", { text: others > 0
          ? `The best cell is also the cheapest of its tied group: ${int(c.tokens)} tokens embedded, ${int(c.nChunks)} chunks; the ${others} tied cell(s) embed as many tokens or more.`
          : `No other cell is tied with the best, so the best (${int(c.tokens)} tokens embedded, ${int(c.nChunks)} chunks) is the cheapest choice at this quality.` }));
      } else {
        const bc = cellOf(rec.best.cell), cc = cellOf(cheap.cell);
        cheapBox.append(pickLine(cheap));
        cheapBox.append(el("p", { text: `It embeds ${int(cc.tokens)} tokens in ${int(cc.nChunks)} chunks against the best's ${int(bc.tokens)} in ${int(bc.nChunks)} (${pct(cc.tokens / bc.tokens, 0)}% of the tokens, ${dollars(cc.cost)} against ${dollars(bc.cost)}).` }));
        cheapBox.append(testLine(cheap, rec, "cell"));
      }
      card.append(cheapBox);
      const budgetBox = el("div", { class: "rec-budget" }, el("h4", { text: `Best recall with ${rShort(rec.retrieval)} within ${int(rec.maxContextTokens)} retrieved tokens per question` }));
      if (rec.budget) {
        budgetBox.append(pickLine(rec.budget));
        budgetBox.append(testLine(rec.budget, rec, "option within the budget"));
        const group = tiedList(rec.budget, "The group tied with it within the budget");
        if (group) budgetBox.append(group);
      } else if (rec.smallest) {
        const r = DATA.rows[rowOf(rec.smallest.cell, rec.smallest.retrieval, rec.smallest.scoring)];
        budgetBox.append(el("p", { text: `No cell fits: the smallest retrieval is ${optionName(rec.smallest)} with ${int(r ? r.retrievedTokens : NaN)} tokens per question.` }));
      }
      card.append(budgetBox);
      body.append(card);
    }
  }

  // ---------------------------------------------------------------- leaderboard
  const LB = { allColumns: false, sort: { key: null, dir: 1 }, filters: { dataset: "", embedder: "", family: "", retrieval: "", k: "", scoring: SCORED ? OPTS.scoring : "" } };

  // A column whose value is the same in every row (one dataset, one embedder) is said once above
  // the table instead; the secondary columns (extra) show with "all columns". The page then fits
  // 1,400 px.
  function commonValues() {
    const out = [];
    const datasets = unique(DATA.cells.map((c) => c.dataset));
    const embedders = unique(DATA.cells.map((c) => c.embedderShort));
    if (datasets.length === 1) out.push(["dataset", datasets[0]]);
    if (embedders.length === 1) out.push(["embedder", embedders[0]]);
    return out;
  }
  const COMMON = new Set(commonValues().map(([key]) => key));

  function leaderboardColumns() {
    return allLeaderboardColumns().filter((c) => !COMMON.has(c.key) && (LB.allColumns || !c.extra));
  }

  function allLeaderboardColumns() {
    const cols = [
      { key: "dataset", label: "dataset", value: (r) => cellOf(r.cell).dataset },
      { key: "chunker", label: "chunker", value: (r) => cellOf(r.cell).chunkerShort, spec: true },
      { key: "embedder", label: "embedder", value: (r) => cellOf(r.cell).embedderShort, spec: true },
      { key: "retrieval", label: "retrieval", value: (r) => rOrder(r.retrieval), show: (r) => rShort(r.retrieval), title: "how the chunks were retrieved (hover a value for the full setting)", spec: true },
    ];
    if (SCORED) cols.push({ key: "scoring", label: "scoring", value: (r) => r.scoring, show: (r) => r.scoring, title: "excerpts / unit / denominator" });
    for (const m of DATA.leaderMetrics) {
      cols.push({ key: m, label: METRICS[m].label, title: METRICS[m].description, metric: m, num: true,
        asc: METRICS[m].direction === "lower", value: (r) => r.mean[m], extra: !METRICS[m].onScreen });
    }
    cols.push({ key: "pBest", label: "P(best)", num: true, title: "share of bootstrap resamples of the questions in which the cell is best (at the recommendation's metric, retrieval setting and scoring)",
      value: (r) => rowPBest(r), show: (r) => fixed(rowPBest(r), 2) });
    cols.push(
      { key: "chunks", label: "chunks", num: true, asc: true, extra: true, value: (r) => cellOf(r.cell).nChunks, show: (r) => int(cellOf(r.cell).nChunks) },
      { key: "meanTokens", label: "mean chunk tokens", num: true, asc: true, extra: true, value: (r) => cellOf(r.cell).meanTokens, show: (r) => fixed(cellOf(r.cell).meanTokens, 1) },
      { key: "tokens", label: "tokens embedded", title: "cl100k_base tokens of every chunk: what indexing the corpus embeds", num: true, asc: true, value: (r) => cellOf(r.cell).tokens, show: (r) => int(cellOf(r.cell).tokens) },
      { key: "kUsed", label: "chunks retrieved / question", num: true, asc: true, extra: true, value: (r) => r.kUsed, show: (r) => fixed(r.kUsed, 1) },
      { key: "retrieved", label: "tokens retrieved / question", num: true, asc: true, value: (r) => r.retrievedTokens, show: (r) => int(r.retrievedTokens) },
      { key: "seconds", label: "index time (s)", title: "chunking + embedding the documents, as run (the cache may have saved work)", num: true, asc: true, extra: true, value: (r) => cellOf(r.cell).indexSeconds, show: (r) => fixed(cellOf(r.cell).indexSeconds, 2) },
      { key: "cost", label: "est. cost", title: "tokens embedded x the embedder's price per million tokens", num: true, asc: true, value: (r) => cellOf(r.cell).cost, show: (r) => dollars(cellOf(r.cell).cost) },
    );
    return cols;
  }

  function rowPBest(row) {
    for (const rec of DATA.recommendations) {
      if (!rec.best || rec.dataset !== cellOf(row.cell).dataset) continue;
      const p = pBestOf(rec, row);
      if (p !== null) return p;
    }
    return null;
  }

  function badgeFor(row) {
    for (const rec of DATA.recommendations) {
      if (!rec.best || rec.retrieval !== row.retrieval || rec.scoring !== row.scoring || rec.dataset !== cellOf(row.cell).dataset) continue;
      if (rec.best.cell === row.cell) return el("span", { class: "badge best", title: `best ${metricLabel(rec.metric)} with ${rec.retrieval}`, text: "best" });
      if (rec.best.tied.some((o) => sameOption(o, row))) {
        return el("span", { class: "badge tied", title: `statistically tied with the best ${metricLabel(rec.metric)} with ${rec.retrieval}`, text: "tied" });
      }
    }
    return null;
  }

  function renderLeaderboardFilters() {
    const box = clear(document.getElementById("leaderboard-filters"));
    const all = [["", "all"]];
    const make = (key, label, values) => box.append(select(`filter-${key}`, label, all.concat(values.map((v) => [v, v])), LB.filters[key],
      (v) => { LB.filters[key] = v; renderLeaderboardBody(); }));
    make("dataset", "dataset", datasetsKeys());
    make("embedder", "embedder", unique(DATA.cells.map((c) => c.embedderShort)).sort());
    make("family", "chunker family", unique(DATA.cells.map((c) => c.family)).sort());
    box.append(select("filter-retrieval", "retrieval", all.concat(DATA.retrievals.map((r) => [r.spec, r.short])), LB.filters.retrieval,
      (v) => { LB.filters.retrieval = v; renderLeaderboardBody(); }));
    make("k", "k", DATA.ks);
    if (SCORED) make("scoring", "scoring", DATA.scorings.map((s) => s.key));
    const hidden = allLeaderboardColumns().filter((c) => c.extra).map((c) => c.label);
    box.append(el("label", { title: `also ${hidden.join(", ")}` },
      el("input", { type: "checkbox", id: "leaderboard-all-columns", checked: LB.allColumns,
        onchange: (e) => { LB.allColumns = e.target.checked; renderLeaderboardHead(); renderLeaderboardBody(); } }),
      "all columns"));
    const common = commonValues();
    document.getElementById("leaderboard-common").textContent = common.length
      ? `Every row: ${common.map(([key, value]) => `${key} ${value}`).join("; ")}.` : "";
  }

  function renderLeaderboardHead() {
    const thead = clear(document.querySelector("#leaderboard-table thead"));
    const tr = el("tr");
    for (const col of leaderboardColumns()) {
      const th = el("th", { class: col.num ? "num" : null, "data-key": col.key, title: col.title || `sort by ${col.label}`, text: col.label });
      if (LB.sort.key === col.key) th.setAttribute("aria-sort", LB.sort.dir > 0 ? "ascending" : "descending");
      th.addEventListener("click", () => {
        if (LB.sort.key === col.key) LB.sort.dir = -LB.sort.dir;
        else { LB.sort.key = col.key; LB.sort.dir = col.num && !col.asc ? -1 : 1; }
        renderLeaderboardHead();
        renderLeaderboardBody();
      });
      tr.append(th);
    }
    thead.append(tr);
  }

  function visibleRows() {
    const f = LB.filters;
    return DATA.rows.map((r, i) => [r, i]).filter(([r]) => {
      const c = cellOf(r.cell);
      return (!f.dataset || c.dataset === f.dataset) && (!f.embedder || c.embedderShort === f.embedder) &&
        (!f.family || c.family === f.family) && (!f.retrieval || r.retrieval === f.retrieval) &&
        (!f.k || r.k === f.k) && (!f.scoring || r.scoring === f.scoring);
    });
  }

  function compareValues(a, b) {
    const na = a === null || a === undefined || (typeof a === "number" && !isFinite(a));
    const nb = b === null || b === undefined || (typeof b === "number" && !isFinite(b));
    if (na || nb) return na === nb ? 0 : na ? 1 : -1;
    if (typeof a === "number" && typeof b === "number") return a - b;
    return String(a).localeCompare(String(b));
  }

  function renderLeaderboardBody() {
    const tbody = clear(document.querySelector("#leaderboard-table tbody"));
    const cols = leaderboardColumns();
    let rows = visibleRows();
    const col = cols.find((c) => c.key === LB.sort.key);
    if (col) {
      rows = rows.slice().sort((x, y) => {
        const a = col.value(x[0]), b = col.value(y[0]);
        const nullA = !isNum(a) && typeof a !== "string", nullB = !isNum(b) && typeof b !== "string";
        if (nullA || nullB) return nullA === nullB ? x[1] - y[1] : nullA ? 1 : -1;  // missing values last
        return LB.sort.dir * compareValues(a, b) || x[1] - y[1];
      });
    }
    for (const [r, i] of rows) {
      const tr = el("tr", { "data-row": i });
      for (const c of cols) {
        const value = c.value(r);
        const td = el("td", { class: (c.num ? "num" : "") + (c.spec ? " spec" : ""), "data-key": c.key,
          "data-value": isNum(value) ? value : (typeof value === "string" ? value : "") });
        if (c.metric) {
          td.append(mpct(c.metric, r.mean[c.metric]));
          const ci = r.ci[c.metric];
          if (ci) td.append(el("span", { class: "ci", text: `[${mpct(c.metric, ci[0])}, ${mpct(c.metric, ci[1])}]` }));
        } else if (c.key === "chunker") {
          td.append(el("span", { title: cellOf(r.cell).chunker, text: value }));
          const badge = badgeFor(r);
          if (badge) td.append(badge);
        } else if (c.key === "embedder") {
          td.append(el("span", { title: cellOf(r.cell).embedder, text: value }));
        } else if (c.key === "retrieval") {
          td.setAttribute("data-value", r.retrieval);
          td.append(el("span", { title: r.retrieval, text: rShort(r.retrieval) }));
        } else {
          td.textContent = c.show ? c.show(r) : String(value);
        }
        tr.append(td);
      }
      tbody.append(tr);
    }
    document.getElementById("leaderboard-count").textContent = `${rows.length} of ${DATA.rows.length} rows shown.`;
    document.getElementById("leaderboard-notes").textContent = DATA.meta.notes.join(" ");
    const budgets = DATA.retrievals.filter((x) => x.name === "token_budget");
    const note = document.getElementById("budget-note");
    note.hidden = !budgets.length;
    note.textContent = budgets.length
      ? `Rows retrieved with ${budgets.map((x) => x.short).join(", ")} hand every cell the same number of tokens per question: they compare chunkings fairly at equal context cost.`
      : "";
  }

  // ---------------------------------------------------------------- plots
  const PS = { dataset: DATA.datasets.length ? DATA.datasets[0].key : "", metric: OPTS.metric, retrieval: OPTS.retrieval, cost: "tokens" };

  function renderPlotControls() {
    const box = clear(document.getElementById("plot-controls"));
    if (DATA.datasets.length > 1) {
      box.append(select("plot-dataset", "dataset", datasetsKeys().map((d) => [d, d]), PS.dataset, (v) => { PS.dataset = v; renderPlots(); }));
    }
    box.append(select("plot-metric", "metric", DATA.metrics.map((m) => [m.name, m.label]), PS.metric, (v) => { PS.metric = v; renderPlots(); }));
    box.append(select("plot-retrieval", "retrieval (all plots but the first)", DATA.retrievals.map((r) => [r.spec, r.short]), PS.retrieval, (v) => { PS.retrieval = v; renderPlots(); }));
    if (SCORED) box.append(el("span", { class: "muted", text: `Scoring: ${OPTS.scoringLabel}.` }));
    const costBox = clear(document.getElementById("cost-controls"));
    costBox.append(select("plot-cost-measure", "cost", [["tokens", "tokens embedded"], ["chunks", "number of chunks"], ["dollars", "dollars to embed"]], PS.cost,
      (v) => { PS.cost = v; renderCostPlot(); }));
  }

  function rowsAt(retrieval) {
    return DATA.rows.map((r, i) => [r, i]).filter(([r]) => r.retrieval === retrieval && r.scoring === OPTS.scoring && cellOf(r.cell).dataset === PS.dataset);
  }

  function axisTitle(m) { return `${metricLabel(m)} (%)`; }
  function plot(id, traces, layout) {
    const base = { margin: { l: 60, r: 20, t: 30, b: 50 }, hovermode: "closest", legend: { orientation: "h", y: -0.2 } };
    Plotly.react(id, traces, Object.assign(base, layout), PLOT_CONFIG);
  }

  function errorBars(rows, m) {
    if (!METRICS[m].interval) return undefined;
    return {
      type: "data", symmetric: false, visible: true, thickness: 1,
      array: rows.map(([r]) => (r.ci[m] && isNum(r.ci[m][1]) ? 100 * (r.ci[m][1] - r.mean[m]) : 0)),
      arrayminus: rows.map(([r]) => (r.ci[m] && isNum(r.ci[m][0]) ? 100 * (r.mean[m] - r.ci[m][0]) : 0)),
    };
  }

  function renderSizePlots() {
    const grid = document.getElementById("plot-size");
    for (const node of grid.querySelectorAll(".js-plotly-plot")) Plotly.purge(node);
    clear(grid);
    const m = PS.metric;
    const rows = DATA.rows.map((r, i) => [r, i]).filter(([r]) => r.scoring === OPTS.scoring && cellOf(r.cell).dataset === PS.dataset);
    const families = unique(rows.map(([r]) => cellOf(r.cell).family)).sort();
    const multiEmbedder = unique(rows.map(([r]) => cellOf(r.cell).embedderShort)).length > 1;
    families.forEach((family, n) => {
      const own = rows.filter(([r]) => cellOf(r.cell).family === family);
      const param = own.every(([r]) => cellOf(r.cell).sizeParam && isNum(cellOf(r.cell).size)) ? cellOf(own[0][0].cell).sizeParam : null;
      const x = (r) => (param ? cellOf(r.cell).size : cellOf(r.cell).meanTokens);
      const groups = new Map();
      for (const item of own) {
        const c = cellOf(item[0].cell);
        const key = [rShort(item[0].retrieval), c.variant, multiEmbedder ? c.embedderShort : ""].filter(Boolean).join(" · ");
        if (!groups.has(key)) groups.set(key, { retrieval: item[0].retrieval, items: [] });
        groups.get(key).items.push(item);
      }
      const traces = Array.from(groups.entries())
        .sort((a, b) => rOrder(a[1].retrieval) - rOrder(b[1].retrieval) || a[0].localeCompare(b[0]))
        .map(([name, g]) => {
          const items = g.items.slice().sort((a, b) => x(a[0]) - x(b[0]));
          return {
            type: "scatter", mode: "lines+markers", name: name,
            x: items.map(([r]) => x(r)), y: items.map(([r]) => (isNum(r.mean[m]) ? 100 * r.mean[m] : null)),
            error_y: errorBars(items, m), text: items.map(([r]) => cellOf(r.cell).label),
            hovertemplate: "%{text}<br>%{x}: %{y:.2f}%<extra>%{fullData.name}</extra>",
          };
        });
      const div = el("div", { class: "plot-family", id: `plot-size-${n}`, "data-family": family });
      grid.append(div);
      // One size measured: a category axis with that one tick (a number axis would span x +- 1).
      const sizes = unique(own.map(([r]) => x(r)));
      plot(div, traces, {
        title: { text: family, font: { size: 14 } },
        xaxis: { title: { text: param ? `${param}` : "mean chunk tokens (no size parameter)" }, type: sizes.length < 2 ? "category" : "-" },
        yaxis: { title: { text: axisTitle(m) } },
      });
    });
    document.getElementById("plot-size-note").textContent = families.length
      ? `${metricLabel(m)} per chunker family against its size parameter (mean chunk tokens when it has none); one line per retrieval setting (and per other parameter setting), with 95% intervals where the metric has them.`
      : "No cells to plot.";
  }

  function frontTrace(items, xOf, yOf, name) {
    return {
      type: "scatter", mode: "lines+markers", name: name,
      x: items.map(xOf), y: items.map(yOf),
      line: { color: "#d62728", width: 2, dash: "dot" }, marker: { color: "#d62728", size: 11, symbol: "diamond-open", line: { width: 2 } },
      text: items.map(([r]) => `${cellOf(r.cell).label} (${rShort(r.retrieval)})`), hovertemplate: "%{text}<extra>Pareto front</extra>",
    };
  }

  const LABELLED = 20;
  function renderRecallPrecision() {
    const rows = rowsAt(PS.retrieval);
    const f = ((DATA.fronts[PS.dataset] || {})[PS.retrieval] || {}).recallPrecision || [];
    const front = f.map((i) => [DATA.rows[i], i]).sort((a, b) => a[0].mean.recall - b[0].mean.recall);
    // Each point names its cell (the chunker alone when every cell has the same embedder); past
    // LABELLED points the names would cover each other, and hovering names them.
    const oneEmbedder = unique(rows.map(([r]) => cellOf(r.cell).embedderShort)).length === 1;
    plot("plot-rp", [
      { type: "scatter", mode: rows.length <= LABELLED ? "markers+text" : "markers", name: "cells", x: rows.map(([r]) => 100 * r.mean.recall), y: rows.map(([r]) => 100 * r.mean.precision),
        text: rows.map(([r]) => (oneEmbedder ? cellOf(r.cell).chunkerShort : cellOf(r.cell).label)), textposition: "top center", textfont: { size: 10 },
        cliponaxis: false, marker: { size: 8, color: "#2f5fb3", opacity: 0.75 },
        hovertemplate: "%{text}<br>recall %{x:.1f}%, precision %{y:.2f}%<extra></extra>" },
      frontTrace(front, ([r]) => 100 * r.mean.recall, ([r]) => 100 * r.mean.precision, "Pareto front"),
    ], { xaxis: { title: { text: axisTitle("recall") } }, yaxis: { title: { text: axisTitle("precision") } } });
  }

  function costValue(c) {
    if (PS.cost === "tokens") return c.tokens;
    if (PS.cost === "chunks") return c.nChunks;
    return c.cost;
  }

  function renderCostPlot() {
    const m = PS.metric;
    const rows = rowsAt(PS.retrieval).filter(([r]) => isNum(costValue(cellOf(r.cell))));
    const f = ((((DATA.fronts[PS.dataset] || {})[PS.retrieval] || {}).cost || {})[m] || {})[PS.cost] || [];
    const front = f.map((i) => [DATA.rows[i], i]).sort((a, b) => costValue(cellOf(a[0].cell)) - costValue(cellOf(b[0].cell)));
    const names = { tokens: "tokens embedded", chunks: "number of chunks", dollars: "dollars to embed the corpus" };
    const note = document.getElementById("plot-cost-note");
    const missing = rowsAt(PS.retrieval).length - rows.length;
    note.textContent = `${metricLabel(m)} with ${rShort(PS.retrieval)} (${directionWord(m)}) against ${names[PS.cost]}; the line joins the Pareto front (no cheaper cell is at least as good).` +
      (missing ? ` ${missing} cell(s) have no known price and are left out.` : "");
    plot("plot-cost", [
      { type: "scatter", mode: "markers", name: "cells", x: rows.map(([r]) => costValue(cellOf(r.cell))), y: rows.map(([r]) => 100 * r.mean[m]),
        text: rows.map(([r]) => cellOf(r.cell).label), marker: { size: 8, color: "#2f5fb3", opacity: 0.75 },
        hovertemplate: "%{text}<br>%{x}: %{y:.2f}%<extra></extra>" },
      frontTrace(front, ([r]) => costValue(cellOf(r.cell)), ([r]) => 100 * r.mean[m], "Pareto front"),
    ], { xaxis: { title: { text: names[PS.cost] } }, yaxis: { title: { text: axisTitle(m) } } });
  }

  function renderHeatmap() {
    const m = PS.metric;
    const docs = DATA.perDocument.docs[PS.dataset] || [];
    const rows = rowsAt(PS.retrieval).filter(([, i]) => DATA.perDocument.values[String(i)]);
    const z = rows.map(([, i]) => (DATA.perDocument.values[String(i)][m] || []).map((v) => (isNum(v) ? 100 * v : null)));
    const total = DATA.perDocument.documents[PS.dataset] || 0;
    document.getElementById("plot-heatmap-note").textContent =
      `Mean ${metricLabel(m)} with ${rShort(PS.retrieval)} over each document's questions (cells x documents)` +
      (total > docs.length ? `; the ${docs.length} documents with the most questions of ${total}.` : ".");
    plot("plot-heatmap", [{
      type: "heatmap", x: docs, y: rows.map(([r]) => cellOf(r.cell).label), z: z, colorscale: "Viridis",
      reversescale: METRICS[m].direction === "lower", colorbar: { title: { text: "%" } },
      hovertemplate: "%{y}<br>%{x}: %{z:.2f}%<extra></extra>",
    }], { height: Math.max(320, 60 + 22 * rows.length), margin: { l: 260, r: 20, t: 20, b: 120 }, yaxis: { automargin: true }, xaxis: { automargin: true } });
  }

  function renderSimilarity() {
    const cells = DATA.cells.map((c, i) => [c, i]).filter(([c]) => c.dataset === PS.dataset);
    const withTop = cells.filter(([, i]) => DATA.similarity.top1[String(i)]);
    document.getElementById("plot-similarity-note").textContent = withTop.length
      ? `Cosine similarity of each question's top-1 chunk in the dense ranking, per cell; below, the share of retrieved chunks (${rShort(PS.retrieval)} for every question) whose similarity reaches each threshold` +
        (RETRIEVALS[PS.retrieval] && !RETRIEVALS[PS.retrieval].dense ? ` (none: ${rShort(PS.retrieval)} does not retrieve by dense similarity).` : ".")
      : "The runs kept no rankings (cells/<id>.ranking.parquet): no similarity to show.";
    const height = Math.max(320, 80 + 24 * withTop.length);
    plot("plot-top1", withTop.map(([c, i]) => ({
      type: "box", name: c.label, x: DATA.similarity.top1[String(i)], orientation: "h", boxpoints: false, showlegend: false,
      hovertemplate: `${c.label}<extra></extra>`,
    })), { height: height, xaxis: { title: { text: "top-1 cosine similarity" } }, yaxis: { automargin: true }, margin: { l: 60, r: 20, t: 20, b: 50 } });
    const t = DATA.similarity.thresholds;
    const shares = rowsAt(PS.retrieval).filter(([, i]) => DATA.similarity.share[String(i)]);
    plot("plot-threshold", [{
      type: "heatmap", x: t.map((v) => `≥ ${v}`), y: shares.map(([r]) => cellOf(r.cell).label),
      z: shares.map(([, i]) => DATA.similarity.share[String(i)].map((v) => (isNum(v) ? 100 * v : null))),
      colorscale: "Blues", reversescale: true, zmin: 0, zmax: 100, colorbar: { title: { text: "%" } },
      texttemplate: "%{z:.0f}", hovertemplate: "%{y}<br>similarity %{x}: %{z:.1f}% of retrieved chunks<extra></extra>",
    }], { height: Math.max(320, 80 + 24 * shares.length), xaxis: { title: { text: "similarity threshold" } }, yaxis: { automargin: true }, margin: { l: 60, r: 20, t: 20, b: 50 } });
  }

  function renderPlots() {
    if (typeof Plotly === "undefined") return;
    renderSizePlots();
    renderRecallPrecision();
    renderCostPlot();
    renderHeatmap();
    renderSimilarity();
  }

  // ---------------------------------------------------------------- comparisons
  function table(headers, rows, cls) {
    return el("div", { class: "table-wrap" }, el("table", { class: cls || "" },
      el("thead", {}, el("tr", {}, headers.map(([h, num]) => el("th", { class: num ? "num" : null, text: h })))),
      el("tbody", {}, rows.map((cells) => el("tr", {}, cells.map(([v, num]) => el("td", { class: num ? "num" : null, text: v })))))));
  }

  function verdict(pair, m) {
    const cmp = pair.comparison;
    if (!isNum(pair.pAdjusted) || pair.pAdjusted >= OPTS.alpha) return "no detectable difference";
    const aBetter = (cmp.difference > 0) === (METRICS[m].direction === "higher");
    return `${aBetter ? "A" : "B"} better`;
  }

  function renderComparisons() {
    const body = clear(document.getElementById("comparisons-body"));
    const m = OPTS.metric, d = METRICS[m].digits;
    body.append(el("p", { class: "muted", text: `${metricLabel(m)} with ${OPTS.retrievalShort}, percent. Paired comparisons use the same questions for both cells: the difference of means with its 95% paired-bootstrap interval, the ${DATA.recommendations.length ? DATA.recommendations[0].test : "randomisation test"}'s p-value, and that p Holm-adjusted over every embedder pair of the dataset.` }));
    for (const ds of DATA.datasets) {
      const box = el("div", { class: "card", "data-dataset": ds.key }, el("h3", { text: ds.key }));
      const best = DATA.comparisons.bestPerEmbedder[ds.key] || [];
      box.append(el("h4", { text: "Best cell per embedder" }));
      box.append(table([["embedder"], ["best chunker"], [`${metricLabel(m)}`, true], ["95% interval", true], ["tokens embedded", true], ["est. cost", true]],
        best.map((o) => {
          const r = DATA.rows[rowOf(o.cell, o.retrieval, o.scoring)], c = cellOf(o.cell), ci = r.ci[m];
          return [[c.embedderShort], [c.chunkerShort], [mpct(m, r.mean[m]), true], [ci ? `[${mpct(m, ci[0])}, ${mpct(m, ci[1])}]` : "–", true], [int(c.tokens), true], [dollars(c.cost), true]];
        }), "best-per-embedder"));
      const pairs = DATA.comparisons.embedderPairs[ds.key] || [];
      box.append(el("h4", { text: "Embedders on the same chunking (A − B)" }));
      if (!pairs.length) {
        box.append(el("p", { class: "muted", text: "Every chunking of this dataset was run with one embedder only: there is no paired embedder comparison." }));
      } else {
        box.append(table([["chunker"], ["A"], ["B"], ["A", true], ["B", true], ["A − B (points)", true], ["95% interval", true], ["p", true], ["Holm p", true], ["wins/ties/losses", true], ["verdict"]],
          pairs.map((p) => {
            const c = p.comparison;
            return [[cellOf(p.a).chunkerShort], [cellOf(p.a).embedderShort], [cellOf(p.b).embedderShort], [mpct(m, c.meanA), true], [mpct(m, c.meanB), true],
              [points(c.difference, d), true], [`[${points(c.ciLow, d)}, ${points(c.ciHigh, d)}]`, true], [pval(c.p), true], [pval(p.pAdjusted), true],
              [`${c.wins}/${c.ties}/${c.losses}`, true], [verdict(p, m)]];
          }), "embedder-pairs"));
      }
      body.append(box);
    }
    const agreements = DATA.comparisons.agreements;
    if (agreements.length) {
      body.append(el("h3", { text: "Do the datasets order the cells alike?" }));
      body.append(el("p", { class: "muted", text: `Kendall's tau between two datasets' ${metricLabel(m)} means with ${OPTS.retrievalShort} over the cells (chunker, embedder) both ran: 1 is the same order, 0 no relation, −1 the reverse.` }));
      body.append(table([["dataset A"], ["dataset B"], ["shared cells", true], ["Kendall's tau", true], ["p", true]],
        agreements.map((a) => [[a.a], [a.b], [int(a.n), true], [fixed(a.tau, 3), true], [pval(a.p), true]]), "agreements"));
    }
  }

  // ---------------------------------------------------------------- relations
  function supportLine(support, extractor) {
    const p = el("p", { class: "relations-support", "data-support": support });
    if (support === "silver") {
      p.append(el("b", {}, el("em", { text: "Silver" })), " support: the gold relations are what an LLM extracted from the excerpts (not human annotations), so the numbers measure agreement with that extraction.");
    } else {
      p.append(el("b", { text: "Gold" }), " support: the relations are the dataset's own annotations.");
    }
    const oracle = extractor.startsWith("cooccurrence") ? " (the oracle: every gold pair whose two names occur in the chunk)" : "";
    p.append(` Extractor: ${extractor}${oracle}.`);
    return p;
  }

  function relationSetCard(set) {
    const c = set.counts, t = set.totals;
    const card = el("div", { class: "card relation-set", "data-dataset": set.dataset });
    card.append(el("h3", { text: `${set.dataset}: relation set ${set.name}` }));
    card.append(supportLine(set.support, set.extractor));
    card.append(el("p", { class: "muted", text: `${int(c.relations)} relations (${int(c.pairs)} entity pairs, ${int(c.entities)} entities) in ${int(c.documents)} documents, ${int(c.questions)} questions; ` +
      `extraction: ${int(t.records)} records, ${int(t.unmatched_names)} of ${int(t.names)} names unmatched, ${int(t.calls)} calls (${int(t.cache_hits)} cached), ` +
      `${int(t.input_tokens)} input and ${int(t.output_tokens)} output tokens. From ${set.source}.` }));
    return card;
  }

  function relationValue(row, name) {
    const v = row.mean[name], ci = row.ci[name];
    const td = el("td", { class: "num", "data-key": name, "data-value": isNum(v) ? v : "" }, pct(v, 1));
    if (ci) td.append(el("span", { class: "ci", text: `[${pct(ci[0], 1)}, ${pct(ci[1], 1)}]` }));
    return td;
  }

  function relationsTable(g, metrics) {
    const head = el("tr", {}, el("th", { text: "chunker" }),
      metrics.map((m) => el("th", { class: "num", title: m.description, text: m.label })),
      el("th", { class: "num", title: "relationship records returned per 1,000 chunk tokens, matched or not", text: "relations / 1k tokens" }),
      el("th", { class: "num", title: "LLM requests of extracting this chunking (cached ones included)", text: "calls" }),
      el("th", { class: "num", title: "input + output tokens of extracting this chunking", text: "tokens (in + out)" }));
    const body = g.rows.map((r, i) => {
      const name = el("td", { class: "spec", "data-key": "chunker" }, el("span", { title: r.chunker, text: r.chunkerShort }));
      if (i === g.mostRelations) name.append(el("span", { class: "badge best", title: "highest support containment (ties: extraction recall)", text: "most relations" }));
      if (i === g.bestPassages) name.append(el("span", { class: "badge passages", title: "highest passage IoU with this setting", text: "best passages" }));
      return el("tr", { "data-chunker": r.chunker }, name, metrics.map((m) => relationValue(r, m.name)),
        el("td", { class: "num", "data-key": "relationsPer1k", text: fixed(r.relationsPer1k, 1) }),
        el("td", { class: "num", "data-key": "calls", text: int(r.calls) }),
        el("td", { class: "num", "data-key": "tokens", text: `${int(r.inputTokens)} + ${int(r.outputTokens)}` }));
    });
    return el("div", { class: "table-wrap" }, el("table", { class: "relations-table" }, el("thead", {}, head), el("tbody", {}, body)));
  }

  function agreementLine(g) {
    const p = el("p", { class: "relations-agreement", "data-agree": g.agree === null ? "" : String(g.agree) });
    const n = g.rows.length ? int(g.rows[0].n) : "–";
    const at = (r, name) => `${pct(r.mean[name], 1)}%` + (r.ci[name] ? ` [${pct(r.ci[name][0], 1)}, ${pct(r.ci[name][1], 1)}]` : "");
    if (g.agree === null) {
      p.textContent = "No passage IoU of these cells with this setting in summary.csv: nothing to compare the relations with.";
      return p;
    }
    const rel = g.rows[g.mostRelations], pas = g.rows[g.bestPassages];
    if (g.agree) {
      p.append(el("b", { text: "They agree: " }), `${rel.chunkerShort} keeps the most relations (support containment ${at(rel, "support_containment")}, extraction recall ${at(rel, "recall")}) and also retrieves passages best (IoU ${at(rel, "iou")}) on the same ${n} questions.`);
    } else {
      p.append(el("b", { text: "They differ: " }), `${rel.chunkerShort} keeps the most relations (support containment ${at(rel, "support_containment")}, extraction recall ${at(rel, "recall")}; its IoU ${at(rel, "iou")}), ` +
        `while ${pas.chunkerShort} retrieves passages best (IoU ${at(pas, "iou")}; its support containment ${at(pas, "support_containment")}, extraction recall ${at(pas, "recall")}) on the same ${n} questions.`);
    }
    return p;
  }

  function renderRelations() {
    const R = DATA.relations;
    const body = optionalSection("relations", R);
    if (!body) return;
    for (const set of R.sets) body.append(relationSetCard(set));
    for (const g of R.groups) {
      const card = el("div", { class: "card relation-group", "data-dataset": g.dataset, "data-embedder": g.embedder, "data-retrieval": g.retrieval });
      card.append(el("h3", {}, `${g.dataset}: `, el("span", { title: g.embedder, text: g.embedderShort }), " with ", el("span", { title: g.retrieval, text: g.retrievalShort })));
      card.append(el("p", { class: "muted relations-support", "data-support": g.support },
        g.support === "silver" ? el("em", { text: "Silver support (relations an LLM extracted from the excerpts)" }) : "Gold support",
        `, extractor ${g.extractor}, ${int(g.rows.length ? g.rows[0].n : NaN)} questions.`));
      card.append(relationsTable(g, R.metrics));
      card.append(agreementLine(g));
      body.append(card);
    }
  }

  // ---------------------------------------------------------------- answers
  function answersTable(g, metrics) {
    const head = el("tr", {}, el("th", { text: "cell" }), el("th", { class: "num", text: "answered" }),
      el("th", { class: "num", text: "context tokens" }),
      ...metrics.map((m) => el("th", { class: "num", text: m.label })));
    const body = g.rows.map((r) => {
      const name = el("td", { title: r.chunker }, r.chunkerShort + (r.embedderShort ? ` x ${r.embedderShort}` : ""));
      if (r.tied) name.append(" ", el("span", { class: "badge best", title: "no paired test tells its answer score from the best cell's", text: "tied" }));
      const answered = r.notFitting ? `${int(r.n)} (${int(r.notFitting)} do not fit)` : int(r.n);
      return el("tr", { "data-baseline": String(r.baseline) }, name,
        el("td", { class: "num", text: String(answered) }),
        el("td", { class: "num", text: fixed(r.contextTokens, 0) }),
        ...metrics.map((m) => el("td", { class: "num", "data-key": m.name },
          pct(r.mean[m.name], 1), el("br"),
          el("small", { class: "muted", text: isNum(r.ci[m.name][0]) ? `[${pct(r.ci[m.name][0], 1)}, ${pct(r.ci[m.name][1], 1)}]` : "" }))));
    });
    return el("div", { class: "table-wrap" }, el("table", { class: "answers-table" }, el("thead", {}, head), el("tbody", {}, ...body)));
  }

  function tauLine(g) {
    const p = el("p", { class: "answers-tau" });
    if (!g.tau) { p.textContent = "Fewer than two cells: no ranking to compare."; return p; }
    const part = (m, label) => {
      const t = g.tau[m];
      return isNum(t.tau) ? `${label}: ${fixed(t.tau, 2)} [${fixed(t.ci_low, 2)}, ${fixed(t.ci_high, 2)}]` : `${label}: n/a (a ranking is all ties)`;
    };
    p.append(el("b", { text: "Do span rankings predict answer rankings? " }),
      `Kendall's tau between the ${int(g.tau.cells)} cells' ranking by passage metric and by answer score, ` +
      `${part("recall", "recall")}; ${part("iou", "IoU")} (95% bootstrap interval over ${int(g.tau.recall.questions)} questions).`);
    return p;
  }

  function renderAnswers() {
    const A = DATA.answers;
    const body = optionalSection("answers", A);
    if (!body) return;
    for (const run of A.runs) {
      const line = `LLM ${run.llm}` + (run.judge ? `, judge ${run.judge}` : "") + `, context from ${run.setting}, prompt v${run.promptVersion}.`;
      const card = el("div", { class: "card answers-run" }, el("p", { class: "muted", text: line }));
      const j = run.judgeAgreement;
      if (j) card.append(el("p", { class: "answers-judge", text: `Judge vs references on ${int(j.n)} answers: agrees with "F1 >= ${fixed(j.threshold, 1)} (or the right label)" on ${pct(j.accuracy, 1)}%, Spearman ${fixed(j.spearman, 2)}.` }));
      body.append(card);
    }
    for (const g of A.groups) {
      const card = el("div", { class: "card answers-group", "data-dataset": g.dataset });
      card.append(el("h3", { text: `${g.dataset}: answers from ${g.setting}` }));
      card.append(answersTable(g, A.metrics));
      card.append(tauLine(g));
      body.append(card);
    }
  }

  // ---------------------------------------------------------------- inspector
  const DENSE = DATA.retrievals.filter((r) => r.dense);
  const IS = { dataset: 0, cell: null, retrieval: RETRIEVALS[OPTS.retrieval] && RETRIEVALS[OPTS.retrieval].dense ? OPTS.retrieval : (DENSE.length ? DENSE[0].spec : null),
    doc: 0, question: null, filter: "" };
  const decoded = new Map();

  function decodeChunks(set) {
    const ids = [], docs = [], starts = [], ends = [];
    for (const [first, count] of set.ids) for (let j = 0; j < count; j++) ids.push(first + j);
    let pos = 0;
    for (const [d, count] of set.docs) {
      let previousEnd = 0;
      for (let j = 0; j < count; j++, pos++) {
        const s = previousEnd + set.gaps[pos];
        previousEnd = s + set.lengths[pos];
        docs.push(d); starts.push(s); ends.push(previousEnd);
      }
    }
    return { ids, docs, starts, ends, byId: new Map(ids.map((v, i) => [v, i])) };
  }

  function decodeCell(data, key) {
    const cacheKey = `${IS.dataset}:${key}`;
    if (decoded.has(cacheKey)) return decoded.get(cacheKey);
    const c = data.cells[key];
    const setKey = `${IS.dataset}:set:${c.chunks}`;
    if (!decoded.has(setKey)) decoded.set(setKey, decodeChunks(data.chunkSets[c.chunks]));
    const rank = c.rank.map((deltas) => { let v = 0; return deltas.map((x) => (v += x)); });
    const score = c.score.map((row) => row.map((x) => x / 10000));
    const out = Object.assign({}, decoded.get(setKey), { rank, score, kUsed: c.kUsed });
    decoded.set(cacheKey, out);
    return out;
  }

  function textOf(doc, start, end) {
    const parts = [];
    for (const [ps, text] of doc.pieces) {
      const pe = ps + text.length;
      if (pe <= start || ps >= end) continue;
      parts.push(text.slice(Math.max(0, start - ps), Math.min(text.length, end - ps)));
    }
    return parts.join(" … ");
  }

  function insp() { return DATA.inspector[IS.dataset]; }

  function depthFor(cellData, qIndex) {
    const setting = RETRIEVALS[IS.retrieval];
    if (setting && isNum(setting.depth)) return Math.min(setting.depth, cellData.rank[qIndex].length);
    const used = IS.retrieval === null ? null : cellData.kUsed[IS.retrieval];
    return used ? used[qIndex] : cellData.rank[qIndex].length;
  }

  function excerptUnion(excerpts) {
    const sorted = excerpts.map((e) => [e[0], e[1]]).sort((a, b) => a[0] - b[0]);
    const out = [];
    for (const [s, e] of sorted) {
      if (out.length && s <= out[out.length - 1][1]) out[out.length - 1][1] = Math.max(out[out.length - 1][1], e);
      else out.push([s, e]);
    }
    return out;
  }

  function overlapOf(spans, start, end) {
    let n = 0;
    for (const [s, e] of spans) n += Math.max(0, Math.min(e, end) - Math.max(s, start));
    return n;
  }

  function markedText(doc, start, end, spans) {
    const frag = el("div", { class: "body" });
    let at = start;
    for (const [s, e] of spans) {
      const a = Math.max(s, start), b = Math.min(e, end);
      if (b <= a) continue;
      if (a > at) frag.append(textOf(doc, at, a));
      frag.append(el("mark", { text: textOf(doc, a, b) }));
      at = b;
    }
    if (at < end) frag.append(textOf(doc, at, end));
    return frag;
  }

  function renderInspector() {
    const body = clear(document.getElementById("inspector-body"));
    if (!DATA.inspector.length) { body.append(el("p", { text: "No dataset to inspect." })); return; }
    const controls = el("div", { class: "filters", id: "inspector-controls" });
    body.append(controls);
    if (DATA.inspector.length > 1) {
      controls.append(select("insp-dataset", "dataset", DATA.inspector.map((d, i) => [String(i), d.dataset]), String(IS.dataset),
        (v) => { IS.dataset = Number(v); IS.cell = null; IS.question = null; IS.doc = 0; renderInspector(); }));
    }
    const data = insp();
    if (!data.available) {
      body.append(el("p", { class: "warning", id: "inspector-unavailable", text: `The inspector is not available for ${data.dataset}: ${data.message}` }));
      return;
    }
    const cellKeys = Object.keys(data.cells);
    if (IS.cell === null || !data.cells[IS.cell]) IS.cell = cellKeys[0];
    controls.append(select("insp-cell", "cell", cellKeys.map((c) => [c, cellOf(Number(c)).label]), IS.cell, (v) => { IS.cell = v; renderInspectorViews(); }));
    if (DENSE.length) {
      controls.append(select("insp-retrieval", "retrieval", DENSE.map((r) => [r.spec, r.short]), IS.retrieval, (v) => { IS.retrieval = v; renderInspectorViews(); }));
    }
    if (data.trimmed) {
      body.append(el("p", { class: "muted", id: "inspector-trimmed", text: `Trimmed: documents over ${int(data.fullTextLimit)} characters are carried only as windows around the excerpts and the retrieved chunks (the top ${data.depth} of every cell); “characters not carried” marks what is left out.` }));
    }
    const layout = el("div", { class: "insp-layout" });
    const left = el("div", {},
      el("h3", { text: "Questions" }),
      el("input", { type: "search", id: "q-filter", placeholder: "filter questions", value: IS.filter,
        oninput: (e) => { IS.filter = e.target.value; renderQuestionList(); } }),
      el("div", { id: "q-list" }));
    const right = el("div", {}, el("h3", { text: "Question, excerpts and retrieved chunks" }), el("div", { id: "q-detail" }));
    layout.append(left, right);
    body.append(layout);
    const docControls = el("div", { class: "filters" });
    body.append(el("h3", { text: "Document with chunk boundaries" }), docControls,
      el("p", { class: "legend muted" },
        el("span", { class: "c0", style: "background: var(--chunk-a)", text: "chunk" }),
        el("span", { style: "background: var(--chunk-b)", text: "next chunk" }),
        el("span", { style: "background: var(--overlap)", text: "in two chunks (overlap)" }),
        el("span", { style: "background: var(--excerpt)", text: "excerpt" }),
        el("span", { style: "background: var(--excerpt-q)", text: "selected question's excerpt" }),
        el("span", { style: "background: var(--accent); color: #fff", text: "n" }), "= chunk n starts"),
      el("div", { id: "doc-summary", class: "muted" }), el("div", { id: "doc-view" }));
    docControls.append(select("insp-doc", "document", data.docs.map((d, i) => [String(i), `${d.id} (${int(d.length)} characters${d.trimmed ? ", trimmed" : ""})`]),
      String(IS.doc), (v) => { IS.doc = Number(v); renderDocument(); }));
    renderInspectorViews();
  }

  function renderInspectorViews() {
    renderQuestionList();
    renderQuestion();
    renderDocument();
  }

  function renderQuestionList() {
    const data = insp();
    const list = document.getElementById("q-list");
    if (!list) return;
    clear(list);
    const needle = IS.filter.toLowerCase();
    data.questions.forEach((q, i) => {
      if (needle && !(q.text.toLowerCase().includes(needle) || q.id.toLowerCase().includes(needle))) return;
      list.append(el("button", { type: "button", class: "q-item" + (IS.question === i ? " selected" : ""), "data-qid": q.id,
        onclick: () => { IS.question = i; IS.doc = q.doc; const s = document.getElementById("insp-doc"); if (s) s.value = String(q.doc); renderInspectorViews(); } },
        el("span", { class: "qid", text: `${q.id} · ${data.docs[q.doc].id}` }), q.text));
    });
  }

  function renderQuestion() {
    const data = insp();
    const box = document.getElementById("q-detail");
    if (!box) return;
    clear(box);
    if (IS.question === null) { box.append(el("p", { class: "muted", text: "Pick a question to see its excerpts and the chunks the chosen cell retrieves for it." })); return; }
    const q = data.questions[IS.question];
    const doc = data.docs[q.doc];
    const spans = excerptUnion(q.excerpts);
    const total = q.excerpts.reduce((n, e) => n + (e[1] - e[0]), 0);
    box.append(el("p", {}, el("b", { text: q.text })), el("p", { class: "muted", text: `${q.id} · document ${doc.id} · ${q.excerpts.length} excerpt(s), ${int(total)} characters` }));
    for (const [s, e] of q.excerpts) box.append(el("div", { class: "excerpt", text: textOf(doc, s, e) }));
    const cd = decodeCell(data, IS.cell);
    const depth = depthFor(cd, IS.question);
    const ids = cd.rank[IS.question].slice(0, depth);
    let covered = [];
    const cards = [];
    ids.forEach((id, r) => {
      const j = cd.byId.get(id);
      if (j === undefined) return;
      const cdoc = data.docs[cd.docs[j]];
      const same = cd.docs[j] === q.doc;
      const start = cd.starts[j], end = cd.ends[j];
      const overlap = same ? overlapOf(spans, start, end) : 0;
      if (same) covered.push([start, end]);
      const card = el("div", { class: "chunk-card" + (overlap ? " hit" : ""), "data-rank": r + 1, "data-overlap": overlap },
        el("div", { class: "head" }, el("b", { text: `#${r + 1}` }), ` similarity ${fixed(cd.score[IS.question][r], 4)} · chunk ${id} of ${cdoc.id} · characters [${start}, ${end}) · `,
          el("b", { text: `${int(overlap)} characters overlap the excerpts` })),
        same ? markedText(cdoc, start, end, spans) : el("div", { class: "body", text: textOf(cdoc, start, end) }));
      cards.push(card);
    });
    covered = excerptUnion(covered);
    let hit = 0;
    for (const [s, e] of spans) hit += overlapOf(covered, s, e);
    box.append(el("p", { id: "q-summary" }, `${cellOf(Number(IS.cell)).label}, top ${depth} (${IS.retrieval === null ? "dense ranking" : rShort(IS.retrieval)}): `,
      el("b", { text: `${int(hit)} of ${int(total)} excerpt characters retrieved` }), total ? ` (recall ${pct(hit / total, 1)}%).` : ".",
      RETRIEVALS[IS.retrieval] && RETRIEVALS[IS.retrieval].name === "token_budget" ? " A token budget may keep only the start of the last chunk; it is shown whole here." : ""));
    box.append(...cards);
  }

  function renderDocument() {
    const data = insp();
    const view = document.getElementById("doc-view");
    if (!view) return;
    clear(view);
    const d = IS.doc;
    const doc = data.docs[d];
    const cd = decodeCell(data, IS.cell);
    const chunks = [];
    for (let j = 0; j < cd.ids.length; j++) if (cd.docs[j] === d) chunks.push([cd.starts[j], cd.ends[j], cd.ids[j]]);
    chunks.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const allEx = excerptUnion(data.questions.filter((q) => q.doc === d).flatMap((q) => q.excerpts));
    const qEx = IS.question !== null && data.questions[IS.question].doc === d ? excerptUnion(data.questions[IS.question].excerpts) : [];
    const inside = (spans, a) => spans.some(([s, e]) => s <= a && a < e);
    document.getElementById("doc-summary").textContent =
      `${doc.id}: ${int(doc.length)} characters, ${chunks.length} chunk(s) of ${cellOf(Number(IS.cell)).label} shown` + (doc.trimmed ? " (trimmed to windows)." : ".");
    let last = 0;
    for (const [ps, text] of doc.pieces) {
      if (ps > last) view.append(el("span", { class: "gap-note", text: `… ${int(ps - last)} characters not carried …` }));
      const pe = ps + text.length;
      const cuts = new Set([ps, pe]);
      for (const [s, e] of chunks) { if (s > ps && s < pe) cuts.add(s); if (e > ps && e < pe) cuts.add(e); }
      for (const spans of [allEx, qEx]) for (const [s, e] of spans) { if (s > ps && s < pe) cuts.add(s); if (e > ps && e < pe) cuts.add(e); }
      const bounds = Array.from(cuts).sort((a, b) => a - b);
      let lo = 0;
      for (let b = 0; b + 1 < bounds.length; b++) {
        const a = bounds[b], z = bounds[b + 1];
        while (lo < chunks.length && chunks[lo][1] <= a) lo++;
        const covering = [];
        for (let j = lo; j < chunks.length && chunks[j][0] <= a; j++) if (chunks[j][1] > a) covering.push(j);
        for (let j = lo; j < chunks.length && chunks[j][0] <= a; j++) if (chunks[j][0] === a) view.append(el("span", { class: "cb", title: `chunk ${chunks[j][2]}`, text: String(chunks[j][2]) }));
        let cls = covering.length > 1 ? "ov" : covering.length === 1 ? `c${covering[0] % 2}` : "";
        if (inside(allEx, a)) cls = "ex";
        if (inside(qEx, a)) cls = "exq";
        view.append(el("span", { class: cls || null, text: text.slice(a - ps, z - ps) }));
      }
      last = pe;
    }
    if (last < doc.length) view.append(el("span", { class: "gap-note", text: `… ${int(doc.length - last)} characters not carried …` }));
  }

  // ---------------------------------------------------------------- start
  // plotly.js comes gzip-compressed and base64-encoded in #plotly-js (a third of its size):
  // inflated with the browser's DecompressionStream and run as a script of the page.
  async function loadPlotly() {
    const packed = document.getElementById("plotly-js");
    if (typeof Plotly !== "undefined" || !packed) return;
    try {
      const bytes = Uint8Array.from(atob(packed.textContent.trim()), (c) => c.charCodeAt(0));
      const inflated = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      const script = document.createElement("script");
      script.textContent = await new Response(inflated).text();
      document.head.append(script);
    } catch (error) {
      document.getElementById("plot-size-note").textContent =
        `The plots need a browser that can inflate the page's plotly.js (DecompressionStream): ${error}.`;
    }
  }

  function start() {
    renderHeader();
    renderFailures();
    renderRecommendation();
    renderLeaderboardFilters();
    renderLeaderboardHead();
    renderLeaderboardBody();
    renderPlotControls();
    renderComparisons();
    renderRelations();
    renderAnswers();
    renderInspector();
    loadPlotly().then(() => {
      renderPlots();
      document.body.setAttribute("data-ready", "true");
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

// mtr review: the page's script. No framework; every text goes in with textContent.
"use strict";
(function () {
  const token = new URLSearchParams(location.search).get("token") || "";
  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const state = {
    tab: "sample",
    index: { sample: 0, flagged: 0 },
    queues: null,
    card: null,
    label: null,
    shownAt: 0,
    undo: [],
    busy: false,
  };

  let pending = 0;

  async function api(path, body) {
    const opts = { headers: { "x-mtr-token": token } };
    if (body !== undefined) {
      opts.method = "POST";
      opts.headers["content-type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    // requests in flight, as data-pending on <body> (0 when the page is at rest)
    document.body.dataset.pending = String(++pending);
    try {
      const r = await fetch(path, opts);
      const data = await r.json().catch(() => ({}));
      if (!r.ok) throw new Error(data.error || "HTTP " + r.status);
      return data;
    } finally {
      document.body.dataset.pending = String(--pending);
    }
  }

  function status(text, error) {
    const s = $("status");
    s.textContent = text;
    s.className = error ? "error" : "";
  }

  function showCounts() {
    for (const q of ["sample", "flagged"]) {
      const s = state.queues[q];
      $("count-" + q).textContent = "(" + s.labelled + "/" + s.total + ")";
    }
    // the tab's queue; on the summary tab, both queues together
    const qs = state.tab === "summary" ? ["sample", "flagged"] : [state.tab];
    const done = qs.reduce((n, q) => n + state.queues[q].labelled, 0);
    const total = qs.reduce((n, q) => n + state.queues[q].total, 0);
    const pct = total ? (100 * done) / total : 0;
    $("progress-bar").style.width = pct + "%";
  }

  async function refresh() {
    const st = await api("/api/state");
    state.queues = st.queues;
    $("reviewer").textContent = "reviewer: " + st.reviewer;
    $("bench").textContent = st.benchmark ? "- " + st.benchmark : "";
    showCounts();
    return st;
  }

  function marked(text, words) {
    const p = el("p");
    if (!words.length) {
      p.textContent = text;
      return p;
    }
    const set = new Set(words);
    // split into word and non-word runs, marking the question's words
    const parts = text.split(/([\p{L}\p{N}]+)/u);
    for (const part of parts) {
      if (part && set.has(part.toLowerCase())) p.appendChild(el("mark", "", part));
      else if (part) p.appendChild(document.createTextNode(part));
    }
    return p;
  }

  function renderCard() {
    const c = state.card;
    const total = state.queues[state.tab].total;
    $("position").textContent =
      "card " + (state.index[state.tab] + 1) + " of " + total + " - " + c.kind + " - turn " + c.turn_id +
      (state.label !== null ? " - labelled: " + state.label : "");
    $("history-summary").textContent = c.history.length
      ? "Dialogue so far (" + c.history.length + " utterances)"
      : "First turn of the dialogue";
    const hl = $("history-list");
    hl.replaceChildren();
    for (const u of c.history) {
      const li = el("li", u.speaker, u.speaker + ": " + u.text);
      hl.appendChild(li);
    }
    $("question").textContent = c.question;
    $("rewrite").textContent = c.rewrite || "";
    $("rewrite-row").hidden = !c.rewrite;
    $("answer").textContent = c.answer || "";
    $("answer-row").hidden = !c.answer;
    $("prompt").textContent = c.prompt;
    const ps = $("passages");
    ps.replaceChildren();
    c.passages.forEach((p, i) => {
      const d = el("div", "passage " + p.role);
      const h = el("h3");
      const n = c.kind === "completeness" ? "Passage " + (i + 1) + ": " : p.role === "candidate" ? "Candidate: " : "Gold: ";
      h.appendChild(document.createTextNode(n + (p.title || "(untitled)") + " "));
      h.appendChild(el("span", "pid", "[" + p.id + "]"));
      d.appendChild(h);
      d.appendChild(marked(p.text, c.words));
      if (state.label !== null && state.label === p.id) d.classList.add("chosen");
      ps.appendChild(d);
    });
    const flag = $("flag");
    flag.hidden = !c.why;
    $("why").textContent = c.why || "";
    const rs = $("reasons");
    rs.replaceChildren();
    for (const [judge, text] of Object.entries(c.reasons || {})) {
      const li = el("li");
      li.appendChild(el("strong", "", judge + ": "));
      li.appendChild(document.createTextNode(text));
      rs.appendChild(li);
    }
    const ch = $("choices");
    ch.replaceChildren();
    for (const choice of c.choices) {
      const b = el("button", state.label === choice.label ? "current" : "");
      b.appendChild(el("kbd", "", choice.key));
      b.appendChild(document.createTextNode(" " + choice.text));
      b.dataset.label = choice.label;
      b.addEventListener("click", () => save(choice.label));
      ch.appendChild(b);
    }
  }

  // What the page shows now, as data attributes of #card-view (what a browser test waits on).
  function shown(queue, item) {
    const v = $("card-view");
    v.dataset.queue = queue;
    v.dataset.index = String(state.index[queue]);
    v.dataset.item = item;
  }

  function renderDone() {
    shown(state.tab, "");
    $("card").hidden = true;
    $("choices").replaceChildren();
    const total = state.queues[state.tab].total;
    $("position").textContent = total
      ? "End of the queue (" + state.queues[state.tab].labelled + " of " + total + " labelled). Use the left arrow to go back."
      : "This queue is empty.";
  }

  async function show(index) {
    const q = state.tab;
    const total = state.queues[q].total;
    state.index[q] = Math.max(0, Math.min(index, total));
    $("note").value = "";
    if (state.index[q] >= total) {
      state.card = null;
      renderDone();
      return;
    }
    const r = await api("/api/card?queue=" + q + "&index=" + state.index[q]);
    state.card = r.card;
    state.label = r.label;
    state.shownAt = performance.now();
    $("card").hidden = false;
    renderCard();
    shown(q, state.card.item);
  }

  async function save(label) {
    if (!state.card || state.busy) return;
    state.busy = true;
    const q = state.tab;
    const index = state.index[q];
    try {
      const r = await api("/api/label", {
        queue: q,
        index: index,
        item: state.card.item,
        label: label,
        seconds: (performance.now() - state.shownAt) / 1000,
        note: $("note").value,
      });
      state.queues[q] = r.state;
      showCounts();
      if (label === null) {
        status("undone: " + state.card.item);
        await show(index);
      } else {
        state.undo.push({ queue: q, index: index });
        status("saved " + label + " for " + state.card.item);
        // the next card this reviewer has not labelled (after a skipped one: on from there)
        await show(typeof r.next === "number" ? r.next : index + 1);
      }
    } catch (e) {
      status("not saved: " + e.message, true);
    } finally {
      state.busy = false;
    }
  }

  async function undo() {
    if (state.busy) return;
    const last = state.undo.pop();
    if (last) {
      if (last.queue !== state.tab) await switchTab(last.queue, false);
      await show(last.index);
    }
    if (state.card && state.label !== null) await save(null);
    else status("nothing to undo");
  }

  async function switchTab(tab, resume) {
    state.tab = tab;
    status("");
    for (const t of ["sample", "flagged", "summary"]) {
      $("tab-" + t).setAttribute("aria-selected", String(t === tab));
    }
    history.replaceState(null, "", location.pathname + location.search + "#" + tab);
    $("card-view").hidden = tab === "summary";
    $("summary-view").hidden = tab !== "summary";
    if (tab === "summary") return renderSummary();
    showCounts();
    if (resume) await show(state.index[tab]);
  }

  async function renderSummary() {
    const s = await api("/api/summary");
    state.queues = s.queues;
    showCounts();
    const box = $("summary-tables");
    box.replaceChildren();
    for (const queue of ["sample", "flagged"]) {
      const groups = s.labels[queue] || {};
      const t = el("table", "summary");
      const head = el("tr");
      for (const h of [queue === "sample" ? "Random sample: dimension" : "Flagged: kind", "items", "labelled by you", "labels (all reviewers)"]) head.appendChild(el("th", "", h));
      t.appendChild(head);
      for (const [group, counts] of Object.entries(groups)) {
        const by = s.queues[queue].by[group] || { total: 0, labelled: 0 };
        const labels = Object.entries(counts).filter(([k]) => k !== "items").map(([k, v]) => k + ": " + v).join(", ");
        const tr = el("tr");
        for (const v of [group, by.total, by.labelled, labels || "-"]) tr.appendChild(el("td", "", String(v)));
        t.appendChild(tr);
      }
      box.appendChild(t);
    }
    const who = Object.entries(s.reviewers).map(([k, v]) => k + " (" + v + ")").join(", ");
    box.appendChild(el("p", "", "Reviewers: " + (who || "none yet")));
    renderEstimates(s.estimates);
  }

  // The "Reviewed" figures (as `mtr report` writes them): per dimension the share failing
  // three ways with 95% intervals, and the sentence saying which number to publish.
  function renderEstimates(r) {
    const box = $("estimates");
    box.textContent = "";
    if (!r) {
      box.textContent = "No usable label on the random sample yet.";
      return;
    }
    const fmt = (e) => e.estimate == null ? "-"
      : (100 * e.estimate).toFixed(1) + "%" + (e.ci ? " [" + (100 * e.ci.lower).toFixed(1) + ", " + (100 * e.ci.upper).toFixed(1) + "]" : "") + " (n=" + e.n + ")";
    if (r.runs) return renderHoleEstimates(box, r, fmt);
    const t = el("table", "summary");
    const head = el("tr");
    for (const h of ["dimension", "fails when", "judges only", "reviewers only", "prediction-powered"]) head.appendChild(el("th", "", h));
    t.appendChild(head);
    for (const [dim, d] of Object.entries(r.dimensions)) {
      const tr = el("tr");
      for (const v of [dim, d.fails, fmt(d.judges), fmt(d.reviewers), fmt(d.ppi)]) tr.appendChild(el("td", "", v));
      t.appendChild(tr);
    }
    box.appendChild(t);
    box.appendChild(el("p", "", r.publish));
  }

  // A judge folder's holes (`mtr judge`): per run, the share of its holes that are relevant
  // three ways, and its measures filled by the judges -> with the reviewers' labels.
  function renderHoleEstimates(box, r, fmt) {
    const k = r.depth;
    const num = (x) => x == null ? "-" : x.toFixed(4);
    const t = el("table", "summary holes");
    const head = el("tr");
    for (const h of ["run", "judged holes", "relevant: judges", "relevant: reviewers", "relevant: prediction-powered", "P@" + k + " filled → reviewed", "nDCG@" + k + " filled → reviewed"]) head.appendChild(el("th", "", h));
    t.appendChild(head);
    for (const x of r.runs) {
      const tr = el("tr");
      const p = "P_" + k, n = "ndcg_cut_" + k;
      for (const v of [x.run, String(x.holes), fmt(x.relevant_share.judges), fmt(x.relevant_share.reviewers), fmt(x.relevant_share.ppi), num(x.filled[p]) + " → " + num(x.reviewed[p]), num(x.filled[n]) + " → " + num(x.reviewed[n])]) tr.appendChild(el("td", "", v));
      t.appendChild(tr);
    }
    box.appendChild(t);
    box.appendChild(el("p", "", r.sampled + " holes reviewed on the random sample (a rating of at least " + r.relevant_at_least + " reads as relevant), " + r.flagged + " in the flagged queue. Publish the prediction-powered share: it is unbiased whatever the judges are worth."));
  }

  function onKey(ev) {
    if (ev.target && (ev.target.tagName === "TEXTAREA" || ev.target.tagName === "INPUT")) {
      if (ev.key === "Escape") ev.target.blur();
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const help = $("help");
    if (ev.key === "?") { help.hidden = !help.hidden; ev.preventDefault(); return; }
    if (ev.key === "Escape") { help.hidden = true; return; }
    if (ev.key === "t") {
      const order = ["sample", "flagged", "summary"];
      switchTab(order[(order.indexOf(state.tab) + 1) % 3], true);
      return;
    }
    if (state.tab === "summary") return;
    if (ev.key === " ") { ev.preventDefault(); show(state.index[state.tab] + 1); return; }
    if (ev.key === "ArrowRight") { show(state.index[state.tab] + 1); return; }
    if (ev.key === "ArrowLeft") { show(state.index[state.tab] - 1); return; }
    if (ev.key === "u") { undo(); return; }
    if (!state.card) return;
    const choice = state.card.choices.find((c) => c.key === ev.key);
    if (choice) { ev.preventDefault(); save(choice.label); }
  }

  async function start() {
    for (const t of ["sample", "flagged", "summary"]) {
      $("tab-" + t).addEventListener("click", () => switchTab(t, true));
    }
    $("prev").addEventListener("click", () => show(state.index[state.tab] - 1));
    $("next").addEventListener("click", () => show(state.index[state.tab] + 1));
    $("skip").addEventListener("click", () => show(state.index[state.tab] + 1));
    $("undo").addEventListener("click", undo);
    $("help-button").addEventListener("click", () => { $("help").hidden = !$("help").hidden; });
    $("help-close").addEventListener("click", () => { $("help").hidden = true; });
    document.addEventListener("keydown", onKey);
    try {
      const st = await refresh();
      // a restart resumes at the first unlabelled card of each queue
      for (const q of ["sample", "flagged"]) state.index[q] = st.queues[q].first_unlabelled;
      const tab = location.hash.slice(1);
      await switchTab(["sample", "flagged", "summary"].includes(tab) ? tab : "sample", true);
    } catch (e) {
      status("cannot load the review: " + e.message + " (open the URL mtr review printed, with its token)", true);
    }
  }
  start();
})();

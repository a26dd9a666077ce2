// mtr leaderboard page: renders the embedded leaderboard.json into sortable tables and SVG
// charts. Self-contained: no network, no libraries. `#selftest` in the URL runs a check of the
// page (sorting, charts, errors) and writes its result into <pre id="mtr-selftest">.
(function () {
  'use strict';
  var errors = [];
  window.addEventListener('error', function (e) { errors.push(String(e.message || e)); });
  var consoleError = console.error;
  console.error = function () {
    errors.push(Array.prototype.map.call(arguments, String).join(' '));
    consoleError.apply(console, arguments);
  };

  var SVG = 'http://www.w3.org/2000/svg';
  // 20 colours told apart by hue and lightness (Tableau 10 plus 10 darker/other hues); series
  // 11-20 also draw square markers, so a repeated hue is never the only cue.
  var PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf',
    '#393b79', '#e6550d', '#006d2c', '#843c39', '#d6616b', '#637939', '#7b4173', '#3182bd', '#bd9e39', '#000000'];
  var MAX_SERIES = 20;
  var CHAR_W = 6.2; // width of one 11px character, for laying out labels before they are drawn

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    setAttrs(e, attrs);
    append(e, children);
    return e;
  }
  function sv(tag, attrs, children) {
    var e = document.createElementNS(SVG, tag);
    setAttrs(e, attrs);
    append(e, children);
    return e;
  }
  function setAttrs(e, attrs) {
    if (!attrs) return;
    Object.keys(attrs).forEach(function (k) {
      if (attrs[k] === null || attrs[k] === undefined) return;
      if (k === 'text') e.textContent = attrs[k];
      else e.setAttribute(k, attrs[k]);
    });
  }
  function append(e, children) {
    if (!children) return;
    (Array.isArray(children) ? children : [children]).forEach(function (c) {
      if (c === null || c === undefined) return;
      e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    });
  }
  function fmt(x, d) {
    return (x === null || x === undefined || typeof x !== 'number' || isNaN(x)) ? '–' : x.toFixed(d);
  }
  function label(board, id) {
    for (var i = 0; i < board.measures.length; i++) if (board.measures[i].id === id) return board.measures[i].label;
    return id;
  }
  function indexOf(board, system) {
    for (var i = 0; i < board.rows.length; i++) if (board.rows[i].system === system) return i;
    return -1;
  }
  function colorOf(board, system) {
    var i = indexOf(board, system);
    return i < 0 ? '#444' : PALETTE[i % PALETTE.length];
  }
  function squareOf(board, system) {
    return indexOf(board, system) % (2 * 10) >= 10;
  }
  function naText(r) { return 'n/a (depth ' + r.depth + ')'; }
  function sigMark(r) {
    var vs = r.versus;
    if (!vs || !vs.significant) return null;
    return el('span', { 'class': 'sig ' + (vs.diff > 0 ? 'up' : 'down'), title: 'significantly ' + (vs.diff > 0 ? 'better' : 'worse') + ' than ' + vs.baseline + ' (Holm p = ' + fmt(vs.p_holm, 4) + ')', text: vs.diff > 0 ? '▲' : '▼' });
  }
  function scale(d0, d1, r0, r1) {
    var span = (d1 - d0) || 1;
    return function (v) { return r0 + (v - d0) / span * (r1 - r0); };
  }
  function niceTicks(lo, hi, n) {
    var span = hi - lo || 1, step = Math.pow(10, Math.floor(Math.log(span / n) / Math.LN10));
    var err = span / n / step;
    if (err >= 7.5) step *= 10; else if (err >= 3.5) step *= 5; else if (err >= 1.5) step *= 2;
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.round(v / step) * step);
    return out;
  }
  function yAxis(g, y, ticks, x0, x1) {
    var axis = sv('g', { 'class': 'axis' });
    ticks.forEach(function (t) {
      axis.appendChild(sv('line', { x1: x0, x2: x1, y1: y(t), y2: y(t) }));
      axis.appendChild(sv('text', { x: x0 - 6, y: y(t) + 4, 'text-anchor': 'end', text: fmt(t, 2) }));
    });
    g.appendChild(axis);
  }
  function legend(board, systems, width) {
    var g = sv('g', { 'class': 'legend' });
    var x = 0, y = 0;
    systems.forEach(function (s) {
      var w = Math.min(260, 18 + s.length * 6.2);
      if (x + w > width) { x = 0; y += 16; }
      g.appendChild(sv('rect', { x: x, y: y, width: 10, height: 10, rx: squareOf(board, s) ? 0 : 5, fill: colorOf(board, s) }));
      g.appendChild(sv('text', { x: x + 14, y: y + 9, text: s }));
      x += w + 10;
    });
    return { g: g, height: y + 16 };
  }
  function whisker(g, x, y0, y1, color, title) {
    var l = sv('line', { x1: x, x2: x, y1: y0, y2: y1, stroke: color, 'stroke-width': 1.5 });
    if (title) l.appendChild(sv('title', { text: title }));
    g.appendChild(l);
  }
  function dot(g, x, y, color, title, square) {
    var c = square ? sv('rect', { x: x - 3.5, y: y - 3.5, width: 7, height: 7, fill: color, 'class': 'mark' })
      : sv('circle', { cx: x, cy: y, r: 3.5, fill: color, 'class': 'mark' });
    if (title) c.appendChild(sv('title', { text: title }));
    g.appendChild(c);
    return c;
  }

  // --- the sortable table -------------------------------------------------------------
  function table(board) {
    var main = board.main_measure;
    var others = board.measures.filter(function (m) { return m.id !== main; });
    // The significance mark sits in the main measure's cell and the difference right after it,
    // so both stay on screen however many measures follow.
    var cols = [
      { key: 'rank', title: '#', num: true, get: function (r) { return r.rank; } },
      { key: 'system', title: 'system', text: true, get: function (r) { return r.system; } },
      { key: 'kind', title: 'kind', text: true, get: function (r) { return r.formulation ? r.retriever + ' / ' + r.formulation : r.kind; } },
      { key: main, title: label(board, main), num: true, main: true, get: function (r) { return r.measures[main] ? r.measures[main].mean : null; } },
      { key: 'versus', title: 'vs baseline', num: true, get: function (r) { return r.versus ? r.versus.diff : null; } },
      { key: 'depth', title: 'depth', num: true, get: function (r) { return r.depth || null; } }
    ];
    // mtr bench --fill-holes K: Judged@K, and beside each measure its value with the holes filled
    var holes = board.holes;
    function filledCol(id, title) {
      return { key: id + ' filled', title: title + ' filled', num: true, filled: true, get: function (r) { var h = rowHoles(board, r); return h && h.filled[id] ? h.filled[id].mean : null; } };
    }
    if (holes) {
      cols.splice(4, 0, filledCol(main, label(board, main)));
      cols.push({ key: 'judged', title: 'Judged@' + holes.depth, num: true, judged: true, get: function (r) { var h = rowHoles(board, r); return h ? h.judged.mean : null; } });
    }
    others.forEach(function (m) {
      cols.push({ key: m.id, title: m.label, num: true, measure: true, get: function (r) { return r.measures[m.id] ? r.measures[m.id].mean : null; } });
      if (holes) cols.push(filledCol(m.id, m.label));
    });
    cols.push({ key: 'date', title: 'date', text: true, get: function (r) { return r.date; } });
    if (board.labels) cols.push({ key: 'label_robust', title: 'label-robust', text: true, get: robustText });

    var thead = el('thead'), tr = el('tr'), tbody = el('tbody');
    var t = el('table', { 'class': 'board', 'data-board': board.id }, [thead, tbody]);
    thead.appendChild(tr);
    var rows = board.rows.map(function (r) {
      var row = el('tr', { 'data-system': r.system });
      cols.forEach(function (c) {
        var v = c.get(r), td;
        if (c.main) {
          var e = r.measures[main];
          var shallow = (r.beyond_depth || []).indexOf(main) >= 0;
          td = el('td', { 'class': 'main' }, [fmt(v, 4), sigMark(r), shallow ? el('span', { 'class': 'dagger', title: 'deeper than the run (' + naText(r) + '): a lower bound', text: '†' }) : null, ' ', el('span', { 'class': 'ci', text: e ? '[' + fmt(e.ci_low, 3) + ', ' + fmt(e.ci_high, 3) + ']' : '' })]);
        } else if (c.key === 'system') {
          td = el('td', { 'class': 'name' }, [el('span', { 'class': 'swatch', style: 'background:' + colorOf(board, r.system) }), r.system]);
          if (r.findings && r.findings.length) td.setAttribute('title', r.findings.join('\n'));
        } else if (c.key === 'versus') {
          var vs = r.versus;
          var isBase = board.rows.some(function (x) { return x.versus && x.versus.baseline === r.system; });
          var txt = vs ? (vs.diff >= 0 ? '+' : '') + fmt(vs.diff, 4) : (isBase ? 'baseline' : '–');
          td = el('td', { 'class': vs && vs.significant ? (vs.diff > 0 ? 'up' : 'down') : '' }, [vs && vs.significant ? (vs.diff > 0 ? '▲ ' : '▼ ') + txt : txt]);
          if (vs) td.setAttribute('title', 'vs ' + vs.baseline + ', Holm p = ' + fmt(vs.p_holm, 4));
        } else if (c.measure && (v === null || v === undefined) && (r.beyond_depth || []).indexOf(c.key) >= 0) {
          td = el('td', { 'class': 'na', title: c.title + ' is deeper than the run: not comparable with deeper runs', text: naText(r) });
        } else if (c.judged) {
          var jh = rowHoles(board, r);
          td = el('td', { 'class': 'judged', text: jh ? fmt(jh.judged.mean, 3) + ' → ' + fmt(jh.judged_filled.mean, 3) : '–' });
          td.setAttribute('title', 'share of the top ' + holes.depth + ' the qrels judge: original → with the holes judged');
        } else if (c.filled) {
          td = el('td', { 'class': 'filled', text: v === null || v === undefined ? '–' : fmt(v, 4) });
        } else if (c.key === 'depth') {
          td = el('td', { text: v ? String(v) : '–' });
        } else if (c.num) {
          td = el('td', { text: c.key === 'rank' ? String(v) : fmt(v, 4) });
        } else {
          td = el('td', { 'class': 'text', text: v === null || v === undefined ? '' : String(v) });
        }
        td.setAttribute('data-value', v === null || v === undefined ? '' : String(v));
        row.appendChild(td);
      });
      return { row: row, data: r };
    });
    rows.forEach(function (r) { tbody.appendChild(r.row); });

    var state = { key: 'rank', dir: 'ascending' };
    cols.forEach(function (c, i) {
      var th = el('th', { 'data-key': c.key, 'class': c.text ? 'text' : null, scope: 'col', title: 'sort by ' + c.title, text: c.title });
      if (c.key === 'rank') th.setAttribute('aria-sort', 'ascending');
      th.addEventListener('click', function () {
        var dir = state.key === c.key ? (state.dir === 'ascending' ? 'descending' : 'ascending') : (c.num && c.key !== 'rank' ? 'descending' : 'ascending');
        state = { key: c.key, dir: dir };
        var sign = dir === 'ascending' ? 1 : -1;
        rows.sort(function (a, b) {
          var x = cols[i].get(a.data), y = cols[i].get(b.data);
          var xm = x === null || x === undefined, ym = y === null || y === undefined;
          if (xm || ym) return xm === ym ? a.data.rank - b.data.rank : (xm ? 1 : -1);
          var cmp = c.num ? x - y : String(x).localeCompare(String(y));
          return cmp !== 0 ? sign * cmp : a.data.rank - b.data.rank;
        });
        rows.forEach(function (r) { tbody.appendChild(r.row); });
        Array.prototype.forEach.call(tr.children, function (h) { h.removeAttribute('aria-sort'); });
        th.setAttribute('aria-sort', dir);
      });
      tr.appendChild(th);
    });
    return el('div', { 'class': 'scroll' }, t);
  }

  // a row's holes when it was filled at the board's depth
  function rowHoles(board, r) {
    return board.holes && r.holes && r.holes.depth === board.holes.depth ? r.holes : null;
  }
  function holesLine(board) {
    var h = board.holes, k = h.depth;
    var tau = h.kendall_tau ? ' Kendall\'s tau-b of the order by ' + label(board, board.main_measure) + ', original against filled: ' + fmt(h.kendall_tau.mean, 3) + ' [' + fmt(h.kendall_tau.ci_low, 3) + ', ' + fmt(h.kendall_tau.ci_high, 3) + '].' : '';
    return 'Holes: ' + h.holes + ' passages in the systems\' top ' + k + ' that the qrels do not judge, ' + h.judged + ' judged (' + h.folder + '/), ' + h.relevant + ' of them relevant. Judged@' + k + ': the share of the top ' + k + ' the qrels judge, original → filled; "filled": the measure with the judged holes added to the qrels.' + tau;
  }

  // --- charts ---------------------------------------------------------------------------
  // label robustness (mtr bench --audit): the rank interval under every audited variant
  function robustText(r) {
    var x = r.label_robust;
    if (!x) return '–';
    return x.robust ? '✓ ' + x.best : x.best + '–' + x.worst;
  }
  function labelsLine(board) {
    var l = board.labels;
    var parts = l.variants.map(function (v) {
      var t = v.kendall_tau;
      return v.variant + ': tau ' + (t ? fmt(t.mean, 3) + ' [' + fmt(t.ci_low, 3) + ', ' + fmt(t.ci_high, 3) + ']' : '–') + ', tau_AP ' + (v.tau_ap ? fmt(v.tau_ap.mean, 3) : '–') + ', ' + v.flips + ' flipped pairs';
    });
    return 'Label sensitivity (' + l.scored_turns_audited + ' of ' + l.scored_turns + ' scored turns audited' + (l.partial ? ', partial: on the audited turns only' : '') + '; golds with alignment below ' + l.flag_rating_below + ' removed, verified missing golds added): ' + parts.join(' · ') + ' · label-robust: rank interval under the original and every variant';
  }
  // original rank -> corrected rank, one line per system
  function slopeChart(board) {
    var sl = board.labels && board.labels.slope;
    if (!sl || !sl.length) return null;
    var n = sl.length, rowH = 22, top = 30, width = 560, left = 200, right = width - 200;
    var height = top + n * rowH + 10;
    var y = function (rank) { return top + (rank - 0.5) * rowH; };
    var s = sv('svg', { 'class': 'chart slope-chart', viewBox: '0 0 ' + width + ' ' + height, width: width, height: height, role: 'img', 'aria-label': 'original rank to corrected rank' });
    s.appendChild(sv('text', { x: left, y: 16, 'text-anchor': 'middle', text: 'original' }));
    s.appendChild(sv('text', { x: right, y: 16, 'text-anchor': 'middle', text: 'corrected' }));
    sl.forEach(function (p) {
      var moved = p.original_rank !== p.corrected_rank;
      var color = moved ? '#c0392b' : '#8a93a6';
      var l = sv('line', { 'class': 'mark', x1: left, x2: right, y1: y(p.original_rank), y2: y(p.corrected_rank), stroke: color, 'stroke-width': moved ? 2 : 1 });
      l.appendChild(sv('title', { text: p.system + ': rank ' + p.original_rank + ' -> ' + p.corrected_rank }));
      s.appendChild(l);
      s.appendChild(sv('text', { x: left - 8, y: y(p.original_rank) + 4, 'text-anchor': 'end', text: p.original_rank + '. ' + (p.system.length > 24 ? p.system.slice(0, 23) + '…' : p.system) }));
      s.appendChild(sv('text', { x: right + 8, y: y(p.corrected_rank) + 4, text: p.corrected_rank + '. ' + (p.system.length > 24 ? p.system.slice(0, 23) + '…' : p.system), fill: color }));
    });
    return s;
  }
  function ciChart(board) {
    var main = board.main_measure;
    var rows = board.rows.filter(function (r) { return r.measures[main]; });
    var left = 230, right = 20, top = 10, rowH = 18, width = 760;
    var height = top + rows.length * rowH + 30;
    var lo = Math.min.apply(null, rows.map(function (r) { return r.measures[main].ci_low; }));
    var hi = Math.max.apply(null, rows.map(function (r) { return r.measures[main].ci_high; }));
    var pad = (hi - lo) * 0.05 || 0.01;
    var x = scale(Math.max(0, lo - pad), hi + pad, left, width - right);
    var s = sv('svg', { 'class': 'chart ci-chart', viewBox: '0 0 ' + width + ' ' + height, width: width, height: height, role: 'img', 'aria-label': label(board, main) + ' with confidence intervals' });
    var axis = sv('g', { 'class': 'axis' });
    niceTicks(Math.max(0, lo - pad), hi + pad, 6).forEach(function (t) {
      axis.appendChild(sv('line', { x1: x(t), x2: x(t), y1: top, y2: height - 24 }));
      axis.appendChild(sv('text', { x: x(t), y: height - 10, 'text-anchor': 'middle', text: fmt(t, 2) }));
    });
    s.appendChild(axis);
    rows.forEach(function (r, i) {
      var e = r.measures[main], y = top + i * rowH + rowH / 2, color = colorOf(board, r.system);
      s.appendChild(sv('text', { x: left - 8, y: y + 4, 'text-anchor': 'end', text: r.system.length > 34 ? r.system.slice(0, 33) + '…' : r.system }));
      var tip = r.system + ': ' + fmt(e.mean, 4) + ' [' + fmt(e.ci_low, 4) + ', ' + fmt(e.ci_high, 4) + ']';
      var l = sv('line', { x1: x(e.ci_low), x2: x(e.ci_high), y1: y, y2: y, stroke: color, 'stroke-width': 2 });
      l.appendChild(sv('title', { text: tip }));
      s.appendChild(l);
      s.appendChild(sv('line', { x1: x(e.ci_low), x2: x(e.ci_low), y1: y - 4, y2: y + 4, stroke: color }));
      s.appendChild(sv('line', { x1: x(e.ci_high), x2: x(e.ci_high), y1: y - 4, y2: y + 4, stroke: color }));
      dot(s, x(e.mean), y, color, tip, squareOf(board, r.system));
    });
    return s;
  }

  // Whether any series has a value in a category that is not greyed out.
  function plottable(opts) {
    return opts.categories.some(function (c) {
      return !c.small && opts.series.some(function (ser) {
        var e = ser.values[c.key];
        return e && typeof e.mean === 'number' && !isNaN(e.mean);
      });
    });
  }

  function lineChart(board, opts) {
    // opts: cls, title, categories [{key,label}], series [{system, values: {key: estimate}}],
    // empty (the line shown instead of a frame with nothing in it)
    if (!plottable(opts)) return el('p', { 'class': 'note empty-chart', text: opts.empty || 'Nothing to plot.' });
    var width = 560, left = 46, right = 12, top = 10;
    var n = opts.categories.length;
    var band = (width - left - right) / Math.max(1, n);
    // Category labels that would not fit their band side by side are drawn at an angle, and
    // cut to a length that the angled room allows: they never overlap.
    var longest = Math.max.apply(null, opts.categories.map(function (c) { return c.label.length; }).concat([1]));
    var tilt = longest * CHAR_W > band - 6;
    var maxChars = tilt ? 18 : longest;
    var labelH = tilt ? Math.min(maxChars, longest) * CHAR_W * 0.5 + 12 : 0;
    var bottom = 34 + labelH;
    var lg = legend(board, opts.series.map(function (s) { return s.system; }), width - left);
    var plotH = 200, height = top + plotH + bottom + lg.height + 8;
    var vals = [];
    opts.series.forEach(function (s) {
      opts.categories.forEach(function (c) { var e = s.values[c.key]; if (e) { vals.push(e.ci_low, e.ci_high); } });
    });
    var hi = vals.length ? Math.max.apply(null, vals) : 1;
    var lo = vals.length ? Math.min.apply(null, vals) : 0;
    lo = Math.max(0, lo - (hi - lo) * 0.05); hi = Math.min(1, hi + (hi - lo) * 0.05) || 1;
    var y = scale(lo, hi, top + plotH, top);
    var s = sv('svg', { 'class': 'chart ' + opts.cls, viewBox: '0 0 ' + width + ' ' + height, width: width, height: height, role: 'img', 'aria-label': opts.title });
    yAxis(s, y, niceTicks(lo, hi, 5), left, width - right);
    opts.categories.forEach(function (c, i) {
      var cx = left + band * (i + 0.5);
      if (c.small) s.appendChild(sv('rect', { x: left + band * i + 1, y: top, width: band - 2, height: plotH, fill: '#eef0f4', 'class': 'small-band' }, [sv('title', { text: c.label + ': ' + c.sub + ', too few turns to plot' })]));
      var text = c.label.length > maxChars ? c.label.slice(0, maxChars - 1) + '…' : c.label;
      var t = tilt ? sv('text', { x: cx, y: top + plotH + 12, 'text-anchor': 'end', transform: 'rotate(-35 ' + cx + ' ' + (top + plotH + 12) + ')', 'class': 'xlabel' + (c.small ? ' small' : ''), text: text })
        : sv('text', { x: cx, y: top + plotH + 16, 'text-anchor': 'middle', 'class': 'xlabel' + (c.small ? ' small' : ''), text: text });
      if (text !== c.label) t.appendChild(sv('title', { text: c.label }));
      s.appendChild(t);
      if (c.sub && !tilt) s.appendChild(sv('text', { x: cx, y: top + plotH + 30, 'text-anchor': 'middle', 'class': 'sub xsub' + (c.small ? ' small' : ''), fill: '#5b6475', text: c.sub }));
      else if (c.sub) t.appendChild(sv('title', { text: c.label + ' (' + c.sub + ')' }));
    });
    var k = opts.series.length;
    opts.series.forEach(function (ser, si) {
      var color = colorOf(board, ser.system);
      var offset = opts.connect ? 0 : (k > 1 ? (si - (k - 1) / 2) * Math.min(8, band * 0.7 / k) : 0);
      var pts = [];
      opts.categories.forEach(function (c, i) {
        var e = ser.values[c.key];
        if (c.small || !e || typeof e.mean !== 'number' || isNaN(e.mean)) return;
        var cx = left + band * (i + 0.5) + offset;
        var tip = ser.system + ' @ ' + c.label + ': ' + fmt(e.mean, 4) + ' [' + fmt(e.ci_low, 4) + ', ' + fmt(e.ci_high, 4) + ']' + (c.sub ? ' (' + c.sub + ')' : '');
        if (opts.whiskers) whisker(s, cx, y(e.ci_low), y(e.ci_high), color, tip);
        dot(s, cx, y(e.mean), color, tip, squareOf(board, ser.system));
        pts.push(cx + ',' + y(e.mean));
      });
      if (opts.connect && pts.length > 1) {
        s.insertBefore(sv('polyline', { points: pts.join(' '), fill: 'none', stroke: color, 'stroke-width': 1.5, opacity: 0.85 }), s.firstChild.nextSibling);
      }
    });
    lg.g.setAttribute('transform', 'translate(' + left + ',' + (top + plotH + bottom + 4) + ')');
    if (tilt) s.setAttribute('data-tilted', 'true');
    s.appendChild(lg.g);
    return s;
  }

  function topSeries(board) {
    return board.rows.slice(0, MAX_SERIES);
  }

  function depthChart(board) {
    var rows = topSeries(board);
    var positions = {};
    rows.forEach(function (r) { (r.by_position || []).forEach(function (p) { positions[p.position] = p; }); });
    var keys = Object.keys(positions).map(Number).sort(function (a, b) { return a - b; });
    if (!keys.length) return null;
    var min = board.min_stratum_turns || 30;
    var cats = keys.map(function (p) { var pt = positions[p]; return { key: String(p), label: pt.and_deeper ? p + '+' : String(p), small: pt.n < min, sub: 'n=' + pt.n + (pt.n < min ? ' (<' + min + ')' : '') }; });
    var series = rows.map(function (r) {
      var v = {};
      (r.by_position || []).forEach(function (p) { v[String(p.position)] = p.estimate; });
      return { system: r.system, values: v };
    });
    return lineChart(board, { cls: 'depth-chart', title: label(board, board.main_measure) + ' by turn position', categories: cats, series: series, connect: true, whiskers: false, empty: 'Nothing to plot: every turn position has fewer than ' + min + ' turns.' });
  }

  function strataCharts(board) {
    var rows = topSeries(board);
    return board.strata.map(function (f) {
      var min = board.min_stratum_turns || 30;
      var cats = f.groups.map(function (g) { return { key: g.name, label: g.name, small: g.small, sub: 'n=' + g.n + (g.small ? ' (<' + min + ')' : '') }; });
      var series = rows.map(function (r) { return { system: r.system, values: (r.strata && r.strata[f.name]) || {} }; });
      var small = f.groups.filter(function (g) { return g.small; }).length;
      var wrap = el('div', null, [el('h3', { text: f.name.replace(/_/g, ' ') })]);
      if (small && small < f.groups.length) wrap.appendChild(el('p', { 'class': 'note', text: small + ' group(s) with fewer than ' + min + ' turns greyed out, not plotted' }));
      wrap.appendChild(lineChart(board, { cls: 'stratum-chart', title: label(board, board.main_measure) + ' by ' + f.name, categories: cats, series: series, connect: false, whiskers: true, empty: 'Nothing to plot: every group has fewer than ' + min + ' turns.' }));
      return wrap;
    });
  }

  function trendChart(board) {
    if (!board.trends || !board.trends.length) return null;
    var dates = {};
    board.trends.forEach(function (t) { t.points.forEach(function (p) { dates[p.date] = true; }); });
    var cats = Object.keys(dates).sort().map(function (d) { return { key: d, label: d }; });
    var series = board.trends.slice(0, MAX_SERIES).map(function (t) {
      var v = {};
      t.points.forEach(function (p) { v[p.date] = p.estimate; });
      return { system: t.system, values: v };
    });
    return lineChart(board, { cls: 'trend-chart', title: label(board, board.main_measure) + ' over time', categories: cats, series: series, connect: true, whiskers: true });
  }

  // Every pair of systems: row minus column, ▲/▼ when significant after Holm over all pairs,
  // and the row's wins/ties/losses over the column on scored turns.
  function pairwiseTable(board) {
    var pw = board.pairwise;
    if (!pw || !pw.pairs.length) return null;
    var names = board.rows.map(function (r) { return r.system; }).filter(function (n) {
      return pw.pairs.some(function (p) { return p.a === n || p.b === n; });
    });
    function find(a, b) {
      for (var i = 0; i < pw.pairs.length; i++) {
        var p = pw.pairs[i];
        if (p.a === a && p.b === b) return { diff: p.diff, p: p.p_holm, sig: p.significant, w: p.wins, t: p.ties, l: p.losses };
        if (p.a === b && p.b === a) return { diff: -p.diff, p: p.p_holm, sig: p.significant, w: p.losses, t: p.ties, l: p.wins };
      }
      return null;
    }
    var head = el('tr', null, [el('th', { 'class': 'text', text: 'row vs column' })]);
    names.forEach(function (n) { head.appendChild(el('th', { 'class': 'text', title: n, text: n.length > 18 ? n.slice(0, 17) + '…' : n })); });
    var body = el('tbody');
    names.forEach(function (a) {
      var tr = el('tr', null, [el('th', { 'class': 'text', scope: 'row', text: a })]);
      names.forEach(function (b) {
        if (a === b) { tr.appendChild(el('td', { 'class': 'self', text: '–' })); return; }
        var c = find(a, b);
        if (!c) { tr.appendChild(el('td', { text: '' })); return; }
        var cls = c.sig ? (c.diff > 0 ? 'up' : 'down') : 'ns';
        tr.appendChild(el('td', { 'class': 'pair ' + cls, title: a + ' vs ' + b + ': Holm p = ' + fmt(c.p, 4) + '; wins/ties/losses ' + c.w + '/' + c.t + '/' + c.l }, [
          (c.sig ? (c.diff > 0 ? '▲ ' : '▼ ') : '') + (c.diff >= 0 ? '+' : '') + fmt(c.diff, 3),
          el('span', { 'class': 'wtl', text: c.w + '/' + c.t + '/' + c.l })
        ]));
      });
      body.appendChild(tr);
    });
    var t = el('table', { 'class': 'pairwise' }, [el('thead', null, head), body]);
    return el('div', { 'class': 'scroll' }, t);
  }

  // --- page -----------------------------------------------------------------------------
  function render() {
    var app = document.getElementById('app');
    app.textContent = '';
    if (data.warnings && data.warnings.length) data.warnings.forEach(function (w) { app.appendChild(el('div', { 'class': 'warning', text: w })); });
    if (data.boards.length > 1) {
      var nav = el('nav', { 'class': 'boards' }, ['Benchmarks: ']);
      data.boards.forEach(function (b) { nav.appendChild(el('a', { href: '#board-' + b.id, text: b.benchmark + (b.part ? ' (' + b.part + ')' : '') })); });
      app.appendChild(nav);
    }
    data.boards.forEach(function (b) {
      var sec = el('section', { id: 'board-' + b.id, 'class': 'board' });
      sec.appendChild(el('h2', { text: b.benchmark + (b.version ? ' (benchmark version ' + b.version + ')' : ' (benchmark version not recorded)') + (b.part ? ' — ' + b.part + ' part' : '') }));
      sec.appendChild(el('p', { 'class': 'meta', text: b.scored_queries + ' scored turns in ' + b.scored_dialogues + ' dialogues · data ' + b.fingerprint.slice(0, 16) + ' · ranked by ' + label(b, b.main_measure) + ' with 95% cluster-bootstrap intervals over dialogues · ▲/▼ next to the score: significant vs the baseline (paired randomization, Holm) · n/a (depth N): the measure is deeper than the run' }));
      (b.warnings || []).forEach(function (w) { sec.appendChild(el('div', { 'class': 'warning', text: w })); });
      if (b.labels) sec.appendChild(el('p', { 'class': 'meta labels', text: labelsLine(b) }));
      if (b.holes) sec.appendChild(el('p', { 'class': 'meta holes', text: holesLine(b) }));
      sec.appendChild(table(b));
      var pt = pairwiseTable(b);
      if (pt) {
        sec.appendChild(el('h3', { text: 'Pairwise significance (' + label(b, b.pairwise.measure) + ', Holm over all pairs; wins/ties/losses per turn)' }));
        sec.appendChild(pt);
      }
      sec.appendChild(el('h3', { text: label(b, b.main_measure) + ' with confidence intervals' }));
      sec.appendChild(ciChart(b));
      var slope = slopeChart(b);
      if (slope) {
        sec.appendChild(el('h3', { text: 'Rank under the original and the corrected qrels (' + label(b, b.labels.measure) + ', audited turns)' }));
        sec.appendChild(slope);
      }
      var grid = el('div', { 'class': 'charts' });
      var depth = depthChart(b);
      if (depth) grid.appendChild(el('div', null, [el('h3', { text: 'By turn depth' }), depth]));
      var trend = trendChart(b);
      if (trend) grid.appendChild(el('div', null, [el('h3', { text: 'Trend' }), trend]));
      strataCharts(b).forEach(function (c) { grid.appendChild(c); });
      sec.appendChild(grid);
      if (b.rows.length > MAX_SERIES) sec.appendChild(el('p', { 'class': 'note', text: 'Charts show the top ' + MAX_SERIES + ' systems; the table has all ' + b.rows.length + '.' }));
      var findings = b.rows.filter(function (r) { return r.findings && r.findings.length; });
      if (findings.length) {
        var d = el('details', null, [el('summary', { text: 'Diagnosis (metric combinations) for ' + findings.length + ' systems' })]);
        var ul = el('ul');
        findings.forEach(function (r) { r.findings.forEach(function (f) { ul.appendChild(el('li', null, [el('b', { text: r.system + ': ' }), f])); }); });
        d.appendChild(ul);
        sec.appendChild(d);
      }
      app.appendChild(sec);
    });
  }

  function selftest() {
    var out = { errors: errors, boards: data.boards.length, sorts: [], charts: {}, marks: 0, ok: false };
    var t = document.querySelector('table.board');
    function column(key) {
      var idx = Array.prototype.map.call(t.tHead.rows[0].cells, function (c) { return c.getAttribute('data-key'); }).indexOf(key);
      return Array.prototype.map.call(t.tBodies[0].rows, function (r) { return r.cells[idx].getAttribute('data-value'); });
    }
    function sorted(vals, num, dir) {
      for (var i = 1; i < vals.length; i++) {
        var a = num ? parseFloat(vals[i - 1]) : vals[i - 1], b = num ? parseFloat(vals[i]) : vals[i];
        var cmp = num ? a - b : String(a).localeCompare(String(b));
        if (dir === 'descending' ? cmp < 0 : cmp > 0) return false;
      }
      return true;
    }
    if (t) {
      var main = data.boards[0].main_measure;
      var th = t.querySelector('th[data-key="' + main + '"]');
      th.click();
      out.sorts.push({ key: main, dir: th.getAttribute('aria-sort'), ok: th.getAttribute('aria-sort') === 'descending' && sorted(column(main), true, 'descending'), first: t.tBodies[0].rows[0].getAttribute('data-system') });
      th.click();
      out.sorts.push({ key: main, dir: th.getAttribute('aria-sort'), ok: th.getAttribute('aria-sort') === 'ascending' && sorted(column(main), true, 'ascending'), first: t.tBodies[0].rows[0].getAttribute('data-system') });
      var name = t.querySelector('th[data-key="system"]');
      name.click();
      out.sorts.push({ key: 'system', dir: name.getAttribute('aria-sort'), ok: sorted(column('system'), false, 'ascending'), first: t.tBodies[0].rows[0].getAttribute('data-system') });
    }
    ['ci-chart', 'depth-chart', 'stratum-chart', 'trend-chart'].forEach(function (cls) {
      var charts = document.querySelectorAll('svg.' + cls), drawn = 0;
      Array.prototype.forEach.call(charts, function (c) {
        Array.prototype.forEach.call(c.querySelectorAll('.mark, polyline'), function (m) {
          var b = m.getBBox();
          if (b.width > 0 || b.height > 0) drawn++;
        });
      });
      out.charts[cls] = { count: charts.length, marks: drawn };
      out.marks += drawn;
    });
    // significance marks: drawn, and inside the viewport (no horizontal scrolling needed)
    var marks = document.querySelectorAll('table.board .sig');
    out.sig = { count: marks.length, visible: 0, viewport: window.innerWidth };
    Array.prototype.forEach.call(marks, function (m) {
      var r = m.getBoundingClientRect();
      if (r.width > 0 && r.left >= 0 && r.right <= window.innerWidth) out.sig.visible++;
    });
    // measures deeper than a run: the cells that say so, per system
    out.na = [];
    Array.prototype.forEach.call(document.querySelectorAll('table.board td.na'), function (td) {
      var tr = td.parentNode, idx = Array.prototype.indexOf.call(tr.cells, td);
      out.na.push({ system: tr.getAttribute('data-system'), key: t.tHead.rows[0].cells[idx].getAttribute('data-key'), text: td.textContent });
    });
    out.pairwise = document.querySelectorAll('table.pairwise td.pair').length;
    // holes filled (mtr bench --fill-holes K): Judged@K and the filled measures, per row
    out.holes = {
      judged: Array.prototype.filter.call(document.querySelectorAll('table.board td.judged'), function (td) { return td.textContent.indexOf('→') > 0; }).length,
      filled: Array.prototype.filter.call(document.querySelectorAll('table.board td.filled'), function (td) { return td.textContent !== '–'; }).length,
      line: (document.querySelector('p.holes') || {}).textContent || ''
    };
    // series tell apart: distinct (colour, shape) pairs in the first chart's legend
    var keys = {};
    Array.prototype.forEach.call(document.querySelectorAll('svg.depth-chart .legend rect'), function (r) { keys[r.getAttribute('fill') + '/' + r.getAttribute('rx')] = true; });
    out.series = { legend: document.querySelectorAll('svg.depth-chart .legend rect').length, distinct: Object.keys(keys).length };
    out.heading = (document.querySelector('section.board h2') || {}).textContent || '';
    // axis labels never overlap, and greyed-out groups carry no marks
    out.overlaps = 0;
    out.smallMarks = 0;
    out.smallGroups = document.querySelectorAll('svg.chart rect.small-band').length;
    out.emptyCharts = document.querySelectorAll('p.empty-chart').length;
    Array.prototype.forEach.call(document.querySelectorAll('svg.chart'), function (c) {
      if (c.getAttribute('data-tilted') === 'true') {
        // parallel tilted labels: apart when their anchors are a line height apart across the
        // text direction (their axis-aligned boxes overlap by construction)
        var ls = Array.prototype.slice.call(c.querySelectorAll('text.xlabel'));
        var nx = Math.sin(35 * Math.PI / 180), ny = Math.cos(35 * Math.PI / 180);
        for (var i = 1; i < ls.length; i++) {
          var dx = +ls[i].getAttribute('x') - +ls[i - 1].getAttribute('x'), dy = +ls[i].getAttribute('y') - +ls[i - 1].getAttribute('y');
          if (Math.abs(dx * nx + dy * ny) < ls[i].getBBox().height) out.overlaps++;
        }
      } else ['text.xlabel', 'text.xsub'].forEach(function (sel) {
        var boxes = Array.prototype.map.call(c.querySelectorAll(sel), function (x) { return x.getBoundingClientRect(); });
        for (var i = 0; i < boxes.length; i++) for (var j = i + 1; j < boxes.length; j++) {
          var a = boxes[i], b = boxes[j];
          if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5) out.overlaps++;
        }
      });
      var bands = Array.prototype.map.call(c.querySelectorAll('rect.small-band'), function (x) { return x.getBoundingClientRect(); });
      Array.prototype.forEach.call(c.querySelectorAll('.mark'), function (m) {
        var r = m.getBoundingClientRect(), cx = (r.left + r.right) / 2;
        if (bands.some(function (b) { return cx > b.left && cx < b.right; })) out.smallMarks++;
      });
    });
    out.ok = errors.length === 0 && out.overlaps === 0 && out.smallMarks === 0 && out.sig.visible === out.sig.count && out.sorts.length === 3 && out.sorts.every(function (s) { return s.ok; }) && out.charts['ci-chart'].marks > 0 && out.charts['depth-chart'].marks > 0 && out.charts['stratum-chart'].marks > 0;
    var pre = document.getElementById('mtr-selftest');
    pre.textContent = JSON.stringify(out);
    pre.hidden = false;
  }

  var data = JSON.parse(document.getElementById('mtr-data').textContent);
  render();
  if (/selftest/.test(window.location.hash)) selftest();
})();

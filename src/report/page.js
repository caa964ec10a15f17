/* page.js: the report's page script, part 1 of 4 (embedded in the library; html.c writes the
 * parts in order as one script: page.js, page_bench.js, page_side.js, page_main.js). This part
 * opens the script's function and holds its state and helpers: it reads the data (the JSON in
 * #report-data); the parts after it write the sections and draw every chart with Chart.js,
 * then record what was drawn in window.__report_checks and #report-checks (the browser test
 * and `report --format png` read them): each chart's id, its series expected and drawn, its
 * points, whether its canvas has ink, its figure's size; and any script error. */
(function () {
  'use strict';
  var checks = { charts: [], sections: [], errors: [], done: false };
  window.__report_checks = checks;
  window.addEventListener('error', function (e) { checks.errors.push(String(e.message)); });
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var root = document.getElementById('report');
  /* the submissions' colours: no red or amber, which mark failures and misses */
  var palette = ['#2563eb', '#16a34a', '#7c3aed', '#0891b2', '#be185d', '#65a30d', '#854d0e',
                 '#475569'];
  var failedColor = '#c62828', missColor = '#b26a00';
  var charts = [];
  Chart.defaults.animation = false;
  Chart.defaults.font.family = '"DejaVu Sans", "Liberation Sans", Arial, sans-serif';
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.plugins.legend.labels.boxWidth = 14;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function add(parent, tag, cls, text) { var e = el(tag, cls, text); parent.appendChild(e); return e; }
  function fmt(x, d) { return x === null || x === undefined ? '-' : Number(x).toFixed(d === undefined ? 1 : d); }
  function color(i) { return palette[i % palette.length]; }
  function section(id, title, intro) {
    var s = add(root, 'section');
    s.id = id;
    add(s, 'h2', null, title);
    if (intro) add(s, 'p', 'note', intro);
    checks.sections.push(id);
    return s;
  }
  /* A figure with a chart; expected: the number of series it must draw. */
  function figure(parent, id, title, config, expected, foot, wide) {
    var f = add(parent, 'figure', wide ? 'wide' : null);
    f.id = id;
    add(f, 'figcaption', null, title);
    var box = add(f, 'div', 'canvas');
    var canvas = add(box, 'canvas');
    if (foot) add(f, 'div', 'foot', foot);
    config.options = config.options || {};
    config.options.responsive = true;
    var c = new Chart(canvas, config);
    charts.push({ id: id, chart: c, expected: expected, canvas: canvas });
    return c;
  }
  function table(parent, head, rows) {
    var t = add(parent, 'table');
    var tr = add(add(t, 'thead'), 'tr');
    head.forEach(function (h) { add(tr, 'th', null, h); });
    var body = add(t, 'tbody');
    rows.forEach(function (r) {
      var row = add(body, 'tr');
      r.forEach(function (cell) {
        var td = add(row, 'td', cell && cell.cls, cell && typeof cell === 'object' ? cell.text : cell);
        if (cell && cell.title) td.title = cell.title;
      });
    });
    return t;
  }
  function axis(title, extra) {
    var a = { title: { display: true, text: title } };
    for (var k in extra || {}) a[k] = extra[k];
    return a;
  }

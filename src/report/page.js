/* page.js: the report's page script (embedded in the library; html.c). It reads the data
 * (the JSON in #report-data), writes the sections and draws every chart with Chart.js, then
 * records what it drew in window.__report_checks and #report-checks (the browser test reads
 * them): each chart's id, its series expected and drawn, its points, and whether its canvas has
 * ink; and any script error. */
(function () {
  'use strict';
  var checks = { charts: [], sections: [], errors: [], done: false };
  window.__report_checks = checks;
  window.addEventListener('error', function (e) { checks.errors.push(String(e.message)); });
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var root = document.getElementById('report');
  var palette = ['#2563eb', '#dc2626', '#16a34a', '#ea580c', '#7c3aed', '#0891b2', '#be185d',
                 '#65a30d'];
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
  /* A cell of the score table: the time and ratio where reached, else what happened. */
  function cellText(c) {
    var n = ' (' + c.studies_reached + '/' + c.studies + ' studies';
    if (c.trials_failed) n += ', ' + c.trials_failed + ' failed';
    if (c.trials_unfinished) n += ', ' + c.trials_unfinished + ' unfinished';
    n += ')';
    if (c.state === 'reached') return { text: fmt(c.time) + ' s, r = ' + fmt(c.ratio, 2) + n, cls: 'reached' };
    if (c.state === 'disqualified') return { text: fmt(c.time) + ' s, voided by the variant rule' + n, cls: 'disqualified' };
    var words = { miss: 'miss', failed: 'failed', unfinished: 'unfinished' }[c.state];
    return { text: words + n, cls: c.state };
  }

  function scoreTable(s, b) {
    add(s, 'h3', null, 'Score table');
    add(s, 'p', 'note', 'Time to target: the median over studies of each study\'s fastest trial; ' +
        'r: the ratio to the fastest submission (misses and failures are said, not scored as ' +
        'ratios). Score: AlgoPerf\'s benchmark score (1 = fastest everywhere). Speedup: over ' +
        b.reference + ', only where the submission reached a target.');
    var head = ['submission'].concat(b.workloads.map(function (w) { return w.name; }), ['score', 'speedup']);
    table(s, head, b.table.map(function (r) {
      return [r.submission].concat(r.cells.map(cellText),
        [{ text: fmt(r.score, 3), cls: 'num' },
         r.speedup === null ? { text: 'none reached', cls: 'miss' } : { text: fmt(r.speedup, 2) + 'x', cls: 'num' }]);
    }));
  }

  function profiles(s, b, id) {
    var sets = b.profiles.map(function (p, i) {
      return { label: p.submission, data: p.points.map(function (q) { return { x: q[0], y: q[1] }; }),
               borderColor: color(i), backgroundColor: color(i), stepped: 'before', pointRadius: 0,
               borderWidth: 2.5 };
    });
    figure(s, id + '-profiles', 'Performance profiles: rho(tau), the share of workloads within tau of the fastest',
      { type: 'line', data: { datasets: sets },
        options: { scales: { x: axis('tau (ratio to the fastest time)', { type: 'linear', min: 1, max: b.tau_max }),
                             y: axis('rho(tau)', { min: 0, max: 1.02 }) } } },
      sets.length, null, true);
  }

  function timeToTarget(grid, b, id) {
    b.time_to_target.forEach(function (w, wi) {
      var labels = b.submissions;
      var reached = [], missed = [];
      w.studies.forEach(function (v) {
        var pt = { x: labels[v.submission], y: v.time === null ? w.budget_s : v.time, state: v.state, study: v.study };
        (v.time === null ? missed : reached).push(pt);
      });
      figure(grid, id + '-ttt-' + wi, 'Time to target: ' + w.workload, {
        type: 'bar',
        data: { labels: labels, datasets: [
          { type: 'bar', label: 'median over studies', data: w.median,
            backgroundColor: labels.map(function (_, i) { return color(i) + '55'; }),
            borderColor: labels.map(function (_, i) { return color(i); }), borderWidth: 1 },
          { type: 'scatter', label: 'each study', data: reached, backgroundColor: '#111', pointRadius: 5 },
          { type: 'scatter', label: 'study missed or failed (at the budget)', data: missed,
            pointStyle: 'crossRot', borderColor: '#c62828', borderWidth: 2.5, pointRadius: 8 }] },
        options: { scales: { x: { type: 'category', labels: labels },
                             y: axis('seconds to target', { min: 0, suggestedMax: w.budget_s }) } }
      }, 3, 'budget ' + fmt(w.budget_s) + ' s; a bar is absent where the median study missed');
    });
  }

  var endStyle = { reached: 'circle', miss: 'rectRot', failed: 'crossRot', unfinished: 'triangle' };
  function curves(grid, b, id) {
    b.curves.forEach(function (c, ci) {
      var sets = c.trials.map(function (t) {
        var pts = t.curve.map(function (q) { return { x: q[0], y: q[1] }; });
        var sub = b.submissions[t.submission];
        var last = pts.length - 1;
        return { label: sub + ' s' + t.study + ' t' + t.trial + ' (' + t.end + ')', data: pts,
                 borderColor: t.end === 'failed' ? '#c62828' : color(t.submission),
                 backgroundColor: t.end === 'failed' ? '#c62828' : color(t.submission),
                 borderDash: t.end === 'reached' ? [] : [6, 4], borderWidth: 2,
                 pointStyle: pts.map(function (_, i) { return i === last ? endStyle[t.end] : 'circle'; }),
                 pointRadius: pts.map(function (_, i) { return i === last ? 7 : 2; }) };
      });
      var n = sets.length;
      sets.push({ label: 'target ' + c.target, data: [{ x: 0, y: c.target }, { x: c.budget_s, y: c.target }],
                  borderColor: '#111', borderDash: [2, 3], borderWidth: 1.5, pointRadius: 0 });
      var failed = c.trials.filter(function (t) { return t.end === 'failed'; });
      figure(grid, id + '-curve-' + ci, 'Training curves: ' + c.workload, {
        type: 'line', data: { datasets: sets },
        options: { scales: { x: axis('accumulated submission time (s)', { type: 'linear', min: 0 }),
                             y: axis('validation ' + c.metric) } }
      }, n + 1, 'dashed: missed or failed; the last point of a trial marks how it ended (circle reached, ' +
        'diamond miss, x failed)' + (failed.length ? '. Failed: ' + failed.map(function (t) {
          return b.submissions[t.submission] + ' s' + t.study + ' t' + t.trial + ': ' + (t.reason || 'no reason recorded');
        }).join('; ') : ''));
    });
  }

  /* The hyperparameter that varies most over a submission's trials (the widest log range). */
  function searchAxis(trials) {
    var best = null, span = -1;
    var names = {};
    trials.forEach(function (t) { Object.keys(t.hparams).forEach(function (k) { names[k] = 1; }); });
    Object.keys(names).forEach(function (k) {
      var v = trials.map(function (t) { return t.hparams[k]; }).filter(function (x) { return x > 0; });
      if (!v.length) return;
      var r = Math.log(Math.max.apply(null, v) / Math.min.apply(null, v));
      if (r > span || (r === span && k === 'learning_rate')) { span = r; best = k; }
    });
    return best;
  }

  function search(grid, b, id) {
    b.submissions.forEach(function (sub, si) {
      var trials = [];
      b.curves.forEach(function (c) {
        c.trials.forEach(function (t) { if (t.submission === si) trials.push({ t: t, c: c }); });
      });
      var name = searchAxis(trials.map(function (x) { return x.t; }));
      if (!name) return;
      var wls = [], sets = [];
      trials.forEach(function (x) { if (wls.indexOf(x.c.workload) < 0) wls.push(x.c.workload); });
      wls.forEach(function (w, wi) {
        sets.push({ label: w, pointRadius: 6, backgroundColor: color(wi + 2), data: trials.filter(function (x) {
          return x.c.workload === w && x.t.end === 'reached'; }).map(function (x) {
          return { x: x.t.hparams[name], y: x.t.time_to_target / x.c.budget_s }; }) });
      });
      var other = function (end, y) {
        return trials.filter(function (x) { return x.t.end === end; }).map(function (x) {
          return { x: x.t.hparams[name], y: y }; });
      };
      sets.push({ label: 'missed (drawn at 1.1)', data: other('miss', 1.1), pointStyle: 'rectRot',
                  pointRadius: 7, backgroundColor: '#b26a00' });
      sets.push({ label: 'failed (drawn at 1.2)', data: other('failed', 1.2), pointStyle: 'crossRot',
                  pointRadius: 8, borderWidth: 2.5, borderColor: '#c62828' });
      var xs = trials.map(function (x) { return x.t.hparams[name]; }).filter(function (v) { return v > 0; });
      var logx = xs.length > 1 && Math.max.apply(null, xs) / Math.min.apply(null, xs) > 10;
      figure(grid, id + '-search-' + si, 'Search: ' + sub + ', ' + name + ' against the result', {
        type: 'scatter', data: { datasets: sets },
        options: { scales: { x: axis(name, { type: logx ? 'logarithmic' : 'linear' }),
                             y: axis('time to target / budget', { min: 0, max: 1.3 }) } }
      }, wls.length + 2, trials.length + ' trials; every hyperparameter of each is in the table below');
      var keys = Object.keys(trials.reduce(function (a, x) { Object.keys(x.t.hparams).forEach(function (k) { a[k] = 1; }); return a; }, {}));
      var d = add(grid.parentNode, 'details');
      add(d, 'summary', null, sub + ': every trial\'s hyperparameters and result');
      table(d, ['workload', 'study', 'trial', 'result'].concat(keys), trials.map(function (x) {
        var res = x.t.end === 'reached' ? { text: fmt(x.t.time_to_target) + ' s', cls: 'reached' }
                                        : { text: x.t.end + (x.t.reason ? ': ' + x.t.reason : ''), cls: x.t.end };
        return [x.c.workload, x.t.study, x.t.trial, res].concat(keys.map(function (k) {
          var v = x.t.hparams[k]; return v === undefined || v === null ? '-' : Number(v).toPrecision(3); }));
      }));
    });
  }

  function benchmark(b, bi) {
    var id = 'benchmark-' + bi;
    var s = section(id, 'Benchmark ' + b.name, b.ruleset + ' tuning; ' + b.submissions.length +
                    ' submissions on ' + b.workloads.length + ' workloads.');
    scoreTable(s, b);
    add(s, 'h3', null, 'Performance profiles');
    profiles(s, b, id);
    add(s, 'h3', null, 'Time to target per workload');
    timeToTarget(add(s, 'div', 'grid'), b, id);
    add(s, 'h3', null, 'Training curves');
    curves(add(s, 'div', 'grid'), b, id);
    add(s, 'h3', null, 'The search');
    var wrap = add(s, 'div');
    search(add(wrap, 'div', 'grid'), b, id);
  }

  /* The configuration words that differ between a study's cells: its axes. */
  function cellLabels(configs) {
    var toks = configs.map(function (c) { return c.split(' '); });
    return toks.map(function (t) {
      var diff = t.filter(function (w, i) { return toks.some(function (o) { return o[i] !== w; }); });
      return diff.length ? diff.join(' ').replace(/hparams=\{[^}]*\}/, function (h) { return h.length > 40 ? 'hparams(' + h.length + ')' : h; }) : 'all';
    });
  }

  function studies(list) {
    var s = section('studies', 'Studies', 'Each study\'s runs from the store, grouped by cell (the ' +
      'configuration without its seeds): the validation metric of every run and the median per cell. ' +
      'The store keeps runs, not the study\'s file: the verdict (reproduced, not reproduced, ' +
      'inconclusive) is what `trainbench study NAME --db FILE` prints from these same runs.');
    var grid = add(s, 'div', 'grid');
    list.forEach(function (st, i) {
      var configs = [];
      st.runs.forEach(function (r) { if (configs.indexOf(r.config) < 0) configs.push(r.config); });
      var labels = cellLabels(configs);
      var runs = st.runs.filter(function (r) { return !r.diverged && r.validation_metric !== null; });
      var med = configs.map(function (c) {
        var v = runs.filter(function (r) { return r.config === c; }).map(function (r) { return r.validation_metric; }).sort(function (a, b) { return a - b; });
        return v.length ? (v[(v.length - 1) >> 1] + v[v.length >> 1]) / 2 : null;
      });
      var lost = st.runs.length - runs.length;
      figure(grid, 'study-' + i, 'Study ' + st.study, {
        type: 'bar', data: { labels: labels, datasets: [
          { type: 'bar', label: 'median per cell', data: med, backgroundColor: '#2563eb44', borderColor: '#2563eb', borderWidth: 1 },
          { type: 'scatter', label: 'each run', backgroundColor: '#111', pointRadius: 4, data: runs.map(function (r) {
            return { x: labels[configs.indexOf(r.config)], y: r.validation_metric }; }) }] },
        options: { scales: { x: { type: 'category', labels: labels }, y: axis('validation metric') } }
      }, 2, st.runs.length + ' runs in ' + configs.length + ' cells' + (lost ? '; ' + lost + ' diverged (not drawn)' : ''));
    });
  }

  function hardware(hw) {
    var s = section('hardware', 'Hardware', 'The hardware suite\'s runs (docs/HARDWARE.md): examples/s and ' +
      'the ratio to the reference machine per workload and configuration in the latest run, the score ' +
      'with its interval, and every run\'s score per machine.');
    var last = Math.max.apply(null, hw.results.map(function (r) { return r.run; }));
    var rows = hw.results.filter(function (r) { return r.run === last; });
    var wls = [], cfgs = [];
    rows.forEach(function (r) {
      if (wls.indexOf(r.workload) < 0) wls.push(r.workload);
      if (cfgs.indexOf(r.config) < 0) cfgs.push(r.config);
    });
    var by = function (field) {
      return cfgs.map(function (c, ci) {
        return { label: c, backgroundColor: color(ci), data: wls.map(function (w) {
          var r = rows.filter(function (x) { return x.workload === w && x.config === c; })[0];
          return r && !r.failed ? r[field] : null; }) };
      });
    };
    var grid = add(s, 'div', 'grid');
    var m = rows.length ? rows[0].machine : '';
    figure(grid, 'hw-throughput', 'Examples/s, run ' + last + ' (' + m + ')', { type: 'bar',
      data: { labels: wls, datasets: by('examples_per_s') },
      options: { scales: { y: axis('examples/s', { type: 'logarithmic' }) } } }, cfgs.length);
    figure(grid, 'hw-ratio', 'Ratio to the reference machine, run ' + last, { type: 'bar',
      data: { labels: wls, datasets: by('ratio') },
      options: { scales: { y: axis('examples/s / reference', { min: 0 }) } } }, cfgs.length,
      rows.filter(function (r) { return r.failed; }).map(function (r) { return 'failed: ' + r.workload + ' (' + r.config + '): ' + r.reason; }).join('; ') || null);
    var sc = hw.scores.filter(function (x) { return x.run === last; });
    figure(grid, 'hw-score', 'Score with its interval, run ' + last, { type: 'bar',
      data: { labels: sc.map(function (x) { return x.config; }), datasets: [
        { type: 'bar', label: 'interval', data: sc.map(function (x) { return x.low === null ? null : [x.low, x.high]; }),
          backgroundColor: '#2563eb33', borderColor: '#2563eb', borderWidth: 1, barPercentage: 0.4 },
        { type: 'scatter', label: 'score', data: sc.map(function (x) { return { x: x.config, y: x.score }; }),
          backgroundColor: '#111', pointRadius: 6 }] },
      options: { scales: { x: { type: 'category', labels: sc.map(function (x) { return x.config; }) },
                           y: axis('score (geometric mean of ratios)', { min: 0 }) } } }, 2,
      sc.length ? Math.round(100 * sc[0].level) + '% intervals' : null);
    var keys = [];
    hw.scores.forEach(function (x) { var k = x.machine + ' | ' + x.config; if (keys.indexOf(k) < 0) keys.push(k); });
    var runs = [];
    hw.scores.forEach(function (x) { if (runs.indexOf(x.run) < 0) runs.push(x.run); });
    figure(grid, 'hw-history', 'History: every run\'s score per machine and configuration', { type: 'line',
      data: { labels: runs.map(function (r) { return 'run ' + r; }), datasets: keys.map(function (k, ki) {
        return { label: k, borderColor: color(ki), backgroundColor: color(ki), spanGaps: true, data: runs.map(function (r) {
          var x = hw.scores.filter(function (y) { return y.run === r && y.machine + ' | ' + y.config === k; })[0];
          return x ? x.score : null; }) }; }) },
      options: { scales: { y: axis('score', { min: 0 }) } } }, keys.length);
  }

  var head = add(root, 'header');
  add(head, 'h1', null, 'trainbench report');
  add(head, 'p', null, data.store + ' · made ' + data.generated + ' · trainbench ' + data.code_version);
  var nav = add(head, 'nav');
  try {
    data.benchmarks.forEach(benchmark);
    if (data.studies) studies(data.studies);
    if (data.hardware) hardware(data.hardware);
  } catch (e) {
    checks.errors.push(String(e && e.stack || e));
  }
  checks.sections.forEach(function (id) {
    var a = add(nav, 'a', null, document.getElementById(id).querySelector('h2').textContent);
    a.href = '#' + id;
  });
  charts.forEach(function (c) {
    c.chart.draw();
    var ctx = c.canvas.getContext('2d');
    var px = ctx.getImageData(0, 0, c.canvas.width, c.canvas.height).data, ink = 0;
    for (var i = 3; i < px.length; i += 4) if (px[i]) ink++;
    var points = c.chart.data.datasets.reduce(function (a, d) { return a + d.data.filter(function (v) { return v !== null; }).length; }, 0);
    checks.charts.push({ id: c.id, expected: c.expected, series: c.chart.data.datasets.length,
                         points: points, ink: ink, width: c.canvas.width, height: c.canvas.height });
  });
  /* #only=ID shows that section alone (the test's screenshots, one per section) */
  var only = /^#only=(.+)$/.exec(location.hash);
  checks.sections = checks.sections.map(function (id) {
    var sec = document.getElementById(id);
    if (only && only[1] !== id) sec.style.display = 'none';
    return { id: id, height: sec.offsetHeight };
  });
  if (only) nav.style.display = 'none';
  checks.height = document.documentElement.scrollHeight;
  checks.done = true;
  var out = add(document.body, 'pre');
  out.id = 'report-checks';
  out.hidden = true;
  out.textContent = JSON.stringify(checks);
})();

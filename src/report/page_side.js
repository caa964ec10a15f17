/* page_side.js: the report's page script, part 3 of 4 (see page.js): the studies' section and
 * the hardware section. */
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

/* page_bench.js: the report's page script, part 2 of 4 (see page.js): a benchmark's section:
 * the score table, performance profiles, time to target, training curves and the search. */
  /* A cell of the score table: the time and ratio where reached, else what happened. */
  function cellText(c, unit) {
    unit = unit || ' s';
    var n = ' (' + c.studies_reached + '/' + c.studies + ' studies';
    if (c.trials_failed) n += ', ' + c.trials_failed + ' failed';
    if (c.trials_unfinished) n += ', ' + c.trials_unfinished + ' unfinished';
    n += ')';
    if (c.state === 'reached') return { text: fmt(c.time) + unit + ', r = ' + fmt(c.ratio, 2) + n, cls: 'reached' };
    if (c.state === 'disqualified') return { text: fmt(c.time) + unit + ', voided by the variant rule' + n, cls: 'disqualified' };
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

  /* The score table again in the reference and steps time bases (docs/TIME_TO_RESULT.md). */
  function basisTables(s, b) {
    (b.bases || []).forEach(function (x) {
      add(s, 'h3', null, 'Score table in ' + (x.basis === 'steps' ? 'steps' : 'reference time'));
      if (x.missing) { add(s, 'p', 'note', x.missing); return; }
      var unit = x.basis === 'steps' ? ' steps' : ' s';
      add(s, 'p', 'note', x.basis === 'steps'
        ? 'Time to target counted in steps: the steps at the eval that reached the target.'
        : 'Time to target in reference time: the steps at the target priced at the workload\'s ' +
          'reference step time, the median of the store\'s calibration windows of it (' +
          Object.keys(x.reference_step_s).map(function (w) {
            return w + ' ' + fmt(1e3 * x.reference_step_s[w], 2) + ' ms'; }).join(', ') + ').');
      var head = ['submission'].concat(b.workloads.map(function (w) { return w.name; }), ['score', 'speedup']);
      table(s, head, x.table.map(function (r) {
        return [r.submission].concat(r.cells.map(function (c) { return cellText(c, unit); }),
          [{ text: fmt(r.score, 3), cls: 'num' },
           r.speedup === null ? { text: 'none reached', cls: 'miss' } : { text: fmt(r.speedup, 2) + 'x', cls: 'num' }]);
      }));
    });
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
            pointStyle: 'crossRot', borderColor: failedColor, borderWidth: 2.5, pointRadius: 8 }] },
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
                 borderColor: t.end === 'failed' ? failedColor : color(t.submission),
                 backgroundColor: t.end === 'failed' ? failedColor : color(t.submission),
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

  /* The hyperparameter the search chart shows: the learning rate where the trials have one
   * that varies (what matters most for most optimizers), else the one with the widest log
   * range over the submission's trials. */
  function searchAxis(trials) {
    var best = null, span = 0, names = {};
    trials.forEach(function (t) { Object.keys(t.hparams).forEach(function (k) { names[k] = 1; }); });
    Object.keys(names).forEach(function (k) {
      var v = trials.map(function (t) { return t.hparams[k]; }).filter(function (x) { return x > 0; });
      if (!v.length) return;
      var r = Math.log(Math.max.apply(null, v) / Math.min.apply(null, v));
      if (k === 'learning_rate' && r > 0) r = Infinity;
      if (best === null || r > span) { span = r; best = k; }
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
                  pointRadius: 7, backgroundColor: missColor });
      sets.push({ label: 'failed (drawn at 1.2)', data: other('failed', 1.2), pointStyle: 'crossRot',
                  pointRadius: 8, borderWidth: 2.5, borderColor: failedColor });
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
        if (x.t.contended) res.text += ' ~ contended: ' + x.t.contention;
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
    basisTables(s, b);
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
